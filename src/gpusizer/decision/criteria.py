"""The six mandatory criteria (R2): one function each, every state tied to its evidence.

States: ``acceptable`` (documents confirm it within scope), ``to_confirm`` (information missing;
``condition`` says exactly what to confirm), ``exclude`` (a proven failure blocks the workload).
An unknown can make a criterion ``to_confirm``, never ``acceptable``; preferences never reach here.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Literal

from ..catalog.types import Card, Offer
from ..evidence import EvidenceDoc, EvidenceSet
from ..memory.engines import engine_of
from .unknown_card import UnknownCardFit
from ..memory.fit_rule import FitJudgement, judge_on_card, lot_words
from ..memory.items import MemoryEstimate
from ..model.facts import ModelFacts
from ..sheet import Sheet
from ..stack import resolve, trl_max_length
from ..units import fmt_bytes

__all__ = ["State", "Criterion", "OfferContext", "CRITERIA", "workload", "compatibility", "memory",
           "judged_memory", "quality", "distribution", "budget", "scope_mismatch",
           "silent_truncation"]

State = Literal["acceptable", "to_confirm", "exclude"]


@dataclass(frozen=True)
class Criterion:
    """One criterion's state for one offer."""

    state: State
    reason: str
    condition: str | None = None
    evidence: tuple[dict, ...] = ()


@dataclass(frozen=True)
class OfferContext:
    """Everything a criterion may look at for one offer.

    Attributes:
        sheet, facts: the workload and the model (facts None for a bare count).
        offer: the offer; card: its canonical card (None when unknown to the card table).
        estimate: the memory estimate under this card's rules, per GPU.
        evidence: evidence matching the sheet.
        total_usd: the lot's price for the campaign (None when undocumented).
        days: rental days used for the price.
        checkpoint_bytes: bytes of the weights on disk (for storage and host RAM).
        checkpoint_source: how ``checkpoint_bytes`` was obtained (safetensors headers, arithmetic).
        card_note: why the card is unknown or ambiguous, if it is.
        simulated: the simulated memory under this card's rules (``plan --simulate``), or None.
        unknown_card: for an unknown or undecided card, the fit at the memory a claim or the
            variants give (``decision.unknown_card``), or None.
    """

    sheet: Sheet
    facts: ModelFacts | None
    offer: Offer
    card: Card | None
    estimate: MemoryEstimate | None
    evidence: EvidenceSet
    total_usd: float | None
    days: float | None
    checkpoint_bytes: int | None
    card_note: str | None = None
    checkpoint_source: str = ""
    required: dict[str, int] = field(default_factory=dict)
    simulated: MemoryEstimate | None = None
    unknown_card: UnknownCardFit | None = None


def _offer_doc(ctx: OfferContext) -> dict:
    o = ctx.offer
    return {"document": o.document or f"catalog row {o.id}", "version": o.version or "unversioned",
            "scope": f"offer {o.id} ({o.provider})"}


def _in_card_scope(doc: EvidenceDoc, ctx: OfferContext) -> bool:
    """Same canonical card and the same device bytes (as NVML reports them)."""
    if ctx.card is None or doc.scope.card is None:
        return False
    from ..catalog.cards import lookup_card
    c = lookup_card(doc.scope.card, memory_bytes=doc.scope.device_bytes)
    return (c is not None and c.name == ctx.card.name
            and doc.scope.device_bytes == ctx.card.device_bytes.value)


def scope_mismatch(doc: EvidenceDoc, offers: list[tuple[Offer, Card | None]]) -> str:
    """Which scope field keeps ``doc`` off every offer (the ignored-evidence line): for a
    compatibility check its offer id, provider or image (R4: the offer's own environment); for
    a measurement its card (null, unknown, rented by no offer) or its device bytes (not the card
    table's); else that it lacks the fields its criterion reads."""
    s = doc.scope
    if doc.kind == "compatibility":
        if s.offer_id is not None and all(o.id != s.offer_id for o, _ in offers):
            return f"its scope.offer_id {s.offer_id!r} is no offer of the catalogs"
        if all(o.provider != s.provider for o, _ in offers):
            return (f"its scope.provider {s.provider!r} is no offer's provider ("
                    + ", ".join(sorted({o.provider for o, _ in offers})) + ")")
        if all(o.environment != s.environment.image for o, _ in offers
               if o.provider == s.provider):
            return (f"its scope.environment.image {s.environment.image!r} is not the "
                    f"environment of any {s.provider} offer")
    elif doc.kind in ("measurement", "placement", "engine_log"):
        if s.card is None:
            return "its scope.card is null (a run on no GPU)"
        from ..catalog.cards import lookup_card
        card = lookup_card(s.card, memory_bytes=s.device_bytes)
        if card is None:
            return f"its scope.card {s.card!r} is not in the card table"
        if all(c is None or c.name != card.name for _, c in offers):
            return f"its scope.card {card.name} is rented by no offer"
        if s.device_bytes != card.device_bytes.value:
            return (f"its scope.device_bytes {s.device_bytes} differs from {card.name}'s "
                    f"{card.device_bytes.value} in the card table")
    return "its scope matches, but it lacks the fields its criterion reads"


def _limit_rung(ctx: OfferContext):
    """The worst in-scope ``limit`` rung of every measurement (not the first): an OOM, then a
    failure, a truncation, a pass short of the required dimensions, then the pass with the
    largest measured device bytes; ``(None, None)`` when there is none."""
    rungs = [(doc, rung) for doc in ctx.evidence.of_kind("measurement")
             if _in_card_scope(doc, ctx) for rung in doc.rungs if rung.name == "limit"]
    if not rungs:
        return None, None
    return min(rungs, key=lambda dr: _rung_rank(dr[1], ctx.required))


_RESULT_RANK = {"oom": 0, "failed": 1, "truncated": 2}


def _rung_rank(rung, required: dict[str, int]) -> tuple[int, int]:
    """Sort key, worst first: result, then a shortfall, then the larger measured bytes."""
    if rung.result in _RESULT_RANK:
        return _RESULT_RANK[rung.result], 0
    measured = [(p.max_memory_reserved_bytes or 0) + (p.non_torch_bytes or 0)
                for p in rung.phases]
    return (3 if _shortfall(rung, required) else 4), -max(measured, default=0)


def _oom_rung(ctx: OfferContext):
    """The first in-scope rung that ran out of memory at dimensions no larger than required
    (memory grows with each dimension, so the required workload saturates too)."""
    for doc in ctx.evidence.of_kind("measurement"):
        if not _in_card_scope(doc, ctx):
            continue
        for rung in doc.rungs:
            if rung.result == "oom" and _at_most_required(rung, ctx.required):
                return doc, rung
    return None, None


def _shortfall(rung, required: dict[str, int]) -> dict[str, tuple[int | None, int]]:
    """Required dimensions the rung did not execute in full: ``{key: (executed, required)}``."""
    return {k: (rung.executed.get(k), v) for k, v in required.items()
            if rung.executed.get(k) is None or rung.executed[k] < v}


def _at_most_required(rung, required: dict[str, int]) -> bool:
    """True when every executed dimension is at most the required one (an OOM there proves the
    required workload saturates too: memory grows with each dimension)."""
    return all(rung.executed.get(k, v) <= v for k, v in required.items())


def _missing_phases(rung, sheet: Sheet) -> list[str]:
    """Phases of the task's full cycle the rung recorded no counters for."""
    from ..memory.items import required_phases
    seen = {p.name for p in rung.phases}
    return [p for p in required_phases(sheet) if p not in seen]


def workload(ctx: OfferContext) -> Criterion:
    """Workload covered: the executed dimensions equal the required ones (R1, R9)."""
    if not ctx.required:
        return Criterion("to_confirm", "real dimensions unknown: the sheet gives no lengths, "
                         "concurrency or microbatch (weights-only calculator)",
                         "add an inference or training block with the real dimensions")
    doc, rung = _limit_rung(ctx)
    if rung is not None:
        unrecorded = [k for k in ctx.required if rung.executed.get(k) is None]
        if unrecorded:
            return Criterion("to_confirm", "the limit run did not record the executed "
                             + ", ".join(unrecorded),
                             "record every executed dimension (tokens in and out per sequence, "
                             "sequences or microbatch) in the measurement", (doc.citation(),))
        short = _shortfall(rung, ctx.required)
        if short or rung.result == "truncated":
            text = ", ".join(f"{k} {got} < {want}" for k, (got, want) in short.items())
            return Criterion("exclude", "the limit run covered less than the sheet asks: "
                             + (text or "the run truncated its input"), None, (doc.citation(),))
        if rung.result != "passed":
            return Criterion("to_confirm", f"the limit run stopped ({rung.result}"
                             + (f" in phase {rung.failed_phase}" if rung.failed_phase else "")
                             + "): the required dimensions were not executed to the end",
                             "rerun the limit rung to completion after the change that fixes it",
                             (doc.citation(),))
        return Criterion("acceptable", "the limit run executed the required dimensions: "
                         + ", ".join(f"{k}={v}" for k, v in ctx.required.items()), None,
                         (doc.citation(),))
    dims = ", ".join(f"{k}={v}" for k, v in ctx.required.items())
    engine = engine_of(ctx.sheet)
    if not engine.measure_supported:   # a serving engine: its start-up log proves memory only
        return Criterion("to_confirm", "executed dimensions not yet in evidence",
                         f"run the workload through {engine.label} on this card at {dims} and "
                         "record the executed dimensions (`gpusizer measure` does not run "
                         f"{engine.label}; `gpusizer import {engine.name}-log` proves memory, "
                         "never the workload: a start-up log runs no request)")
    truncation = silent_truncation(ctx.sheet)
    if truncation is not None:
        reason, condition = truncation
        return Criterion("to_confirm", "executed dimensions not yet in evidence; " + reason,
                         condition + f", run the workload on this card at {dims} and record the "
                         "executed dimensions (gpusizer measure)")
    return Criterion("to_confirm", "executed dimensions not yet in evidence",
                     f"run the workload on this card at {dims} and record the executed dimensions "
                     "(gpusizer measure)")


def silent_truncation(sheet: Sheet) -> tuple[str, str] | None:
    """A training length above the SFT trainer's default maximum length of the sheet's stack
    (TRL's ``SFTConfig.max_length``, ``gpusizer.stack`` rule ``trl.sft_max_length``): TRL cuts
    every longer sample without an error, so the run would train on fewer tokens than the sheet
    asks (R9). Only for ``stack.framework: trl-sft``, whose trainer that is; the sheet has no key
    for the run's own setting, so the criterion asks to confirm it.

    Returns:
        ``(reason, condition)`` or None when the length is within the default (or another
        framework runs).
    """
    tr = sheet.training
    if tr is None or sheet.stack.framework != "trl-sft":
        return None
    key, default = trl_max_length(sheet.stack.trl)
    if tr.sequence_length <= default:
        return None
    version = resolve("trl", sheet.stack.trl)
    return (f"TRL {version}'s SFT trainer truncates samples to {key}={default} tokens by "
            f"default, fewer than training.sequence_length {tr.sequence_length}: without an "
            "explicit setting the run trains on shorter sequences than the sheet declares",
            f"set {key}={tr.sequence_length} (or more) in the TRL config")


def _own_environment(doc: EvidenceDoc, ctx: OfferContext) -> bool:
    """The evidence was taken on this very offer, or with its provider and its image (R4)."""
    s = doc.scope
    return (s.offer_id is not None and s.offer_id == ctx.offer.id) or (
        s.provider is not None and s.provider == ctx.offer.provider
        and s.environment.image is not None and s.environment.image == ctx.offer.environment)


def _own_environment_measurement(ctx: OfferContext) -> Criterion | None:
    """A measurement whose limit rung ran to the end in the offer's own environment and on its
    card verifies the combination it ran (acceptable); one that failed there for a reason other
    than memory proves an incompatibility (exclude), and wins over a pass in another document.
    A run elsewhere proves nothing here."""
    rungs = [(doc, rung) for doc in ctx.evidence.of_kind("measurement")
             if _own_environment(doc, ctx) and _in_card_scope(doc, ctx)
             for rung in doc.rungs if rung.name == "limit"]
    for doc, rung in sorted(rungs, key=lambda dr: dr[1].result != "failed"):
        env = doc.scope.environment
        ran = ", ".join(f"{k} {v}" for k, v in (("torch", env.torch), ("cuda", env.cuda),
                                                 ("driver", env.driver)) if v)
        if rung.result == "passed":
            return Criterion("acceptable", "the workload ran to the end in the offer's own "
                             f"environment ({env.image or ctx.offer.id}; {ran})", None,
                             (doc.citation(),))
        if rung.result == "failed":
            return Criterion("exclude", "the workload failed (not out of memory) in the "
                             f"offer's own environment in phase {rung.failed_phase}", None,
                             (doc.citation(),))
    return None


def compatibility(ctx: OfferContext) -> Criterion:
    """Compatibility: verified only by a check run in the offer's own environment (R4)."""
    notes = ctx.estimate.notes if ctx.estimate else ()
    for doc in ctx.evidence.of_kind("compatibility"):
        if _own_environment(doc, ctx):
            if doc.result == "failed":
                return Criterion("exclude", "the compatibility check failed in the offer's own "
                                 "environment", None, (doc.citation(),))
            if doc.result == "passed":
                return Criterion("acceptable", "the required combination was checked in the "
                                 "offer's own environment", None, (doc.citation(),))
    measured = _own_environment_measurement(ctx)
    if measured is not None:
        return measured
    changes = [n.text for n in notes if n.code == "card_rule"]
    env = ctx.offer.environment
    reason = (f"environment {env!r} is declared at order time: a preference, not a verification "
              "(R4)" if env else "no environment documented for this offer")
    if changes:
        reason += "; card rules: " + "; ".join(changes)
    software = ", ".join(ctx.sheet.requirements.software) or "the sheet's software stack"
    return Criterion("to_confirm", reason,
                     f"run a compatibility check ({software}, {_kernel_and_format(ctx)}) in the "
                     "offer's own image", (_offer_doc(ctx),))


def _kernel_and_format(ctx: OfferContext) -> str:
    """The attention kernel as the engine names it (vLLM picks its own backend; transformers
    runs the sheet's ``attention``) and the weight format that runs on this card (``auto``
    resolved to the checkpoint's stored format, card rules applied)."""
    arch = getattr(ctx.facts, "architecture", None)  # None: a model no family counts
    mla = arch is not None and arch.mla is not None
    kernel = engine_of(ctx.sheet).describe_attention(ctx.sheet.attention, mla=mla)
    runs = ctx.estimate.weights_format if ctx.estimate is not None else ctx.sheet.weights
    return f"attention {kernel}, {runs} weights"


def memory(ctx: OfferContext) -> Criterion:
    """Memory per GPU: exclude on a certain overflow (``judge_fit``) or a measured OOM at the
    required dimensions; acceptable only with an in-scope measurement of the full cycle within
    the margin; otherwise the fit judgement, to confirm."""
    if ctx.card is None or ctx.estimate is None:
        return _unknown_card_memory(ctx)
    judgement = judge_on_card(ctx.estimate, ctx.card, ctx.sheet.margin)
    device, margin = judgement.device_bytes, judgement.margin_bytes
    doc, rung = _limit_rung(ctx)
    oom_doc, oom = _oom_rung(ctx)
    if oom is not None:
        where = "at the required dimensions" if oom.name == "limit" else \
            f"already at the {oom.name} rung (smaller than required)"
        return Criterion("exclude", f"out of memory {where} in phase "
                         f"{oom.failed_phase or 'unknown'} on {ctx.card.name}", None,
                         (oom_doc.citation(),))
    if judgement.state == "does_not_fit" and judgement.certain:
        return judged_memory(judgement, ctx.card)
    logged = _engine_log_memory(ctx)
    if logged is not None and logged.state == "exclude":
        return logged
    if not ctx.required:   # R11: no dimensions stated, so no measurement covers the workload
        judged = judged_memory(judgement, ctx.card, simulated=ctx.simulated,
                               estimate=ctx.estimate)
        if rung is None:
            return judged
        return Criterion("to_confirm", judged.reason + "; a measurement exists but the sheet "
                         "states no workload dimensions (no inference or training block), so it "
                         "cannot show the real workload fits (R11)",
                         "add an inference or training block with the real dimensions, then "
                         "measure the limit rung at them", judged.evidence + (doc.citation(),))
    missing = _missing_phases(rung, ctx.sheet) if rung is not None else []
    if rung is not None and rung.result == "passed" and not _shortfall(rung, ctx.required) \
            and missing:
        return Criterion("to_confirm", "the limit run passed but did not record the phases "
                         + ", ".join(missing), "measure the full cycle (every phase of the task)",
                         (doc.citation(),))
    if rung is not None and rung.result == "passed" and not _shortfall(rung, ctx.required):
        peaks = [p for p in rung.phases]
        reserved = [p.max_memory_reserved_bytes for p in peaks]
        non_torch = [p.non_torch_bytes for p in peaks]
        if peaks and None not in reserved and None not in non_torch \
                and ctx.card.device_bytes.status == "confirmed":
            worst = max(r + n for r, n in zip(reserved, non_torch))
            if worst + margin <= device:
                return Criterion("acceptable", f"measured full cycle: max_memory_reserved + "
                                 f"non-PyTorch = {fmt_bytes(worst)} + margin {fmt_bytes(margin)} "
                                 f"<= {fmt_bytes(device)}", None,
                                 (doc.citation(), _card_citation(ctx.card)))
            return Criterion("to_confirm", f"measured {fmt_bytes(worst)} + margin "
                             f"{fmt_bytes(margin)} exceeds {fmt_bytes(device)} though the run "
                             "passed", "re-measure with a reasoned margin", (doc.citation(),))
    if logged is not None and logged.state == "acceptable":
        return logged
    judged = judged_memory(judgement, ctx.card, simulated=ctx.simulated, estimate=ctx.estimate)
    engine = engine_of(ctx.sheet)
    if engine.measure_supported and logged is None:
        return judged
    condition = (f"import {engine.label}'s start-up log on this card (`gpusizer import "
                 f"{engine.name}-log LOG --sheet SHEET --card {ctx.card.name} --out DIR`): its "
                 "pool must hold the required concurrency at the required length"
                 if not engine.measure_supported else judged.condition)
    if logged is None:
        return Criterion("to_confirm", judged.reason, condition, judged.evidence)
    return Criterion("to_confirm", judged.reason + "; " + logged.reason, condition,
                     judged.evidence + logged.evidence)


def _engine_log_memory(ctx: OfferContext) -> Criterion | None:
    """Memory from the in-scope ``engine_log`` documents (``evidence.engine_log.log_proof``):
    ``exclude`` when one disproves the required concurrency at the required length,
    ``acceptable`` when one proves it (and none disproves), else ``to_confirm`` with what the
    logs lack; None without such a document. A start-up log proves capacity only."""
    docs = [d for d in ctx.evidence.of_kind("engine_log") if _in_card_scope(d, ctx)]
    inf = ctx.sheet.inference
    if not docs or inf is None:
        return None
    from ..evidence.engine_log import log_proof
    pool = ctx.estimate.pool if ctx.estimate is not None else None
    length = inf.prompt_tokens + inf.new_tokens
    sequences = pool.required_sequences if pool is not None else inf.concurrency
    proofs = [(d, log_proof(d.model_extra or {}, tokens_per_sequence=length,
                            sequences=sequences, block_tokens=getattr(inf, "block_size", 1)))
              for d in docs]
    for state, crit in (("disproves", "exclude"), ("proves", "acceptable")):
        hits = [(d, p) for d, p in proofs if p.state == state]
        if hits:
            doc, proof = hits[0]
            unstated = doc.extra("settings_unstated") or []
            note = (f" (not in the log, taken as the sheet's: {', '.join(unstated)})"
                    if unstated and crit == "acceptable" else "")
            return Criterion(crit, proof.reason + note, None,
                             tuple(d.citation() for d, _ in hits))
    doc, proof = proofs[0]
    return Criterion("to_confirm", proof.reason, None, tuple(d.citation() for d, _ in proofs))


def _card_citation(card: Card) -> dict:
    return {"document": "gpusizer card table", "version": "bundled",
            "scope": f"{card.name}: {card.device_bytes.source}"}


def _unknown_card_memory(ctx: OfferContext) -> Criterion:
    """Memory for a card the table does not decide: ``exclude`` when the certain lower bound
    exceeds every card the name may mean, else ``to_confirm``, quoting the fit at the memory
    the variants or the catalog's claim give (a claim proves nothing, R4)."""
    reason = ctx.card_note or (f"card {ctx.offer.card!r} is unknown to the card table: its "
                               "memory is unknown (never guessed)")
    known = ctx.unknown_card
    if known is not None and known.excluded is not None:
        return Criterion("exclude", known.excluded, None, (_offer_doc(ctx),))
    if known is not None and known.judgement is not None:
        fit = known.judgement.state.replace("_", " ")
        reason += (f"; estimated fit at {fmt_bytes(known.basis_bytes)} per GPU ({known.basis}): "
                   f"{fit} ({known.judgement.reason}), which proves nothing until the card is "
                   "known")
    return Criterion("to_confirm", reason,
                     "name the exact card model and its nvidia-smi memory.total")


def judged_memory(judgement: FitJudgement, card: Card, *,
                  simulated: MemoryEstimate | None = None,
                  estimate: MemoryEstimate | None = None) -> Criterion:
    """The memory criterion from a fit judgement alone (no measurement): ``exclude`` on a
    certain overflow, else ``to_confirm`` with the judgement's figures (an estimate that does
    not fit stays to confirm unless a certain bound proves it, R2)."""
    cite = (_card_citation(card),)
    if judgement.state == "does_not_fit" and judgement.certain:
        return Criterion("exclude", judgement.reason, None, cite)
    status = "" if card.device_bytes.status == "confirmed" else \
        " (the card's device bytes are themselves to confirm)"
    reason = judgement.reason + status
    if simulated is not None and estimate is not None:
        reason += "; " + _simulated_text(simulated, estimate, judgement.device_bytes,
                                         judgement.margin_bytes)
    return Criterion("to_confirm", reason,
                     "measure the limit rung on this card: max_memory_reserved + non-PyTorch "
                     "memory + margin <= device bytes (gpusizer measure)", cite)


def _simulated_text(sim: MemoryEstimate, est: MemoryEstimate, device: int, margin: int) -> str:
    """The simulated figures quoted beside the estimate (a simulation is not a measurement: the
    state stays to_confirm)."""
    peak = sim.device_peak_bytes if sim.device_peak_bytes is not None else sim.peak_bytes
    label = "device peak" if sim.device_peak_bytes is not None else "peak (PyTorch only)"
    fits = peak is not None and peak + margin <= device
    phase = sim.peak_phase.name if sim.peak_phase else "unknown"
    return (f"simulated {label} {fmt_bytes(peak)} in phase {phase} (fake tensors, not a "
            f"measurement) + margin {'<=' if fits else '>'} device {fmt_bytes(device)}, vs "
            f"estimated {fmt_bytes(est.device_peak_bytes)}")


def _reference_format(ctx: OfferContext) -> str | None:
    """The sheet's reference format, ``auto`` resolved to the checkpoint's stored format."""
    q = ctx.sheet.quality
    assert q is not None
    if q.reference != "auto":
        return q.reference
    stored = ctx.estimate.stored_format if ctx.estimate else None
    if stored is None and ctx.facts is not None:
        stored = ctx.facts.stored_format
    return stored


def quality(ctx: OfferContext) -> Criterion:
    """Quality (R2, R10): the format the offer runs, judged on the locked criteria.

    - ``acceptable`` without a run when the offer runs the reference format unchanged (nothing
      to regress, CONTRACT.md), or when quality evidence for that very format (judged on this
      sheet's criteria hash) shows a regression within ``max_regression``;
    - ``exclude`` when such evidence shows a regression beyond it (any one such document);
    - ``to_confirm`` otherwise ("format not yet evaluated"). A PyTorch round-trip
      (``int8-roundtrip`` …) is a simulation of the format, never the kernel that runs: it is
      reported, it does not decide.
    """
    q = ctx.sheet.quality
    if q is None:
        return Criterion("to_confirm", "no quality criteria declared (R1)",
                         "declare quality: a frozen corpus, a metric and max_regression, then "
                         "`gpusizer quality lock SHEET`")
    reference = _reference_format(ctx)
    if ctx.card is None or ctx.estimate is None:   # F26: the card's rules are unknown
        return Criterion("to_confirm", f"card {ctx.offer.card!r} is unknown to the card table: "
                         "the format it runs is unknown (card rules can change it: bf16 → fp16 "
                         "below compute capability 8.0, fp8 / mxfp4 dequantized)",
                         "name the exact card model, then judge quality on the format it runs")
    runs = ctx.estimate.weights_format
    if reference is not None and runs == reference:
        return Criterion("acceptable", f"runs the reference format {reference} unchanged: nothing "
                         "to regress", None,
                         ({"document": "workload sheet", "version": "sheet quality block",
                           "scope": f"reference {reference}"},))
    from ..evidence import quality_result
    judged, proxies, aside = [], [], []
    for doc in ctx.evidence.of_kind("quality"):
        res = quality_result(doc)
        if res.reference_format != reference:
            continue
        if res.candidate_format != runs and res.proxy_for != runs:
            continue
        regression, why = _judged_on_sheet(res, q)
        if why is not None:
            aside.append(f"{doc.file or doc.document} set aside: {why}")
        elif res.candidate_format == runs:
            judged.append((doc, res, regression))
        else:
            proxies.append((doc, res, regression))

    def pct(x: float) -> str:
        return f"{100 * x:+.3g}%"

    failed = [(d, r, g) for d, r, g in judged if g > q.max_regression]
    if failed:
        doc, res, reg = failed[0]
        return Criterion("exclude", f"{runs} regresses {pct(reg)} on {q.metric} vs "
                         f"{reference} ({res.reference_value:.6g} → {res.candidate_value:.6g}): "
                         f"beyond the locked tolerance {q.max_regression:g}", None,
                         tuple(d.citation() for d, _, _ in failed))
    if judged:
        doc, res, reg = max(judged, key=lambda drg: drg[2])
        return Criterion("acceptable", f"{runs} within tolerance of {reference}: {q.metric} "
                         f"{res.reference_value:.6g} → {res.candidate_value:.6g}, regression "
                         f"{pct(reg)} <= {q.max_regression:g} "
                         f"({res.candidate_implementation})", None,
                         tuple(d.citation() for d, _, _ in judged))
    note = "".join(f"; {a}" for a in aside)
    if proxies:
        doc, res, reg = proxies[0]
        note += (f"; a {res.candidate_format} simulation regressed {pct(reg)} "
                 f"({'within' if reg <= q.max_regression else 'beyond'} tolerance) — a "
                 "round-trip in PyTorch, not the kernel that runs, so it does not decide")
    return Criterion("to_confirm", f"format {runs} not yet evaluated against the reference "
                     f"{reference or 'unknown'}{note}",
                     f"evaluate {runs} vs {reference} on the frozen corpus {q.corpus} "
                     f"({q.metric}, max_regression {q.max_regression:g}): `gpusizer quality "
                     f"run SHEET --candidate {runs}` after `gpusizer quality lock SHEET`",
                     tuple(d.citation() for d, _, _ in proxies))


def _judged_on_sheet(res, q) -> tuple[float, str | None]:
    """A quality document judged by the sheet's locked criteria, never by its own fields:
    ``(regression, None)`` with the regression recomputed from the two values in the direction of
    the sheet's metric, or ``(nan, why)`` when the document's metric, direction or tolerance is
    not the sheet's (it judged other criteria). lm-eval metrics take their direction from
    lm-eval's results file, which the document records."""
    from ..evidence.regression import direction_of, relative_regression
    if res.metric != q.metric:
        return float("nan"), f"its metric {res.metric!r} is not the sheet's {q.metric!r}"
    direction = res.direction if q.metric.startswith("lm_eval:") else direction_of(q.metric)
    if res.direction != direction:
        return float("nan"), (f"its direction {res.direction!r} is not {direction!r}, the "
                              f"sheet's metric {q.metric}'s")
    if res.max_regression != q.max_regression:
        return float("nan"), (f"its max_regression {res.max_regression!r} is not the sheet's "
                              f"{q.max_regression!r}")
    return relative_regression(res.reference_value, res.candidate_value, direction), None


def distribution(ctx: OfferContext) -> Criterion:
    """Distribution and server: placement, host RAM, storage, interconnect (R2, R9, R13)."""
    o, s = ctx.offer, ctx.sheet
    need_gpus = s.placement.gpus
    if o.cards < need_gpus:
        return Criterion("exclude", lot_words(o.cards, need_gpus), None, (_offer_doc(ctx),))
    missing, excl = [], []
    if need_gpus > 1:
        ok = [d for d in ctx.evidence.of_kind("placement") if _in_card_scope(d, ctx)]
        if any(d.result == "failed" for d in ok):
            return Criterion("exclude", "the multi-GPU placement failed on this card", None,
                             tuple(d.citation() for d in ok))
        if not any(d.result == "passed" for d in ok):
            missing.append(f"a verified {s.placement.strategy} placement over {need_gpus} GPUs "
                           "(two cards are not one memory space)")
    req = s.requirements
    ram_need = max(req.host_ram or 0, ctx.checkpoint_bytes or 0) or None
    held = _host_ram_held(ctx)
    if o.host_ram_bytes is None:
        need = max(ram_need or 0, held)
        missing.append("host RAM (undocumented)" + (f"; needed {fmt_bytes(need)}" if need
                                                     else ""))
    elif req.host_ram and o.host_ram_bytes < req.host_ram:
        excl.append(f"host RAM {fmt_bytes(o.host_ram_bytes)} < required {fmt_bytes(req.host_ram)}")
    elif held and o.host_ram_bytes < held:
        excl.append(f"host RAM {fmt_bytes(o.host_ram_bytes)} per node < the {fmt_bytes(held)} "
                    "the placement keeps there (offloaded states, memory.host_ram_bytes)")
    elif ram_need and o.host_ram_bytes < ram_need:
        missing.append(f"loading with host RAM {fmt_bytes(o.host_ram_bytes)} below the checkpoint "
                       f"{fmt_bytes(ram_need)} (memory-mapped safetensors: slower, confirm)")
    disk_need = max(req.storage or 0, ctx.checkpoint_bytes or 0) or None
    if o.storage_bytes is None:
        missing.append("storage (undocumented)" + (f"; needed {fmt_bytes(disk_need)}" if disk_need
                                                   else ""))
    elif disk_need and o.storage_bytes < disk_need:
        excl.append(f"storage {fmt_bytes(o.storage_bytes)} < needed {fmt_bytes(disk_need)} "
                    "(checkpoint bytes or the sheet's requirement)")
    if req.interconnect:
        if o.interconnect is None:
            missing.append(f"interconnect {req.interconnect} (undocumented)")
        elif o.interconnect.lower() != req.interconnect.lower():
            excl.append(f"interconnect {o.interconnect} where {req.interconnect} is required")
    basis = ("" if ctx.checkpoint_bytes is None else
              f" [needs: host RAM to load and disk = checkpoint {fmt_bytes(ctx.checkpoint_bytes)} "
              f"({ctx.checkpoint_source}): safetensors are memory-mapped, every page passes "
              "through host memory once; or the sheet's requirements if larger]")
    if ctx.checkpoint_bytes is None:   # F4: nothing to compare host RAM and storage with
        missing.append("the checkpoint's size (" + (ctx.checkpoint_source or "unknown")
                       + "): host RAM and storage cannot be judged sufficient")
    if excl:
        return Criterion("exclude", "; ".join(excl) + basis, None, (_offer_doc(ctx),))
    if missing:
        return Criterion("to_confirm", "not yet verified: " + "; ".join(m.split(" (")[0]
                                                                         for m in missing) + basis,
                         "confirm " + "; ".join(missing), (_offer_doc(ctx),))
    return Criterion("acceptable", "placement, host RAM, storage and interconnect documented and "
                     "sufficient" + basis, None, (_offer_doc(ctx),))


def _host_ram_held(ctx: OfferContext) -> int:
    """Host RAM per node the placement holds during the steps (offloaded master copy, gradients,
    states, parameter shards: ``memory.training``, × the GPUs of one node), 0 without offload.
    Loading is judged on the checkpoint's bytes beside it; paged optimizer states move to host
    RAM only under pressure and are not held."""
    est = ctx.estimate
    if est is None or est.training is None:
        return 0
    placement = ctx.sheet.placement
    return est.training.host_bytes_per_gpu * (placement.gpus // placement.nodes)


def _days_after(day: dt.date, days: float) -> dt.date | None:
    """``day + days`` (the day after the work ends), or None past the calendar's end
    (9999-12-31, the open-ended ``available_until``)."""
    try:
        return day + dt.timedelta(days=float(days))
    except OverflowError:
        return None


def budget(ctx: OfferContext, today: dt.date | None = None) -> Criterion:
    """Budget and schedule: total USD vs max_usd, days, availability window vs deadline."""
    b, o = ctx.sheet.budget, ctx.offer
    if b is None:
        return Criterion("to_confirm", "no budget or schedule declared",
                         "declare budget.max_usd, budget.days and budget.deadline")
    excl, missing = [], []
    price = ctx.total_usd
    if price is None:
        missing.append("the lot's total price for the campaign")
    elif b.max_usd is not None and price > b.max_usd:
        excl.append(f"total {price:.2f} USD > max {b.max_usd:.2f} USD")
    if b.days is not None and o.days is not None and o.days < b.days:
        excl.append(f"the lot runs {o.days:g} days < {b.days:g} days needed")
    need_days = b.days or o.days
    if o.available_from is None or o.available_until is None:
        missing.append("an availability window (duration still hypothetical)")
    elif need_days is None:
        missing.append("the days the campaign needs (budget.days or the offer's days), to check "
                       f"the window {o.available_from}..{o.available_until}")
    else:
        start = max(o.available_from, today or o.available_from)
        end = _days_after(start, need_days)
        last = None if end is None else end - dt.timedelta(days=1)   # the last day of work
        if last is None or last > o.available_until:
            excl.append(f"window {o.available_from}..{o.available_until} is shorter than "
                        f"{need_days:g} days")
        if b.deadline is not None and (last is None or last > b.deadline):
            excl.append(f"work would end {end or 'after 9999-12-31'} after the deadline "
                        f"{b.deadline}")
    if o.spot:
        missing.append("an uninterrupted schedule (spot lot: can be interrupted)")
    if excl:
        return Criterion("exclude", "; ".join(excl), None, (_offer_doc(ctx),))
    if missing:
        reason = f"total {price:.2f} USD" if price is not None else "price unknown"
        if b.max_usd is not None and price is not None:
            reason += f" <= {b.max_usd:.2f} USD"
        return Criterion("to_confirm", reason + "; " + "; ".join(missing),
                         "document " + "; ".join(missing), (_offer_doc(ctx),))
    return Criterion("acceptable", f"total {price:.2f} USD within the limit; window covers "
                     f"{need_days:g} days before the deadline", None, (_offer_doc(ctx),))


CRITERIA = {"workload": workload, "compatibility": compatibility, "memory": memory,
            "quality": quality, "distribution": distribution, "budget": budget}
