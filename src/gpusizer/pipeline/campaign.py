"""``gpusizer plan`` on a campaign sheet (CONTRACT.md ``variants`` and ``campaign``, R15): the
base workload's full plan, and for every variant, which offers cover it.

Each variant is a whole sheet (``sheet.campaign_sheets``) judged by :func:`planning.plan` itself,
so no rule differs between a variant and the same sheet planned alone. To keep 10 000 offers ×
100 variants cheap (issue 17, point 4), a variant is judged once per class of offers that no
criterion but the budget tells apart (``decision.campaign.offer_class``: same card, lot, dates,
server, environment…), and the budget criterion, which reads only the campaign's keys, once per
offer in the base plan (``decision.campaign.SHARED_CRITERIA``). Only each class's coverage is
kept: memory grows with offers + variants × classes, never with offers × variants reason texts.
Estimates are made once per distinct card and variant (inside ``plan``). Reads no file.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

from ..decision.campaign import (SHARED_CRITERIA, VariantSummary, campaign_of, covers,
                                offer_class)
from ..decision.results import PlanResult
from ..errors import SheetError
from ..sheet import BASE_VARIANT, Sheet, campaign_sheets
from .inputs import PlanInputs, load_plan_inputs
from .planning import plan

__all__ = ["plan_campaign", "run_campaign", "variant_sheet", "classify_variant"]


def variant_sheet(sheet: Sheet, name: str) -> Sheet:
    """The whole sheet of the campaign's variant ``name`` (``base``: the sheet's own workload).

    Raises:
        SheetError: no variant of that name (field ``--variant``; the message lists them).
    """
    sheets = dict(campaign_sheets(sheet))
    if name not in sheets:
        raise SheetError("no variant of that name in the sheet: expected one of "
                         + ", ".join(sheets), field="--variant", value=name)
    return sheets[name]


def classify_variant(name: str, inputs: PlanInputs, reps: list[int], class_of: list[int],
                     shared_ok: list[bool], *, today: dt.date
                     ) -> tuple[VariantSummary, list[bool]]:
    """One variant judged on one representative offer per class.

    Args:
        name: the variant's name.
        inputs: the variant's inputs (its whole sheet; offers: every offer of the campaign).
        reps: per class, the index of its first offer in ``inputs.offers``.
        class_of: per offer of ``inputs.offers``, its class (an index into ``reps``).
        shared_ok: per offer, that no criterion of ``SHARED_CRITERIA`` excludes it (the base
            plan's states).
        today: the date schedules are checked from.

    Returns:
        The variant's summary and, per offer of ``inputs.offers``, whether it covers it.
    """
    result = plan(dataclasses.replace(inputs, offers=tuple(inputs.offers[i] for i in reps)),
                  today=today)
    # plan reorders its decisions; map them back by the offer's identity
    by_rep = {id(d.offer): covers(d, besides=SHARED_CRITERIA) for d in result.decisions}
    covered = [by_rep[id(inputs.offers[i])] for i in reps]
    est = result.estimate
    return (VariantSummary(name, result.sheet_sha256, est.peak_bytes, est.device_peak_bytes),
            [covered[k] and ok for k, ok in zip(class_of, shared_ok)])


def _named_ids(inputs: PlanInputs) -> frozenset[str]:
    """Offer ids that some evidence document's scope names (they stay a class of their own)."""
    return frozenset(d.scope.offer_id for d in inputs.evidence
                     if d.scope is not None and d.scope.offer_id is not None)


def plan_campaign(inputs: PlanInputs, *, today: dt.date | None = None,
                  simulate: bool = False) -> PlanResult:
    """The base workload's full plan with, for a sheet with variants, its ``campaign`` block.

    Args:
        inputs: the campaign sheet's inputs (the model, the offers and the evidence are shared
            by every variant: the model is the campaign's).
        today, simulate: as :func:`planning.plan` (``simulate`` applies to the base plan).

    Returns:
        The base plan (``sheet`` is the base workload, without variants), whose ``campaign`` is
        None without variants.

    Raises:
        SheetError, SimulateExtraMissing: as :func:`planning.plan`.
    """
    today = today or dt.date.today()
    sheets = campaign_sheets(inputs.sheet)
    base = plan(dataclasses.replace(inputs, sheet=sheets[0][1]), today=today, simulate=simulate)
    if len(sheets) == 1:
        return base
    named = _named_ids(inputs)
    classes: dict[tuple, int] = {}  # class key → class index
    reps: list[int] = []  # class index → its first offer's index
    class_of: list[int] = []  # offer index → class index
    for i, o in enumerate(inputs.offers):
        k = classes.setdefault(offer_class(o, named), len(classes))
        if k == len(reps):
            reps.append(i)
        class_of.append(k)
    summaries: list[VariantSummary] = []
    covered: list[tuple[str, list[bool]]] = []
    index = {id(o): i for i, o in enumerate(inputs.offers)}
    order = [index[id(d.offer)] for d in base.decisions]  # base plan's order → inputs' index
    shared_ok = [False] * len(inputs.offers)
    for d in base.decisions:
        shared_ok[index[id(d.offer)]] = all(d.criteria[k].state != "exclude"
                                            for k in SHARED_CRITERIA)
    for name, sheet in sheets:
        if name == BASE_VARIANT:  # the full plan already judged every offer
            est = base.estimate
            summaries.append(VariantSummary(name, base.sheet_sha256, est.peak_bytes,
                                            est.device_peak_bytes))
            covered.append((name, [covers(d) for d in base.decisions]))
            continue
        summary, flags = classify_variant(name, dataclasses.replace(inputs, sheet=sheet), reps,
                                          class_of, shared_ok, today=today)
        summaries.append(summary)
        covered.append((name, [flags[i] for i in order]))
    base.campaign = campaign_of(summaries, [d.offer for d in base.decisions],
                                [d.total_usd for d in base.decisions], covered)
    return base


def run_campaign(sheet: Sheet, *, catalogs: list[Path] | None = None,
                 evidence_dir: Path | None = None, today: dt.date | None = None,
                 base_dir: Path | None = None, simulate: bool = False,
                 variant: str | None = None) -> PlanResult:
    """:func:`load_plan_inputs`, then :func:`plan_campaign`; with ``variant``, that variant's
    own full plan (``gpusizer plan SHEET --variant NAME``).

    Raises:
        SheetError: an unknown variant name; and as ``planning.run_plan``.
    """
    if variant is not None:
        sheet = variant_sheet(sheet, variant)
    inputs = load_plan_inputs(
        sheet, catalogs=None if catalogs is None else [Path(c) for c in catalogs],
        evidence=None if evidence_dir is None else Path(evidence_dir), base_dir=base_dir)
    return plan_campaign(inputs, today=today, simulate=simulate)

