"""``gpusizer plan`` and ``gpusizer alternatives``: every offer classified on the six criteria,
ranked, with what could invalidate the conclusion; then the single changes that would make an
offer fit."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

from ..catalog.cards import CardMatch
from ..catalog.types import Card, Offer
from ..decision.criteria import CRITERIA, OfferContext, budget, scope_mismatch
from ..decision.invalidators import invalidator_records
from ..decision.results import PlanResult
from ..decision.unknown_card import UnknownCardFit, unknown_card_fit
from ..decision.verdict import OfferDecision, rank_offers
from ..evidence import EvidenceSet, citation_key, select_evidence
from ..memory.checkpoint import checkpoint_bytes
from ..memory.estimate import estimate_memory
from ..memory.fit_rule import FitJudgement, judge_lot, judge_on_card
from ..memory.items import MemoryEstimate
from ..sheet import Sheet, quality_criteria, quality_sha256, required_dimensions, sheet_sha256
from .inputs import PlanInputs, load_plan_inputs
from .sizing import SimulatedFallback, refuse_without_arithmetic

if TYPE_CHECKING:
    from ..decision.alternatives import AlternativesResult
    from ..simulate.engine import SimulationResult

__all__ = ["run_plan", "plan", "run_alternatives", "alternatives"]


def _card_of(offer: Offer) -> tuple[Card | None, str | None, CardMatch]:
    from ..catalog.cards import resolve_offer_card
    match = resolve_offer_card(offer)
    return match.card, (None if match.card else match.reason), match


def run_plan(sheet: Sheet, *, catalogs: list[Path] | None = None, evidence_dir: Path | None = None,
             today: dt.date | None = None, base_dir: Path | None = None,
             simulate: bool = False) -> PlanResult:
    """:func:`load_plan_inputs` on catalog files and an evidence folder, then :func:`plan`
    (``gpusizer plan``).

    Args:
        sheet: the validated sheet.
        catalogs: catalog files (YAML, CSV, SkyPilot vms.csv); None → the bundled seed catalog.
        evidence_dir: a folder of evidence ``*.json``.
        today, simulate: as :func:`plan`.
        base_dir: the sheet's folder (a relative ``model.path`` is read from there).

    Raises:
        SheetError, ModelError, CatalogError, EvidenceError, HubError, SimulateExtraMissing.
    """
    inputs = load_plan_inputs(
        sheet, catalogs=None if catalogs is None else [Path(c) for c in catalogs],
        evidence=None if evidence_dir is None else Path(evidence_dir), base_dir=base_dir)
    return plan(inputs, today=today, simulate=simulate)


def plan(inputs: PlanInputs, *, today: dt.date | None = None,
         simulate: bool = False) -> PlanResult:
    """The main job: memory items and phases, every offer classified on six criteria, ranked.

    Reads no file (unless ``simulate``, or a model_type no family knows: the simulation runs
    the model's own code, once per distinct compute capability, reused across offers:
    ``sizing.SimulatedFallback``).

    Args:
        inputs: the sheet, its model's facts, the offers and the evidence documents.
        today: the date schedules are checked from (default: today).
        simulate: also simulate the sheet on fake tensors under each known card's rules (the
            simulate extra); the memory criterion quotes both figures and stays to_confirm.

    Raises:
        SheetError: the sheet asks what the model cannot do.
        SimulateExtraMissing: ``simulate`` (or a model_type no family knows) without torch,
            transformers and peft.
    """
    from ..catalog.offers import offer_total_usd
    today = today or dt.date.today()
    sheet, facts = inputs.sheet, inputs.facts
    # a model_type no family counts: simulated once per compute capability, reused per offer
    fallback = (SimulatedFallback(sheet, inputs.config_only, inputs.base_dir)
                if inputs.config_only is not None else None)
    est = fallback.memory(None) if fallback else estimate_memory(sheet, facts)
    model_facts = facts or inputs.config_only  # a family's facts, or config-only ones
    sha = sheet_sha256(sheet)
    days = sheet.budget.days if sheet.budget else None
    evidence = select_evidence(inputs.evidence, sheet_sha256=sha,
                               quality_sha256=quality_sha256(sheet),
                               quality_criteria=quality_criteria(sheet))
    if inputs.skipped_evidence:  # files of the evidence folder that are no evidence (a lock)
        evidence = EvidenceSet(evidence.docs, tuple(inputs.skipped_evidence) + evidence.ignored)
    ckpt, ckpt_src = checkpoint_bytes(sheet, model_facts)
    required = required_dimensions(sheet)
    per_card: dict[tuple[str, str | None], MemoryEstimate] = {}
    # the fit rule's answer per card and interconnect (its estimate's)
    fits: dict[tuple[str, str | None], FitJudgement] = {}
    unknown_fits: dict[tuple, UnknownCardFit | None] = {}
    simulations: dict[str, SimulationResult] = {}
    if simulate:
        from ..simulate import require_extra
        require_extra()
    decisions = []
    for offer in inputs.offers:
        card, note, match = _card_of(offer)
        card_est = None
        key = (offer.card, offer.catalog_memory_bytes, offer.canonical_card)
        if card is None and key not in unknown_fits:  # one judgement per distinct claim
            unknown_fits[key] = unknown_card_fit(est, offer, match, sheet.margin)
        unknown = None if card is not None else unknown_fits[key]
        if card is not None:
            # one estimate per card and interconnect (the NCCL buffers of a multi-GPU placement
            # follow the offer's link, memory.nccl); a model no family counts is simulated
            link = (card.name, offer.interconnect if sheet.placement.gpus > 1 else None)
            if link not in per_card:
                per_card[link] = (fallback.memory(card) if fallback else
                                  estimate_memory(sheet, facts, card=card, interconnect=link[1]))
                fits[link] = judge_on_card(per_card[link], card, sheet.margin)
            card_est = per_card[link]
            if simulate and card.name not in simulations:
                from ..simulate.engine import simulate_memory
                simulations[card.name] = simulate_memory(sheet, model_facts, card=card,
                                                         base_dir=inputs.base_dir)
        offer_days = offer.days if offer.days is not None else days
        total = offer_total_usd(offer, offer_days)
        ctx = OfferContext(sheet=sheet, facts=model_facts, offer=offer, card=card,
                           estimate=card_est, evidence=evidence, total_usd=total, days=offer_days,
                           checkpoint_bytes=ckpt, card_note=note, checkpoint_source=ckpt_src,
                           required=required, unknown_card=unknown,
                           simulated=(simulations[card.name].memory
                                      if card is not None and card.name in simulations else None))
        crit = {}
        for name, fn in CRITERIA.items():
            crit[name] = budget(ctx, today) if fn is budget else fn(ctx)
        fit = fits[link] if card_est is not None else None
        if offer.cards < sheet.placement.gpus:  # a short lot: its fit is unknown (fit_rule)
            base = fit or (unknown.judgement if unknown is not None else None)
            fit = None if base is None else judge_lot(base, cards=offer.cards,
                                                      gpus=sheet.placement.gpus)
        decisions.append(OfferDecision(offer, card, crit, card_est, total, offer_days,
                                       card_note=note, fit=fit, unknown_card=unknown))
    rank_offers(decisions)
    cited = {citation_key(e) for d in decisions for c in d.criteria.values() for e in c.evidence}
    offers = [(d.offer, d.card) for d in decisions]
    unapplied = [(doc.file, f"in scope of no offer: {scope_mismatch(doc, offers)}")
                 for doc in evidence.docs if citation_key(doc.citation()) not in cited]
    evidence = EvidenceSet(evidence.docs, evidence.ignored + tuple(unapplied))
    inval = invalidator_records(sheet, facts, est, decisions)
    files = list(inputs.catalogs)
    discrepancies = [d for f in files for d in f.discrepancies]
    return PlanResult(sheet, sha, model_facts, est, decisions, files, evidence,
                      ckpt, ckpt_src, [i.text for i in inval], discrepancies,
                      simulations=simulations, invalidator_details=inval)


def alternatives(inputs: PlanInputs, *, today: dt.date | None = None) -> AlternativesResult:
    """:func:`plan`, then the single changes for each offer excluded on memory or estimated not
    to fit (``decision.alternatives.plan_alternatives``); reads no file."""
    from ..decision.alternatives import plan_alternatives
    refuse_without_arithmetic(inputs.config_only, "alternatives")
    return plan_alternatives(plan(inputs, today=today))




def run_alternatives(sheet: Sheet, *, catalogs: list[Path] | None = None,
                     evidence_dir: Path | None = None, today: dt.date | None = None,
                     base_dir: Path | None = None) -> AlternativesResult:
    """:func:`run_plan`, then ``decision.alternatives.plan_alternatives``
    (``gpusizer alternatives``).

    Raises:
        SheetError, ModelError, CatalogError, EvidenceError, HubError: as :func:`run_plan`.
    """
    return alternatives(load_plan_inputs(
        sheet, catalogs=None if catalogs is None else [Path(c) for c in catalogs],
        evidence=None if evidence_dir is None else Path(evidence_dir), base_dir=base_dir),
        today=today)
