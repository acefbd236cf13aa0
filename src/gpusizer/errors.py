"""Named errors. Library code raises these; only the CLI prints them and picks exit codes.

Every error says which field (or file) is wrong, the value it got, and what was expected, so a
user can fix the input without reading the code.
"""

from __future__ import annotations

__all__ = [
    "GpusizerError",
    "SheetError",
    "ModelError",
    "UnknownArchitectureError",
    "CatalogError",
    "UnknownCardError",
    "EvidenceError",
    "HubError",
    "ModelNotFoundError",
    "MeasureError",
    "MeasureExtraMissingError",
    "MeasureUnsupportedError",
]


class GpusizerError(Exception):
    """Base of every gpusizer error.

    Args:
        message: what is wrong and what to do.
        field: dotted path of the offending field (``inference.concurrency``), if any.
        value: the offending value, if any.
        file: the file the value came from, if any.
    """

    exit_code = 1

    def __init__(self, message: str, *, field: str | None = None, value: object = None,
                 file: str | None = None) -> None:
        self.field = field
        self.value = value
        self.file = file
        self.reason = message
        prefix = ""
        if file:
            prefix += f"{file}: "
        if field:
            prefix += f"{field}: "
        super().__init__(prefix + message)


class SheetError(GpusizerError, ValueError):
    """The workload sheet is invalid (bad key, value, unit or dimension)."""

    exit_code = 2


class ModelError(GpusizerError, ValueError):
    """A model's config.json is missing a field the sizing needs, or is inconsistent."""

    exit_code = 2


class UnknownArchitectureError(ModelError):
    """The config's ``model_type`` has no family module: its parameters cannot be counted."""


class CatalogError(GpusizerError, ValueError):
    """A catalog file (offers) or the card table is invalid."""

    exit_code = 2


class UnknownCardError(CatalogError, LookupError):
    """A ``--card`` name matches no canonical card or alias."""


class EvidenceError(GpusizerError, ValueError):
    """An evidence file is malformed."""

    exit_code = 2


class HubError(GpusizerError, RuntimeError):
    """The Hugging Face Hub could not answer (offline, gated, not found)."""


class ModelNotFoundError(HubError, LookupError):
    """A ``model.id`` that cannot be resolved: not in the registry while offline, or unknown to
    the Hub (wrong id or revision). An input error: fix the id or pass ``model.path``."""

    exit_code = 2


class MeasureError(GpusizerError, RuntimeError):
    """``gpusizer measure`` could not run the ladder (the harness itself failed, not the
    workload: an out-of-memory of the workload is recorded as evidence, never raised)."""


class MeasureExtraMissingError(MeasureError, ImportError):
    """The ``measure`` extra (torch, transformers, peft, nvidia-ml-py) is not installed:
    ``pip install gpusizer[measure]``."""


class MeasureUnsupportedError(MeasureError, ValueError):
    """The sheet asks for something this harness cannot run on this machine (a bitsandbytes
    format without CUDA, a placement it does not implement, a checkpoint without safetensors).
    An input problem for this machine: exit 2."""

    exit_code = 2
