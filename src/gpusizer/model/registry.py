"""The bundled registry: popular models resolvable offline, one JSON file per model.

Each file under ``gpusizer/data/registry/`` holds the config.json keys the sizing reads (Hugging
Face spelling, re-typed, not a copy of the file), the public source and revision they describe,
the keys of the original config no family reads, and the stored bytes where a source gave them.
Entries go through the same family code as a real config.json (:func:`facts_from_config`).

File format (all keys required; ``aliases``, ``stored_bytes``, ``stored_bytes_source`` may be
empty/null)::

    {"id": "org/name", "aliases": ["org/other-name"], "revision": "main", "seen": "2026-11-30",
     "source": "https://huggingface.co/org/name/blob/main/config.json",
     "read_from": "where the keys were read (a mirror at a commit, or the Hub)",
     "config": {"model_type": "llama", "hidden_size": 4096, "...": "..."},
     "unrecognised_keys": [], "stored_bytes": 16060522496, "stored_bytes_source": "..."}
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib.resources import files
from importlib.resources.abc import Traversable

from ..errors import ModelError
from .config import facts_from_config
from .facts import ModelFacts

__all__ = ["RegistryEntry", "registry_entries", "find_entry", "facts_from_entry",
           "registry_fingerprint"]

_KEYS = {"id", "aliases", "revision", "seen", "source", "read_from", "config",
         "unrecognised_keys", "stored_bytes", "stored_bytes_source"}


@dataclass(frozen=True)
class RegistryEntry:
    """One registry file, validated. Attributes follow the file format in the module docstring."""

    model_id: str
    aliases: tuple[str, ...]
    revision: str
    seen: str
    source: str
    read_from: str
    config: dict = field(hash=False, compare=False)
    unrecognised_keys: tuple[str, ...]
    stored_bytes: int | None
    stored_bytes_source: str | None
    file: str

    @property
    def ids(self) -> tuple[str, ...]:
        """The main id and its aliases."""
        return (self.model_id, *self.aliases)


def _directory() -> Traversable:
    return files("gpusizer").joinpath("data", "registry")


def _entry(name: str, text: str) -> RegistryEntry:
    where = f"gpusizer/data/registry/{name}"
    try:
        d = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelError(f"not valid JSON: {exc}", file=where) from exc
    if not isinstance(d, dict) or set(d) != _KEYS:
        got = sorted(d) if isinstance(d, dict) else type(d).__name__
        raise ModelError(f"expected exactly the keys {sorted(_KEYS)}, got {got}", file=where)
    if not isinstance(d["config"], dict) or not isinstance(d["id"], str):
        raise ModelError("expected a string id and a JSON object config", file=where)
    stored = d["stored_bytes"]
    if stored is not None and (isinstance(stored, bool) or not isinstance(stored, int)):
        raise ModelError("expected an integer or null", field="stored_bytes", value=stored,
                         file=where)
    return RegistryEntry(
        model_id=d["id"], aliases=tuple(d["aliases"]), revision=str(d["revision"]),
        seen=str(d["seen"]), source=str(d["source"]), read_from=str(d["read_from"]),
        config=d["config"], unrecognised_keys=tuple(d["unrecognised_keys"]),
        stored_bytes=stored, stored_bytes_source=d["stored_bytes_source"], file=where)


@lru_cache(maxsize=1)
def registry_entries() -> tuple[RegistryEntry, ...]:
    """Every bundled entry, sorted by file name.

    Raises:
        ModelError: a malformed file, or an id claimed by two entries.
    """
    entries = tuple(_entry(p.name, p.read_text(encoding="utf-8"))
                    for p in sorted(_directory().iterdir(), key=lambda p: p.name)
                    if p.name.endswith(".json"))
    seen: dict[str, str] = {}
    for e in entries:
        for model_id in e.ids:
            key = model_id.lower()
            if key in seen:
                raise ModelError(f"id {model_id!r} is also claimed by {seen[key]}", file=e.file)
            seen[key] = e.file
    return entries


def find_entry(model_id: str) -> RegistryEntry | None:
    """The entry whose id or alias equals ``model_id`` (case-insensitive, as Hub ids), or None."""
    key = model_id.lower()
    return next((e for e in registry_entries() if key in (i.lower() for i in e.ids)), None)


def facts_from_entry(entry: RegistryEntry, *, model_id: str | None = None) -> ModelFacts:
    """ModelFacts of a registry entry, through the same family code as a real config.json.

    Args:
        entry: the registry entry.
        model_id: the id the user asked for (an alias keeps its own spelling); default the
            entry's id.

    Raises:
        ModelError / UnknownArchitectureError: the entry's config is invalid (a packaging bug).
    """
    asked = model_id or entry.model_id
    alias = "" if asked == entry.model_id else f" (alias of {entry.model_id})"
    detail = (f"bundled registry {entry.file}{alias}: {entry.source} @ {entry.revision}, seen "
              f"{entry.seen}; read from {entry.read_from}")
    facts = facts_from_config(entry.config, model_id=asked, revision=entry.revision,
                              source="registry", source_detail=detail, file=entry.file)
    return replace(facts, unrecognised_keys=entry.unrecognised_keys,
                   stored_bytes=entry.stored_bytes,
                   stored_bytes_source=entry.stored_bytes_source)


def registry_fingerprint() -> str:
    """``sha256:<hex>`` over the registry files' names and bytes, for the JSON output."""
    digest = hashlib.sha256()
    for p in sorted(_directory().iterdir(), key=lambda p: p.name):
        if p.name.endswith(".json"):
            digest.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return f"sha256:{digest.hexdigest()}"
