"""Find a model's facts: local folder → bundled registry → Hugging Face Hub.

``huggingface_hub`` is imported inside :func:`resolve_model` only when the Hub is needed, so the
CLI starts fast and a registry or folder model never touches the network.
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
from .hub_access import hub_failures, hub_offline
from .registry import facts_from_entry, find_entry
from .safetensors_headers import hub_stored_tensors, local_stored_tensors

__all__ = ["resolve_model", "model_folder", "facts_for_sheet"]


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
    bundled registry by id (when ``revision`` is unset, ``main`` or the entry's own) → the Hub
    (``hf_hub_download(model_id, "config.json", revision=...)`` and the safetensors headers).

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
        ModelError: no id and no path, a missing/invalid config.json, or an invalid config.
        UnknownArchitectureError: the config's ``model_type`` has no family.
        HubError: the Hub is needed but offline (``HF_HUB_OFFLINE``) or cannot answer.
    """
    del trust_remote_code  # never used: remote code is not executed
    if path is not None:
        return _from_folder(Path(path), model_id=model_id, revision=revision)
    if not model_id:
        raise ModelError("give model.id or model.path", field="model")
    entry = find_entry(model_id)
    if entry is not None and revision in (None, "main", entry.revision):
        return facts_from_entry(entry, model_id=model_id)
    return _from_hub(model_id, revision, registry_revision=entry.revision if entry else None)


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


def _from_hub(model_id: str, revision: str | None, *, registry_revision: str | None) -> ModelFacts:
    if hub_offline():
        known = (f" The bundled registry knows it at revision {registry_revision}: ask for that "
                 "revision, or pass" if registry_revision else " Pass")
        raise ModelNotFoundError(f"{shown(model_id)} is not in the bundled registry at revision "
                       f"{revision or 'main'} and HF_HUB_OFFLINE is set.{known} model.path (a "
                       "folder with its config.json) instead", field="model.id", value=model_id)
    from huggingface_hub import hf_hub_download

    try:
        local = hf_hub_download(model_id, "config.json", revision=revision)
    except hub_failures() as exc:
        kind = (ModelNotFoundError if type(exc).__name__ in (
            "RepositoryNotFoundError", "RevisionNotFoundError", "EntryNotFoundError",
            "RemoteEntryNotFoundError", "GatedRepoError") else HubError)
        raise kind(f"cannot download config.json of {model_id}@{revision or 'main'}: {exc}. "
                       "Check the id and revision, log in for gated models (hf auth login), or "
                       "pass model.path", field="model.id", value=model_id) from exc
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
