"""The bundled registry: popular models resolvable offline, one JSON file per model.

Each file under ``gpusizer/data/registry/`` holds the model's whole config.json (re-typed from a
public copy, named in ``read_from``), so ``estimate`` and ``simulate`` both work offline; the
public source and revision it describes; the Hub commit where a public source states it; and the
stored bytes where a source gave them. Entries go through the same family code as a real
config.json (:func:`facts_from_config`). ``config_complete`` is false only where no public copy
of the whole file was found (the published keys are kept, transformers' defaults fill the rest).

File format (all keys required; ``aliases`` may be empty, ``commit``, ``commit_source``,
``stored_bytes`` and ``stored_bytes_source`` null)::

    {"id": "org/name", "aliases": ["org/other-name"], "revision": "main",
     "commit": "40-hex sha or null", "commit_source": "where that sha is stated, or null",
     "seen": "2026-12-01", "source": "https://huggingface.co/org/name/blob/main/config.json",
     "read_from": "where the file was read (a mirror at a commit, an issue)",
     "config": {"model_type": "llama", "hidden_size": 4096, "...": "..."},
     "config_complete": true, "stored_bytes": 16060522496, "stored_bytes_source": "..."}
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib.resources import files
from importlib.resources.abc import Traversable

from ..errors import ModelError
from .config import facts_from_config
from .facts import ModelFacts

__all__ = ["RegistryEntry", "registry_entries", "find_entry", "close_matches", "revision_note",
           "facts_from_entry", "registry_fingerprint", "registry_listing"]

_KEYS = {"id", "aliases", "revision", "commit", "commit_source", "seen", "source", "read_from",
         "config", "config_complete", "stored_bytes", "stored_bytes_source"}
_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class RegistryEntry:
    """One registry file, validated. Attributes follow the file format in the module docstring."""

    model_id: str
    aliases: tuple[str, ...]
    revision: str
    seen: str
    source: str
    read_from: str
    raw_config: dict = field(hash=False, compare=False, repr=False)
    config_complete: bool
    commit: str | None
    commit_source: str | None
    stored_bytes: int | None
    stored_bytes_source: str | None
    file: str

    @property
    def ids(self) -> tuple[str, ...]:
        """The main id and its aliases."""
        return (self.model_id, *self.aliases)

    @property
    def config(self) -> dict:
        """A fresh deep copy of the entry's config.json: transformers edits nested values in
        place (``AutoConfig.for_model`` standardises ``rope_scaling``), and the entries are
        cached for the process."""
        return copy.deepcopy(self.raw_config)


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
    commit = d["commit"]
    if commit is not None and not (isinstance(commit, str) and _SHA.fullmatch(commit)
                                   and isinstance(d["commit_source"], str)):
        raise ModelError("expected a 40-hex commit sha with its commit_source, or null",
                         field="commit", value=commit, file=where)
    if not isinstance(d["config_complete"], bool):
        raise ModelError("expected true or false", field="config_complete",
                         value=d["config_complete"], file=where)
    return RegistryEntry(
        model_id=d["id"], aliases=tuple(d["aliases"]), revision=str(d["revision"]),
        seen=str(d["seen"]), source=str(d["source"]), read_from=str(d["read_from"]),
        raw_config=d["config"], config_complete=d["config_complete"], commit=commit,
        commit_source=d["commit_source"], stored_bytes=stored,
        stored_bytes_source=d["stored_bytes_source"], file=where)


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


def close_matches(model_id: str, n: int = 3) -> list[str]:
    """Up to ``n`` registry ids (and aliases) closest to ``model_id``, best first
    (``difflib.get_close_matches`` on lower-cased ids, cutoff 0.6, then on the name after the
    organisation, so ``Qwen2.5-7B-instruct`` finds ``Qwen/Qwen2.5-7B-Instruct``)."""
    ids = [i for e in registry_entries() for i in e.ids]
    by_key = {i.lower(): i for i in ids}
    found = difflib.get_close_matches(model_id.lower(), list(by_key), n=n)
    if len(found) < n:
        names = {i.lower().split("/", 1)[-1]: i.lower() for i in ids}
        name = model_id.lower().split("/", 1)[-1]
        found += [names[m] for m in difflib.get_close_matches(name, list(names), n=n)
                  if names[m] not in found]
    return [by_key[k] for k in found[:n]]


def revision_note(entry: RegistryEntry, revision: str | None) -> str | None:
    """What a sheet's ``model.revision`` means for an entry, or None when it asks for the
    entry's own revision (``main`` or unset).

    A pinned revision is never refused and never silently matched: it resolves to the entry's
    config, and the note says whether the revision was checked (it equals the commit a public
    source states for the entry) or not (the entry describes ``main`` as seen on its date).
    """
    if revision in (None, "", entry.revision):
        return None
    if entry.commit is not None and revision.lower() == entry.commit:
        return (f"revision {revision} checked: it is the commit the entry's source states "
                f"({entry.commit_source})")
    known = f"; the only commit a source states for it is {entry.commit}" if entry.commit else ""
    return (f"revision {revision} NOT checked: the bundled entry describes {entry.revision} as "
            f"seen {entry.seen}, whose commit is not known to be {revision}{known}; its config "
            "is used. For that exact revision's config, go online once (it is cached) or set "
            "model.path")


def facts_from_entry(entry: RegistryEntry, *, model_id: str | None = None,
                     revision: str | None = None) -> ModelFacts:
    """ModelFacts of a registry entry, through the same family code as a real config.json.

    Args:
        entry: the registry entry.
        model_id: the id the user asked for (an alias keeps its own spelling); default the
            entry's id.
        revision: the revision the sheet asked for; a pinned one is recorded on the facts with
            :func:`revision_note` in ``source_detail``; default the entry's own.

    Raises:
        ModelError / UnknownArchitectureError: the entry's config is invalid (a packaging bug).
    """
    asked = model_id or entry.model_id
    alias = "" if asked == entry.model_id else f" (alias of {entry.model_id})"
    detail = (f"bundled registry {entry.file}{alias}: {entry.source} @ {entry.revision}, seen "
              f"{entry.seen}; read from {entry.read_from}")
    note = revision_note(entry, revision)
    if note:
        detail += f"; {note}"
    facts = facts_from_config(entry.config, model_id=asked,
                              revision=revision if note else entry.revision,
                              source="registry", source_detail=detail, file=entry.file)
    return replace(facts, stored_bytes=entry.stored_bytes,
                   stored_bytes_source=entry.stored_bytes_source)


def registry_fingerprint() -> str:
    """``sha256:<hex>`` over the registry files' names and bytes, for the JSON output."""
    digest = hashlib.sha256()
    for p in sorted(_directory().iterdir(), key=lambda p: p.name):
        if p.name.endswith(".json"):
            digest.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return f"sha256:{digest.hexdigest()}"


def registry_listing() -> list[dict]:
    """One row per entry for ``gpusizer models``, sorted by id (case-insensitive).

    Keys: ``id``, ``aliases``, ``revision``, ``commit`` (null unless a public source states it),
    ``model_type``, ``architecture`` (config.json ``architectures[0]``, or null),
    ``parameters`` (counted from the config by the family code, as ``estimate`` counts them;
    null when no family counts this ``model_type``), ``stored_bytes`` (null when no source gave
    them), ``config_complete``, ``source``, ``read_from``.
    """
    rows = []
    for e in sorted(registry_entries(), key=lambda e: e.model_id.lower()):
        try:
            parameters: int | None = facts_from_entry(e).architecture.total_parameters
        except ModelError:
            parameters = None
        architectures = e.config.get("architectures") or [None]
        rows.append({"id": e.model_id, "aliases": list(e.aliases), "revision": e.revision,
                     "commit": e.commit, "model_type": e.config.get("model_type"),
                     "architecture": architectures[0], "parameters": parameters,
                     "stored_bytes": e.stored_bytes, "config_complete": e.config_complete,
                     "source": e.source, "read_from": e.read_from})
    return rows
