"""``gpusizer estimate`` and ``gpusizer simulate``: one sheet's memory, by arithmetic or on fake
tensors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..catalog.types import Card
from ..decision.criteria import judged_memory
from ..decision.results import EstimateResult
from ..memory.estimate import estimate_memory
from ..memory.fit_rule import judge_on_card
from ..sheet import Sheet
from .inputs import SheetInputs, load_sheet_inputs

if TYPE_CHECKING:
    from ..simulate.engine import SimulationResult

__all__ = ["run_estimate", "estimate", "run_simulate", "simulate"]


def run_estimate(sheet: Sheet, *, card: Card | None = None,
                 base_dir: Path | None = None) -> EstimateResult:
    """:func:`load_sheet_inputs`, then :func:`estimate` (``gpusizer estimate``)."""
    return estimate(load_sheet_inputs(sheet, base_dir=base_dir), card=card)


def estimate(inputs: SheetInputs, *, card: Card | None = None) -> EstimateResult:
    """Estimate memory (and, with a card, the fit against it); reads no file.

    Raises:
        SheetError: the sheet asks what the model or the card cannot do (a length beyond the
            context window, a format the card lacks).
    """
    sheet, facts = inputs.sheet, inputs.facts
    est = estimate_memory(sheet, facts, card=card)
    if card is None:
        return EstimateResult(sheet, facts, est, None)
    judgement = judge_on_card(est, card, sheet.margin)
    return EstimateResult(sheet, facts, est, card, judged_memory(judgement, card), judgement)


def run_simulate(sheet: Sheet, *, card: Card | None = None,
                 base_dir: Path | None = None) -> SimulationResult:
    """:func:`load_sheet_inputs`, then :func:`simulate` (``gpusizer simulate``)."""
    return simulate(load_sheet_inputs(sheet, base_dir=base_dir), card=card)


def simulate(inputs: SheetInputs, *, card: Card | None = None) -> SimulationResult:
    """Simulate the sheet's phases on fake tensors (the simulate extra): the model's own
    transformers code runs, from its config read under ``inputs.base_dir``.

    Returns a ``simulate.engine.SimulationResult``; torch is imported only here, lazily.

    Raises:
        SimulationError, UnsupportedBySimulation: what the simulation cannot run.
    """
    from ..simulate.engine import simulate_memory
    return simulate_memory(inputs.sheet, inputs.facts, card=card, base_dir=inputs.base_dir)
