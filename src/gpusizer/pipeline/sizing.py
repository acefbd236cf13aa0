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
from ..memory.items import MemoryEstimate, Note
from ..model.config_only import ConfigOnlyFacts
from ..sheet import Sheet
from .inputs import SheetInputs, load_sheet_inputs

if TYPE_CHECKING:
    from ..simulate.engine import SimulationResult

__all__ = ["run_estimate", "estimate", "run_simulate", "simulate", "SimulatedFallback",
           "FALLBACK_NOTE", "refuse_without_arithmetic"]

FALLBACK_NOTE = ("no arithmetic for model_type {model_type!r} (gpusizer has no family module "
                 "for it): these figures are simulated, transformers' own {model_class} run on "
                 "fake tensors (gpusizer simulate); items of provenance 'simulated', the "
                 "non-PyTorch items by estimate's own rules")
"""The note of an ``estimate`` / ``plan`` that fell back to the simulation."""


def refuse_without_arithmetic(config_only: ConfigOnlyFacts | None, command: str) -> None:
    """``fit`` and ``alternatives`` search or re-estimate many changed sheets by arithmetic,
    which a model_type no family counts does not have (one simulation per changed sheet is
    not what they are for).

    Raises:
        SimulationError: ``config_only`` is set (exit 2: the input asks what the command
            cannot answer; ``plan``, ``estimate`` and ``simulate`` can).
    """
    if config_only is not None:
        from ..simulate.errors import SimulationError
        raise SimulationError(
            f"{command} re-estimates changed sheets by arithmetic, and no gpusizer family counts "
            f"model_type {config_only.model_type!r}: run gpusizer estimate or plan (simulated), "
            "or gpusizer simulate on each changed sheet", field="model_type",
            value=config_only.model_type)


class SimulatedFallback:
    """The memory of a model_type no family counts, simulated once per compute capability.

    ``estimate`` and ``plan`` call :meth:`memory` per card: the simulation runs the first time
    a compute capability (or no card) is asked, and is reused for every later card of the same
    capability (the weight plan's card rules and the kernel choice depend on the capability
    only); each card gets the result under its own name.

    Raises (from :meth:`memory`):
        SimulateExtraMissing: torch / transformers / peft are not installed (one line naming
            ``pip install "gpusizer[simulate]"``).
        SimulationError, UnsupportedBySimulation: what the simulation cannot run.
    """

    def __init__(self, sheet: Sheet, config_only: ConfigOnlyFacts, base_dir: Path | None) -> None:
        self.sheet, self.config_only, self.base_dir = sheet, config_only, base_dir
        self._by_capability: dict[tuple | None, MemoryEstimate] = {}

    def memory(self, card: Card | None) -> MemoryEstimate:
        """The simulated memory on ``card`` (None: no card), with the fallback note first."""
        from dataclasses import replace
        cc = card.compute_capability.value if card is not None else None
        key = None if card is None else (tuple(cc) if cc else ("no capability", card.name))
        if key not in self._by_capability:
            self._by_capability[key] = self._simulate(card)
        mem = self._by_capability[key]
        name = card.name if card is not None else None
        return mem if mem.card == name else replace(mem, card=name)

    def _simulate(self, card: Card | None) -> MemoryEstimate:
        from dataclasses import replace

        from ..simulate import require_extra
        mt = self.config_only.model_type
        require_extra(f"no arithmetic for model_type {mt!r} (gpusizer has no family module for "
                      "it); gpusizer can simulate it with transformers' own code")
        from ..simulate.engine import simulate_memory
        r = simulate_memory(self.sheet, self.config_only, card=card, base_dir=self.base_dir)
        note = Note("no_arithmetic", FALLBACK_NOTE.format(model_type=mt,
                                                          model_class=r.model_class))
        rest = tuple(n for n in r.memory.notes if n.code != "no_arithmetic")
        return replace(r.memory, notes=(note, *rest))



def run_estimate(sheet: Sheet, *, card: Card | None = None,
                 base_dir: Path | None = None) -> EstimateResult:
    """:func:`load_sheet_inputs`, then :func:`estimate` (``gpusizer estimate``)."""
    return estimate(load_sheet_inputs(sheet, base_dir=base_dir), card=card)


def estimate(inputs: SheetInputs, *, card: Card | None = None) -> EstimateResult:
    """Estimate memory (and, with a card, the fit against it); reads no file, except for a
    model_type no family knows (``inputs.config_only``): its memory is simulated
    (:class:`SimulatedFallback`), its items ``simulated``, said in a note.

    Raises:
        SheetError: the sheet asks what the model or the card cannot do (a length beyond the
            context window, a format the card lacks).
        SimulateExtraMissing: a model_type no family knows, without the simulate extra.
    """
    sheet, facts = inputs.sheet, inputs.facts
    if inputs.config_only is not None:
        est = SimulatedFallback(sheet, inputs.config_only, inputs.base_dir).memory(card)
    else:
        est = estimate_memory(sheet, facts, card=card)
    shown = facts or inputs.config_only  # what the report's model block describes
    if card is None:
        return EstimateResult(sheet, shown, est, None)
    judgement = judge_on_card(est, card, sheet.margin)
    return EstimateResult(sheet, shown, est, card, judged_memory(judgement, card), judgement)


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
    return simulate_memory(inputs.sheet, inputs.facts or inputs.config_only, card=card,
                           base_dir=inputs.base_dir)
