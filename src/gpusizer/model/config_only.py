"""What gpusizer knows of a model no family counts: its config.json, nothing more.

A ``model_type`` without a family module (``model/families``) has no arithmetic: its parameters,
KV layout and working memory are not counted by gpusizer. ``simulate`` still runs it (the model
class transformers ships for it, on fake tensors), and ``estimate`` / ``plan`` fall back to that
simulation. What the weight plan needs (the stored dtype and format, the quantization config,
the stored bytes from safetensors headers) is read here from config.json, as for a known family
(``model.stored_format``), without counting a parameter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import HubError
from ..formats import QuantConfig, detect
from ..sheet import Sheet
from .safetensors_headers import hub_stored_tensors, local_stored_tensors
from .stored_format import stored_format

__all__ = ["ConfigOnlyFacts", "config_only_facts", "config_only_for_sheet"]


@dataclass(frozen=True, kw_only=True)
class ConfigOnlyFacts:
    """A model whose ``model_type`` no family knows: config.json's storage facts only.

    Carries the attributes :func:`memory.estimate.plan_weights` and ``sheet_quant_params`` read
    from a :class:`~gpusizer.model.facts.ModelFacts` (``stored_format``,
    ``quantization_config``, ``quant``), and no ``architecture``: the parameters are counted by
    the simulation, on the module tree transformers builds.

    Attributes:
        model_id: Hub id or folder path.
        revision: commit sha, tag or branch.
        source: ``path`` | ``hub``.
        source_detail: the config.json read, in words.
        model_type: config.json ``model_type``.
        config: config.json as read (a dict).
        stored_dtype, stored_format, quantization_config, stored_bytes, stored_bytes_source: as
            :class:`~gpusizer.model.facts.ModelFacts`.
    """

    model_id: str | None
    revision: str | None
    source: str
    source_detail: str
    model_type: str
    config: dict = field(hash=False, compare=False, repr=False)
    stored_dtype: str | None = None
    stored_format: str | None = None
    quantization_config: dict | None = field(default=None, hash=False, compare=False)
    stored_bytes: int | None = None
    stored_bytes_source: str | None = None
    quant: QuantConfig | None = field(init=False, default=None, hash=False, compare=False,
                                      repr=False)
    architecture: None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        parsed = detect(self.quantization_config) if self.quantization_config else None
        object.__setattr__(self, "quant", parsed)


def config_only_facts(config: dict, *, model_id: str | None, revision: str | None,
                      source: str, source_detail: str, folder: Path | None = None
                      ) -> ConfigOnlyFacts:
    """The storage facts of ``config`` (config.json), with the stored bytes from the
    safetensors headers of ``folder`` (``model.path``) or of the Hub repository
    (``huggingface_hub.get_safetensors_metadata``; not read when the Hub cannot answer).

    Raises:
        ModelError: ``quantization_config`` is not a JSON object.
    """
    dtype, fmt, _ = stored_format(config, file=source_detail)
    quant = config.get("quantization_config")
    if folder is not None:
        stored = local_stored_tensors(folder)
        missing = f"no safetensors files or index in {folder}"
    else:
        try:
            stored = hub_stored_tensors(model_id, revision) if model_id else None
            missing = "no model.id"
        except HubError as exc:
            stored, missing = None, f"not read: {exc}"
    return ConfigOnlyFacts(
        model_id=model_id, revision=revision, source=source, source_detail=source_detail,
        model_type=str(config.get("model_type")), config=config, stored_dtype=dtype,
        stored_format=fmt, quantization_config=quant if isinstance(quant, dict) else None,
        stored_bytes=stored.total_bytes if stored else None,
        stored_bytes_source=stored.source if stored else missing)


def config_only_for_sheet(sheet: Sheet, config: dict, where: str,
                          base_dir: Path | None) -> ConfigOnlyFacts:
    """:func:`config_only_facts` for the sheet's model: ``model.path`` (read from
    ``base_dir``) or ``model.id``; ``config`` is its config.json, read at ``where``.

    Raises:
        ModelError: as :func:`config_only_facts`.
    """
    from .resolve import model_folder
    m = sheet.model
    folder = model_folder(m.path, base_dir) if m.path is not None else None
    return config_only_facts(config, model_id=m.id or (str(folder) if folder else None),
                             revision=m.revision, source="path" if folder else "hub",
                             source_detail=where, folder=folder)
