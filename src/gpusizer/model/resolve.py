"""Find a model's facts (and its whole config.json): local folder → bundled registry → Hub.

``huggingface_hub`` is imported only when the Hub is needed, so the CLI starts fast and a
registry or folder model never touches the network. The Hub is tried once
(:func:`gpusizer.model.hub_access.hub_file`): an unreachable Hub fails at once (exit 1) with the
offline hint, a malformed id is refused before any request (exit 2, ``model.id``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..errors import HubError, ModelError, ModelNotFoundError, shown
from ..formats import side_files
from ..input_files import parse_json, read_input
from ..sheet import Sheet
from .config import facts_from_config
from .facts import ModelFacts
from .hub_access import hub_file, hub_offline, validate_model_id
from .registry import close_matches, facts_from_entry, find_entry, revision_note
from .safetensors_headers import hub_stored_tensors, local_stored_tensors

__all__ = ["resolve_model", "model_folder", "facts_for_sheet", "config_for_sheet"]


def model_folder(path: str | Path, base_dir: str | Path | None) -> Path:
    """The folder a sheet's ``model.path`` names: ``~`` expanded, and a relative path read from
    ``base_dir`` (the sheet's folder), so a sheet means the same wherever it is run from."""
    p = Path(path).expanduser()
    if not p.is_absolute() and base_dir is not None:
        p = Path(base_dir) / p
    return p


def resolve_model(*, model_id: str | None, revision: str | None, path: str | Path | None,
                  trust_remote_code: bool = False) -> ModelFacts:
    """Facts about the sheet's model.

    Order: ``path`` (its config.json and the side files a weight format's detector reads, such
    as ModelOpt's ``hf_quant_config.json``, plus safetensors headers or index) → the
    bundled registry by id (any revision: a pinned one other than the entry's is used with a
    note saying whether it was checked, :func:`~gpusizer.model.registry.revision_note`) → the
    Hub (:func:`~gpusizer.model.hub_access.hub_file` for config.json, one attempt, then the
    safetensors headers).

    Args:
        model_id: Hub id (``org/name``), or None with ``path``.
        revision: commit sha, tag or branch; None means ``main``.
        path: a folder holding config.json.
        trust_remote_code: accepted for parity with transformers; gpusizer never executes remote
            code, so it changes nothing (an unknown ``model_type`` stays an error).

    Returns:
        ModelFacts; ``stored_bytes`` is None (with the reason in ``stored_bytes_source``) when no
        header could be read.

    Raises:
        ModelError: no id and no path, a malformed id (huggingface_hub's ``validate_repo_id``
            rules), a missing/invalid config.json, or an invalid config.
        UnknownArchitectureError: the config's ``model_type`` has no family.
        ModelNotFoundError: an id neither in the registry nor on the Hub (or not cached while
            ``HF_HUB_OFFLINE`` is set); the message lists close registry ids.
        HubError: the Hub is needed but cannot be reached (one attempt).
    """
    del trust_remote_code  # never used: remote code is not executed
    if path is not None:
        return _from_folder(Path(path), model_id=model_id, revision=revision)
    if not model_id:
        raise ModelError("give model.id or model.path", field="model")
    entry = find_entry(model_id)
    if entry is not None:
        return facts_from_entry(entry, model_id=model_id, revision=revision)
    return _from_hub(model_id, revision)


def config_for_sheet(sheet: Sheet, *, base_dir: Path | None = None) -> tuple[dict, str]:
    """The sheet model's whole config.json as a dict, with where it was read (what ``simulate``
    builds the model from).

    Order as :func:`resolve_model`: ``model.path`` → the bundled registry (its entries keep the
    whole config.json, so this works offline; a pinned revision gets the entry's note) → the Hub
    (one attempt, then the Hub cache).

    Raises:
        ModelError: no id or path (a bare parameter count), a malformed id, an unreadable or
            invalid config.json.
        ModelNotFoundError: the id is neither in the registry nor on the Hub / in the cache.
        HubError: the Hub cannot be reached and config.json is not cached.
    """
    m = sheet.model
    if m.path is not None:
        file = model_folder(m.path, base_dir) / "config.json"
        if not file.is_file():
            raise ModelError("no config.json there; expected a folder holding the checkpoint's "
                             "config.json", field="model.path", value=str(file.parent))
        return _read_json(file), str(file)
    if not m.id:
        raise ModelError("give model.id or model.path", field="model")
    entry = find_entry(m.id)
    if entry is not None:
        notes = [n for n in (revision_note(entry, m.revision),) if n]
        if not entry.config_complete:
            notes.append("the entry holds the published keys only (not the whole config.json): "
                         "transformers' defaults fill the rest")
        where = f"bundled registry {entry.file} ({entry.source}; read from {entry.read_from})"
        return entry.config, "; ".join([where, *notes])
    local = _hub_config(m.id, m.revision)
    return _read_json(local), f"{m.id}@{m.revision} config.json ({local})"


def _hub_config(model_id: str, revision: str | None) -> Path:
    """config.json of an id the registry lacks, from the Hub (one attempt) or its cache.

    Raises:
        ModelError: a malformed id. ModelNotFoundError / HubError: see :func:`hub_file`.
    """
    validate_model_id(model_id)
    close = close_matches(model_id)
    hint = f"; close ids in the bundled registry: {', '.join(close)}" if close else ""
    if hub_offline():
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(model_id, "config.json", revision=revision)
        if isinstance(cached, str):
            return Path(cached)
        raise ModelNotFoundError(
            f"{shown(model_id)} is not in the bundled registry{hint}, and HF_HUB_OFFLINE is set "
            f"with no cached config.json for revision {revision or 'main'}: check the id, go "
            "online once (it is cached), or pass model.path (a folder with its config.json) "
            "instead", field="model.id", value=model_id)
    return hub_file(model_id, "config.json", revision, not_found_hint=hint)


def _from_folder(folder: Path, *, model_id: str | None, revision: str | None) -> ModelFacts:
    config_file = folder / "config.json"
    try:
        present = config_file.is_file()
    except (OSError, ValueError) as exc:  # a name over the filesystem's limit, a NUL byte
        raise ModelError(f"cannot read this folder: {getattr(exc, 'strerror', None) or exc}",
                         field="model.path", value=str(folder)) from None
    if not present:
        raise ModelError("no config.json in this folder; model.path must hold the checkpoint's "
                         "config.json", field="model.path", value=str(folder), file=str(folder))
    config = _read_json(config_file)
    # files next to config.json a format's detector reads (ModelOpt's hf_quant_config.json)
    side = {name: _read_json(folder / name) for name in side_files() if (folder / name).is_file()}
    facts = facts_from_config(config, model_id=model_id or str(folder), revision=revision,
                              source="path", source_detail=str(config_file),
                              file=str(config_file), side_files=side)
    stored = local_stored_tensors(folder)
    if stored is None:
        return replace(facts, stored_bytes_source=f"no safetensors files or index in {folder}")
    return replace(facts, stored_bytes=stored.total_bytes, stored_bytes_source=stored.source)


def _from_hub(model_id: str, revision: str | None) -> ModelFacts:
    local = _hub_config(model_id, revision)
    where = f"https://huggingface.co/{model_id}/blob/{revision or 'main'}/config.json"
    facts = facts_from_config(_read_json(Path(local)), model_id=model_id,
                              revision=revision or "main", source="hub", source_detail=where,
                              file=where)
    try:
        stored = hub_stored_tensors(model_id, revision)
    except HubError as exc:
        return replace(facts, stored_bytes_source=f"not read: {exc}")
    return replace(facts, stored_bytes=stored.total_bytes, stored_bytes_source=stored.source)


def _read_json(file: Path) -> dict:
    data = parse_json(read_input(file, "config.json", ModelError), "config.json", ModelError,
                      file=str(file))
    if not isinstance(data, dict):
        raise ModelError("expected a JSON object", file=str(file))
    return data


def facts_for_sheet(sheet: Sheet, *, base_dir: Path | None = None) -> ModelFacts | None:
    """The model's facts (None for a bare ``model.parameters`` count).

    A relative ``model.path`` is read relative to ``base_dir`` (the sheet's folder), so a sheet
    means the same wherever it is run from.

    Raises:
        ModelError, UnknownArchitectureError, HubError: see ``model.resolve``.
    """
    m = sheet.model
    if m.parameters is not None:
        return None
    path = None if m.path is None else str(model_folder(m.path, base_dir))
    return resolve_model(model_id=m.id, revision=m.revision, path=path,
                         trust_remote_code=m.trust_remote_code)
