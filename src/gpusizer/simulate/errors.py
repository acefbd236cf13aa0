"""Errors of the simulation (named, under ``GpusizerError``)."""

from __future__ import annotations

from ..errors import GpusizerError, SheetError

__all__ = ["SimulationError", "SimulateExtraMissing", "UnsupportedBySimulation"]


class SimulationError(SheetError):
    """The sheet asks for something the simulation cannot run (an input error: fix the input)."""


class UnsupportedBySimulation(SheetError):
    """A sheet value the simulation does not model yet; names the field and what it supports."""


class SimulateExtraMissing(GpusizerError, ImportError):
    """torch / transformers / peft are not installed: ``pip install gpusizer[simulate]``."""
