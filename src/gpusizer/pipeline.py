"""The main job, stage by stage: sheet → model facts → memory → evidence → decision.

Each entry point has two parts. The input stage reads: the sheet (:func:`read_sheet`), the
model's facts, the catalogs and the evidence (:func:`load_sheet_inputs`, :func:`load_plan_inputs`).
The computing part takes those values and reads no file of the user's (:func:`estimate`,
:func:`plan`, :func:`alternatives`; the card table and the bundled registry are package data).
``run_estimate``, ``run_plan`` and ``run_simulate`` chain both for the CLI; ``gpusizer.api`` does
the same for Python callers. No torch import anywhere on this path but the simulation's.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from . import __version__
from .catalog.catalog_file import CatalogDiscrepancy, CatalogFile
from .catalog.types import Card, Offer
from .decision.criteria import CRITERIA, Criterion, OfferContext, budget, judged_memory
from .decision.verdict import OfferDecision, rank_offers
from .errors import CatalogError, SheetError
from .evidence import EvidenceDoc, EvidenceSet, EvidenceSource, read_evidence, select_evidence
from .memory.estimate import estimate_memory
from .memory.fit_rule import FitJudgement, judge_on_card
from .memory.items import MemoryEstimate
from .memory.weights import dense_bytes, weight_breakdown
from .model.facts import ModelFacts
from .sheet import (Sheet, load_sheet, parse_sheet, parse_sheet_text, quality_criteria,
                    quality_sha256, sheet_sha256)

if TYPE_CHECKING:
    from .catalog.offers import CatalogSource
    from .decision.alternatives import AlternativesResult
    from .simulate.engine import SimulationResult

__all__ = ["resolve_facts", "EstimateResult", "run_estimate", "run_simulate", "PlanResult", "run_plan",
           "required_dimensions", "checkpoint_bytes", "SheetSource", "read_sheet", "SheetInputs",
           "load_sheet_inputs", "PlanInputs", "load_plan_inputs", "estimate", "simulate", "plan",
           "alternatives"]

SheetSource = Union[Sheet, Mapping[str, Any], str, "os.PathLike[str]"]
"""A sheet as given: validated, a mapping of sheet keys, YAML text (a ``str`` is always text,
never a path) or a file (``os.PathLike``)."""


def read_sheet(source: SheetSource, *, base_dir: Path | None = None
               ) -> tuple[Sheet, Path | None]:
    """The validated sheet, and the folder a relative ``model.path`` in it is read from.

    Args:
        source: a :class:`Sheet` (as is), a mapping (``parse_sheet``), YAML text
            (``parse_sheet_text``) or a path (``load_sheet``).
        base_dir: the folder for relative paths in the sheet; for a path, default its folder;
            otherwise None (the working directory).

    Raises:
        SheetError: unreadable file, invalid YAML or field, or a source of another kind (field
            ``sheet``).
    """
    if isinstance(source, Sheet):
        return source, base_dir
    if isinstance(source, os.PathLike):
        path = Path(source)
        return load_sheet(path), (base_dir if base_dir is not None else path.parent)
    if isinstance(source, str):
        return parse_sheet_text(source), base_dir
    if isinstance(source, Mapping):
        return parse_sheet(dict(source)), base_dir
    raise SheetError("expected a sheet: a mapping of sheet keys, YAML text (str) or a file "
                     f"(os.PathLike, e.g. pathlib.Path), got {type(source).__name__}",
                     field="sheet")


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


@dataclass(frozen=True)
class SheetInputs:
    """A sheet with its model's facts: what :func:`estimate` and :func:`simulate` compute from.

    Attributes:
        sheet: the validated workload.
        facts: the model's facts (None for a bare ``model.parameters`` count).
        base_dir: the folder a relative ``model.path`` is read from (None: the working
            directory); only the simulation reads there again (the model's own code).
    """

    sheet: Sheet
    facts: ModelFacts | None
    base_dir: Path | None = None


def load_sheet_inputs(sheet: Sheet, *, base_dir: Path | None = None) -> SheetInputs:
    """The input stage of estimate and simulate: resolve the model's facts (``fit`` still
    resolves its own, inside ``gpusizer.fit``).

    Raises:
        ModelError, UnknownArchitectureError, HubError: see :func:`resolve_facts`.
    """
    return SheetInputs(sheet, resolve_facts(sheet, base_dir=base_dir), base_dir)


@dataclass(frozen=True)
class PlanInputs:
    """Everything :func:`plan` computes from, already read and validated.

    Attributes:
        sheet, facts, base_dir: as :class:`SheetInputs`.
        offers: every offer of the catalogs (catalog order, then row order).
        catalogs: one record per catalog (name, SHA-256, kind, skipped rows, discrepancies).
        evidence: the evidence documents as given; :func:`plan` keeps those that match the
            sheet (``evidence.select_evidence``).
    """

    sheet: Sheet
    facts: ModelFacts | None
    offers: tuple[Offer, ...]
    catalogs: tuple[CatalogFile, ...]
    evidence: tuple[EvidenceDoc, ...] = ()
    base_dir: Path | None = None


def load_plan_inputs(sheet: Sheet, *,
                     catalogs: Sequence[CatalogSource] | CatalogSource | None = None,
                     evidence: EvidenceSource | None = None,
                     base_dir: Path | None = None) -> PlanInputs:
    """The input stage of plan and alternatives: model facts, catalogs and evidence.

    Args:
        sheet: the validated sheet.
        catalogs: paths, texts or rows (``catalog.offers.load_catalogs``); None or empty → the
            bundled seed catalog. SkyPilot hourly prices are totalled over ``budget.days``.
        evidence: a folder path or documents (``evidence.read_evidence``); None → none.
        base_dir: the folder a relative ``model.path`` is read from.

    Raises:
        ModelError, UnknownArchitectureError, HubError: the model's facts.
        CatalogError: a bad catalog, or catalogs that give no offer at all.
        EvidenceError: a malformed evidence document.
    """
    from .catalog.offers import load_catalogs, load_default_catalog
    facts = resolve_facts(sheet, base_dir=base_dir)
    days = sheet.budget.days if sheet.budget else None
    if catalogs:
        offers, files = load_catalogs(catalogs, days=days)
    else:
        offers, files = load_default_catalog()
    if not offers:
        raise CatalogError("the catalog(s) gave no offer to classify: expected at least one row",
                           field="--catalog", value=[f.path for f in files])
    return PlanInputs(sheet, facts, tuple(offers), tuple(files), read_evidence(evidence),
                      base_dir)


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
    arch = facts.architecture
    extra = arch.unloaded_checkpoint_layers
    if extra:
        # one more decoder layer per unloaded layer: the routed experts of an average MoE layer
        # plus the average rest of a layer, at the stored format's bytes per parameter
        per_param = Fraction(total, arch.total_parameters)
        experts = arch.parameters_by_role("expert_linear")
        body = arch.total_parameters - experts - arch.parameters_by_role("embedding", "lm_head")
        moe_layers = arch.moe.moe_layers if arch.moe and arch.moe.moe_layers else 1
        layer = Fraction(experts, moe_layers) + Fraction(body, arch.num_layers)
        total += int(extra * layer * per_param)
        how += (f" + {extra} layer(s) the checkpoint stores but transformers does not load "
                "(≈ one average MoE decoder layer each; a lower bound)")
    return total, how


@dataclass
class EstimateResult:
    """``gpusizer estimate``: the memory of one sheet, optionally against one card (``fit``
    is the memory criterion without evidence, ``judgement`` the fit rule's answer)."""

    sheet: Sheet
    facts: ModelFacts | None
    estimate: MemoryEstimate
    card: Card | None
    fit: Criterion | None = None
    judgement: FitJudgement | None = None


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
    from .simulate.engine import simulate_memory
    return simulate_memory(inputs.sheet, inputs.facts, card=card, base_dir=inputs.base_dir)


@dataclass
class PlanResult:
    """``gpusizer plan``: memory, every offer classified, and what could invalidate it."""

    sheet: Sheet
    sheet_sha256: str
    facts: ModelFacts | None
    estimate: MemoryEstimate
    decisions: list[OfferDecision]
    catalogs: list[CatalogFile]
    evidence: EvidenceSet
    checkpoint_bytes: int | None
    checkpoint_source: str
    invalidators: list[str] = field(default_factory=list)
    discrepancies: list[CatalogDiscrepancy] = field(default_factory=list)
    version: str = __version__
    simulations: dict[str, SimulationResult] = field(default_factory=dict)
    """``plan --simulate``: per canonical card name, the simulation under its rules."""


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

    Reads no file (unless ``simulate``: the simulation runs the model's own code).

    Args:
        inputs: the sheet, its model's facts, the offers and the evidence documents.
        today: the date schedules are checked from (default: today).
        simulate: also simulate the sheet on fake tensors under each known card's rules (the
            simulate extra); the memory criterion quotes both figures and stays to_confirm.

    Raises:
        SheetError: the sheet asks what the model cannot do.
        SimulateExtraMissing: ``simulate`` without torch, transformers and peft.
    """
    from .catalog.offers import offer_total_usd
    today = today or dt.date.today()
    sheet, facts = inputs.sheet, inputs.facts
    est = estimate_memory(sheet, facts)
    sha = sheet_sha256(sheet)
    days = sheet.budget.days if sheet.budget else None
    evidence = select_evidence(inputs.evidence, sheet_sha256=sha,
                               quality_sha256=quality_sha256(sheet),
                               quality_criteria=quality_criteria(sheet))
    ckpt, ckpt_src = checkpoint_bytes(sheet, facts)
    required = required_dimensions(sheet)
    per_card: dict[str, MemoryEstimate] = {}
    simulations: dict[str, SimulationResult] = {}
    if simulate:
        from .simulate import require_extra
        require_extra()
    decisions = []
    for offer in inputs.offers:
        card, note = _card_of(offer)
        card_est = None
        if card is not None:
            if card.name not in per_card:
                per_card[card.name] = estimate_memory(sheet, facts, card=card)
            card_est = per_card[card.name]
            if simulate and card.name not in simulations:
                from .simulate.engine import simulate_memory
                simulations[card.name] = simulate_memory(sheet, facts, card=card,
                                                         base_dir=inputs.base_dir)
        offer_days = offer.days if offer.days is not None else days
        total = offer_total_usd(offer, offer_days)
        ctx = OfferContext(sheet=sheet, facts=facts, offer=offer, card=card, estimate=card_est,
                           evidence=evidence, total_usd=total, days=offer_days,
                           checkpoint_bytes=ckpt, card_note=note, checkpoint_source=ckpt_src,
                           required=required,
                           simulated=(simulations[card.name].memory
                                      if card is not None and card.name in simulations else None))
        crit = {}
        for name, fn in CRITERIA.items():
            crit[name] = budget(ctx, today) if fn is budget else fn(ctx)
        decisions.append(OfferDecision(offer, card, crit, card_est, total, offer_days,
                                       card_note=note, fit=(judge_on_card(card_est, card,
                                                                          sheet.margin)
                                                            if card_est is not None else None)))
    rank_offers(decisions)
    cited = {json_key(e) for d in decisions for c in d.criteria.values() for e in c.evidence}
    unapplied = [(doc.file, "in scope of no offer (card and device bytes, provider and image, or "
                  "offer id differ) or without the fields its criterion reads")
                 for doc in evidence.docs if json_key(doc.citation()) not in cited]
    evidence = EvidenceSet(evidence.docs, evidence.ignored + tuple(unapplied))
    inval = _invalidators(sheet, facts, est, decisions)
    files = list(inputs.catalogs)
    discrepancies = [d for f in files for d in f.discrepancies]
    return PlanResult(sheet, sha, facts, est, decisions, files, evidence, ckpt, ckpt_src, inval,
                      discrepancies, simulations=simulations)


def alternatives(inputs: PlanInputs, *, today: dt.date | None = None) -> AlternativesResult:
    """:func:`plan`, then the single changes for each offer excluded on memory or estimated not
    to fit (``decision.alternatives.plan_alternatives``); reads no file."""
    from .decision.alternatives import plan_alternatives
    return plan_alternatives(plan(inputs, today=today))


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
    out.extend(n.text for n in est.notes if n.code == "bare_count")
    return out
