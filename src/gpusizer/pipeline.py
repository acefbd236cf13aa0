"""The main job, stage by stage: sheet → model facts → memory → evidence → decision.

The CLI calls one function here per command (``estimate``, ``plan``, ``fit``); the report stage
renders what they return. No torch import anywhere on this path.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from . import __version__
from .catalog.types import Card, Offer
from .decision.criteria import CRITERIA, Criterion, OfferContext, budget
from .decision.verdict import OfferDecision, rank_offers
from .errors import SheetError
from .evidence import EvidenceSet, load_evidence
from .memory.estimate import estimate_memory
from .memory.items import MemoryEstimate
from .memory.weights import dense_bytes, weight_breakdown
from .model.facts import ModelFacts
from .sheet import Sheet, quality_criteria, quality_sha256, sheet_sha256

__all__ = ["resolve_facts", "EstimateResult", "run_estimate", "run_simulate", "PlanResult", "run_plan",
           "required_dimensions", "checkpoint_bytes"]


def resolve_facts(sheet: Sheet, *, base_dir: Path | None = None) -> ModelFacts | None:
    """The model's facts (None for a bare ``model.parameters`` count).

    A relative ``model.path`` is read relative to ``base_dir`` (the sheet's folder), so a sheet
    means the same wherever it is run from.

    Raises:
        ModelError, UnknownArchitectureError, HubError: see ``model.resolve``.
    """
    m = sheet.model
    if m.parameters is not None:
        return None
    from .model.resolve import model_folder, resolve_model
    path = None if m.path is None else str(model_folder(m.path, base_dir))
    return resolve_model(model_id=m.id, revision=m.revision, path=path,
                         trust_remote_code=m.trust_remote_code)


def required_dimensions(sheet: Sheet) -> dict[str, int]:
    """The dimensions a run must execute to cover the workload (R1, R9)."""
    if sheet.inference is not None:
        i = sheet.inference
        return {"prompt_tokens": i.prompt_tokens, "new_tokens": i.new_tokens,
                "concurrency": i.concurrency}
    if sheet.training is not None:
        t = sheet.training
        return {"sequence_length": t.sequence_length, "microbatch": t.microbatch}
    return {}


def checkpoint_bytes(sheet: Sheet, facts: ModelFacts | None) -> tuple[int | None, str]:
    """Bytes of the weights on disk, with how they were obtained.

    Exact from safetensors headers / index when read; otherwise the stored format's arithmetic
    (``weights.weight_breakdown``); for a bare count, the dense volume in the sheet's format.
    """
    if facts is None:
        p = sheet.model.parameters
        return (dense_bytes(p, sheet.weights), f"dense volume {p} × {sheet.weights}") if p else \
            (None, "unknown")
    if facts.stored_bytes is not None:
        return facts.stored_bytes, facts.stored_bytes_source or "safetensors headers"
    fmt = facts.stored_format
    if fmt is None:
        return None, "the stored format is unknown"
    from .memory.estimate import sheet_quant_params
    bd = weight_breakdown(facts, fmt, compute_dtype="bf16",
                          quant=sheet_quant_params(sheet, facts, fmt))
    total, how = bd.total_bytes, f"stored format {fmt} arithmetic (no safetensors header read)"
    extra = facts.unloaded_checkpoint_layers
    if extra:
        # one more decoder layer per unloaded layer: the routed experts of an average MoE layer
        # plus the average rest of a layer, at the stored format's bytes per parameter
        per_param = Fraction(total, facts.total_parameters)
        experts = facts.parameters_by_role("expert_linear")
        body = facts.total_parameters - experts - facts.parameters_by_role("embedding", "lm_head")
        moe_layers = facts.moe.moe_layers if facts.moe and facts.moe.moe_layers else 1
        layer = Fraction(experts, moe_layers) + Fraction(body, facts.num_layers)
        total += int(extra * layer * per_param)
        how += (f" + {extra} layer(s) the checkpoint stores but transformers does not load "
                "(≈ one average MoE decoder layer each; a lower bound)")
    return total, how


@dataclass
class EstimateResult:
    """``gpusizer estimate``: the memory of one sheet, optionally against one card."""

    sheet: Sheet
    facts: ModelFacts | None
    estimate: MemoryEstimate
    card: Card | None
    fit: Criterion | None = None


def run_estimate(sheet: Sheet, *, card: Card | None = None,
                 base_dir: Path | None = None) -> EstimateResult:
    """Estimate memory (and, with a card, the fit against it)."""
    facts = resolve_facts(sheet, base_dir=base_dir)
    est = estimate_memory(sheet, facts, card=card)
    fit = None
    if card is not None:
        from .decision.criteria import memory
        offer = Offer(id="--card", provider="(none)", card=card.name, cards=sheet.placement.gpus,
                      days=None, total_usd=None)
        ctx = OfferContext(sheet, facts, offer, card, est, EvidenceSet((), ()), None, None, None,
                           required=required_dimensions(sheet))
        fit = memory(ctx)
    return EstimateResult(sheet, facts, est, card, fit)


def run_simulate(sheet: Sheet, *, card: Card | None = None, base_dir: Path | None = None):
    """Simulate the sheet's phases on fake tensors (``gpusizer simulate``; the simulate extra).

    Returns a ``simulate.engine.SimulationResult``; torch is imported only here, lazily.
    """
    from .simulate.engine import simulate_memory
    facts = resolve_facts(sheet, base_dir=base_dir)
    return simulate_memory(sheet, facts, card=card, base_dir=base_dir)


@dataclass
class PlanResult:
    """``gpusizer plan``: memory, every offer classified, and what could invalidate it."""

    sheet: Sheet
    sheet_sha256: str
    facts: ModelFacts | None
    estimate: MemoryEstimate
    decisions: list[OfferDecision]
    catalogs: list
    evidence: EvidenceSet
    checkpoint_bytes: int | None
    checkpoint_source: str
    invalidators: list[str] = field(default_factory=list)
    discrepancies: list = field(default_factory=list)
    version: str = __version__
    simulations: dict = field(default_factory=dict)


def _card_of(offer: Offer) -> tuple[Card | None, str | None]:
    from .catalog.cards import resolve_offer_card
    match = resolve_offer_card(offer)
    return match.card, (None if match.card else match.reason)


def _double_length(sheet: Sheet, facts: ModelFacts | None) -> str | None:
    """The estimate at twice the required length (R15: a longer real input moves the peak)."""
    from .units import fmt_bytes
    inf, tr = sheet.inference, sheet.training
    if facts is not None and tr is not None:
        doubled = sheet.model_copy(update={"training": tr.model_copy(update={
            "sequence_length": 2 * tr.sequence_length})})
        try:
            est = estimate_memory(doubled, facts)
        except SheetError as exc:
            return (f"twice the training length ({2 * tr.sequence_length} tokens) is "
                    f"impossible: {exc.reason}")
        return (f"twice the training length ({2 * tr.sequence_length} tokens per sequence): "
                f"estimated device peak {fmt_bytes(est.device_peak_bytes)} per GPU "
                f"(activations {fmt_bytes(est.item('activations').bytes)}, logits "
                f"{fmt_bytes(est.item('logits').bytes)})")
    if inf is None or facts is None:
        return None
    doubled = sheet.model_copy(update={"inference": inf.model_copy(update={
        "prompt_tokens": 2 * inf.prompt_tokens, "new_tokens": 2 * inf.new_tokens})})
    try:
        est = estimate_memory(doubled, facts)
    except SheetError as exc:
        return f"twice the length ({2 * inf.tokens_per_sequence} tokens) is impossible: {exc.reason}"
    return (f"twice the length ({2 * inf.tokens_per_sequence} tokens per sequence): estimated "
            f"device peak {fmt_bytes(est.device_peak_bytes)} per GPU (KV cache "
            f"{fmt_bytes(est.item('kv_cache').bytes)})")


def run_plan(sheet: Sheet, *, catalogs: list[Path] | None = None, evidence_dir: Path | None = None,
             today: dt.date | None = None, base_dir: Path | None = None,
             simulate: bool = False) -> PlanResult:
    """The main job: memory items and phases, every offer classified on six criteria, ranked.

    Args:
        sheet: the validated sheet.
        catalogs: catalog files (YAML, CSV, SkyPilot vms.csv); None → the bundled seed catalog.
        evidence_dir: a folder of evidence ``*.json``.
        today: the date schedules are checked from (default: today).
        base_dir: the sheet's folder (a relative ``model.path`` is read from there).
        simulate: also simulate the sheet on fake tensors under each known card's rules (the
            simulate extra); the memory criterion quotes both figures and stays to_confirm.

    Raises:
        SheetError, ModelError, CatalogError, EvidenceError, HubError, SimulateExtraMissing.
    """
    from .catalog.offers import load_catalogs, load_default_catalog, offer_total_usd
    today = today or dt.date.today()
    facts = resolve_facts(sheet, base_dir=base_dir)
    est = estimate_memory(sheet, facts)
    sha = sheet_sha256(sheet)
    days = sheet.budget.days if sheet.budget else None
    if catalogs:
        offers, files = load_catalogs(list(catalogs), days=days)
    else:
        offers, files = load_default_catalog()
    if not offers:
        from .errors import CatalogError
        raise CatalogError("the catalog(s) gave no offer to classify: expected at least one row",
                           field="--catalog", value=[str(c) for c in catalogs or ()])
    evidence = load_evidence(evidence_dir, sheet_sha256=sha, quality_sha256=quality_sha256(sheet),
                             quality_criteria=quality_criteria(sheet))
    ckpt, ckpt_src = checkpoint_bytes(sheet, facts)
    required = required_dimensions(sheet)
    per_card: dict[str, MemoryEstimate] = {}
    simulations: dict = {}
    if simulate:
        from .simulate import require_extra
        require_extra()
    decisions = []
    for offer in offers:
        card, note = _card_of(offer)
        card_est = None
        if card is not None:
            if card.name not in per_card:
                per_card[card.name] = estimate_memory(sheet, facts, card=card)
            card_est = per_card[card.name]
            if simulate and card.name not in simulations:
                from .simulate.engine import simulate_memory
                simulations[card.name] = simulate_memory(sheet, facts, card=card,
                                                         base_dir=base_dir)
        offer_days = offer.days if offer.days is not None else days
        total = offer_total_usd(offer, offer_days)
        ctx = OfferContext(sheet, facts, offer, card, card_est, evidence, total, offer_days, ckpt,
                           card_note=note, checkpoint_source=ckpt_src, required=required,
                           simulated=(simulations[card.name].memory
                                      if card is not None and card.name in simulations else None))
        crit = {}
        for name, fn in CRITERIA.items():
            crit[name] = budget(ctx, today) if fn is budget else fn(ctx)
        decisions.append(OfferDecision(offer, card, crit, card_est, total, offer_days,
                                       card_note=note))
    rank_offers(decisions)
    cited = {json_key(e) for d in decisions for c in d.criteria.values() for e in c.evidence}
    unapplied = [(doc.file, "in scope of no offer (card and device bytes, provider and image, or "
                  "offer id differ) or without the fields its criterion reads")
                 for doc in evidence.docs if json_key(doc.citation()) not in cited]
    evidence = EvidenceSet(evidence.docs, evidence.ignored + tuple(unapplied))
    inval = _invalidators(sheet, facts, est, decisions)
    discrepancies = [d for f in files for d in getattr(f, "discrepancies", ())]
    return PlanResult(sheet, sha, facts, est, decisions, files, evidence, ckpt, ckpt_src, inval,
                      discrepancies, simulations=simulations)


def json_key(citation: dict) -> tuple:
    """A hashable key of an evidence citation."""
    return tuple(sorted(citation.items()))


def _invalidators(sheet: Sheet, facts: ModelFacts | None, est: MemoryEstimate,
                  decisions: list[OfferDecision]) -> list[str]:
    """What could invalidate the conclusion (R15), computed from the sheet."""
    out = []
    dl = _double_length(sheet, facts)
    if dl:
        out.append(dl)
    unknown = [it for it in est.items if it.bytes is None and it.phases]
    for it in unknown:
        out.append(f"item {it.name} has unknown size: {it.unknown_reason}")
    declared = [it.name for it in est.items if it.provenance == "declared" and it.bytes]
    if declared:
        out.append("declared (not measured) items: " + ", ".join(declared))
    seen = set()
    for d in decisions:
        c = d.card
        if c is None:
            if d.card_note and d.offer.card not in seen:
                seen.add(d.offer.card)
                out.append(f"card {d.offer.card!r}: {d.card_note}")
            continue
        if c.name in seen:
            continue
        seen.add(c.name)
        for label, fact in (("device bytes", c.device_bytes), ("compute capability",
                                                                c.compute_capability)):
            if fact.status != "confirmed":
                out.append(f"{c.name} {label} still to confirm ({fact.source})")
    if sheet.quality is not None:
        out.append(f"quality judged on {sheet.quality.corpus} with {sheet.quality.metric}: "
                   "another evaluation may change the conclusion")
    out.extend(n for n in est.notes if n.startswith("bare parameter count"))
    return out
