"""The entry points, stage by stage: sheet → model facts → memory → evidence → decision.

Each entry point has two parts. The input stage (``inputs``) reads the sheet, the model's facts,
the catalogs and the evidence. The computing part takes those values and reads no file of the
user's: ``sizing`` (estimate, simulate), ``planning`` (plan, alternatives), ``fitting`` (fit).
``run_*`` chain both for the CLI; ``gpusizer.api`` does the same for Python callers. ``measuring``
and ``quality`` run the measurement harness and the quality gate. No torch import anywhere on
this path but the simulation's, the measurement's and the quality run's (lazily).
"""

from __future__ import annotations

from ..decision.results import EstimateResult, PlanResult
from ..memory.checkpoint import checkpoint_bytes
from ..model.resolve import facts_for_sheet as resolve_facts
from ..sheet import required_dimensions
from .fitting import FitAnswer, fit, run_fit
from .inputs import (PlanInputs, SheetInputs, SheetSource, load_plan_inputs, load_sheet_inputs,
                     read_sheet)
from .measuring import measure
from .planning import alternatives, plan, run_alternatives, run_plan
from .quality import import_quality, lock_quality, run_quality
from .sizing import estimate, run_estimate, run_simulate, simulate
from .suggesting import card_table, cards, run_cards

__all__ = ["SheetSource", "read_sheet", "SheetInputs", "load_sheet_inputs", "PlanInputs",
           "load_plan_inputs", "EstimateResult", "run_estimate", "estimate", "run_simulate",
           "simulate", "PlanResult", "run_plan", "plan", "run_alternatives", "alternatives",
           "FitAnswer", "run_fit", "fit", "measure", "lock_quality", "run_quality",
           "import_quality", "resolve_facts", "required_dimensions", "checkpoint_bytes",
           "cards", "run_cards", "card_table"]
