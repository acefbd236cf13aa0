"""One change at a time after an overload (R10, R13): ``gpusizer alternatives SHEET``.

For every offer whose memory criterion is ``exclude`` — and every offer whose estimated device
peak + margin exceeds its card (memory ``to_confirm``, labelled so) — each single change that
would make the workload fit: a bigger card, a shorter cache (only when
``inference.length_negotiable``), a smaller microbatch with more accumulation (same effective
batch), a lower-precision format, gradient checkpointing — with its new peak
(``estimate_memory`` re-run on the one-change sheet, against the card) and what it puts at risk
(quality, coverage, throughput). Nothing is applied: the sheet stays the user's; a change that
does not fit, or cannot be tried, is listed with why.

fits is the fit rule's judgement (``memory.fit_rule.judge_fit``): device_peak_bytes + margin ≤
device_bytes (CONTRACT.md ``margin``), or for a serving engine its pool holds every required
sequence; an estimate with items of unknown size cannot say "fits" (``fits`` is None) unless its
known part already does not fit (False). No torch here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..catalog.types import Card
from ..errors import SheetError
from ..formats import FORMATS, weight_format
from ..memory.estimate import estimate_memory
from ..memory.fit_rule import FitJudgement, judge_on_card
from ..memory.items import MemoryEstimate
from ..model.facts import ModelFacts
from ..sheet import Sheet, canonical_json, required_dimensions
from ..units import fmt_bytes
from .criteria import OfferContext, quality
from .search import largest_fitting
from .verdict import OfferDecision

if TYPE_CHECKING:
    from .results import PlanResult

__all__ = ["Fit", "Alternative", "OfferAlternatives", "AlternativesResult", "check_fit", "FitCache",
           "offer_alternatives", "plan_alternatives", "LOWER_FORMATS"]

LOWER_FORMATS: dict[str, tuple[str, ...]] = {n: r.lower for n, r in FORMATS.items() if r.lower}
"""Lower-precision formats tried, highest precision first: each record's ``lower``
(``gpusizer.formats``; bitsandbytes int8 / nf4 are the formats transformers produces at load
from a 16/32-bit checkpoint)."""


@dataclass(frozen=True)
class Fit:
    """A one-change sheet against one card.

    Attributes:
        estimate: the estimate on the card (None when the sheet cannot be estimated).
        device_bytes, margin_bytes: the card's nvidia-smi total and the sheet's margin.
        fits: True / False, or None when an item of unknown size leaves the peak unknown.
        reason: the comparison in words.
        judgement: the fit rule's judgement (None when the sheet cannot be estimated).
    """

    estimate: MemoryEstimate | None
    device_bytes: int
    margin_bytes: int
    fits: bool | None
    reason: str
    judgement: FitJudgement | None = None


@dataclass(frozen=True)
class Alternative:
    """One single change that makes the workload fit (never applied).

    Attributes:
        change: ``bigger_card`` | ``shorter_cache`` | ``smaller_microbatch`` |
            ``lower_precision`` | ``gradient_checkpointing``.
        summary: the change in words.
        sheet_changes: dotted sheet keys → new values (empty for a card change).
        card: the card the new peak is computed against; device_bytes its total.
        peak_bytes, device_peak_bytes: the one-change sheet's estimate on that card.
        fits: True, or None when unknown items leave it open; reason: the comparison.
        risks: ``quality`` / ``coverage`` / ``throughput`` (and ``budget`` for a card) → text.
        quality_state: the quality criterion on the one-change sheet (lower precision), else None.
        offers: catalog offers with that card (bigger card).
    """

    change: str
    summary: str
    sheet_changes: dict
    card: str
    device_bytes: int
    peak_bytes: int | None
    device_peak_bytes: int | None
    fits: bool | None
    reason: str
    risks: dict[str, str]
    quality_state: str | None = None
    offers: tuple[str, ...] = ()


@dataclass(frozen=True)
class OfferAlternatives:
    """An offer that does not fit, its single changes, and the changes that do not help.

    ``memory_state`` is ``exclude`` (a certain overflow) or ``to_confirm`` (the estimated
    device peak + margin exceeds the card: an estimated overload, not a proof)."""

    offer_id: str
    card: str | None
    memory_reason: str
    alternatives: tuple[Alternative, ...]
    not_offered: tuple[tuple[str, str], ...]
    memory_state: str = "exclude"


@dataclass
class AlternativesResult:
    """``gpusizer alternatives``: the plan it starts from and each excluded offer's changes."""

    plan: object
    offers: list[OfferAlternatives] = field(default_factory=list)


def check_fit(sheet: Sheet, facts: ModelFacts | None, card: Card) -> Fit:
    """Estimate ``sheet`` on ``card`` and say whether it fits with the sheet's margin."""
    device = int(card.device_bytes.value)
    margin = sheet.margin.of(device)
    try:
        est = estimate_memory(sheet, facts, card=card)
    except SheetError as exc:
        return Fit(None, device, margin, False, f"cannot be estimated: {exc.reason}")
    judgement = judge_on_card(est, card, sheet.margin)
    return Fit(est, device, margin, _FITS[judgement.state], judgement.reason, judgement)


_FITS = {"fits": True, "does_not_fit": False, "borderline": None, "unknown": None}
"""The fit rule's state as ``Fit.fits``."""

FitCheck = Callable[[Sheet, "ModelFacts | None", Card], "Fit"]
"""``check_fit``'s signature: a one-change sheet's fit on a card."""


class FitCache:
    """:func:`check_fit` remembered per distinct (sheet, card): one estimate per card table
    entry and changed sheet for a whole plan, whatever the number of offers (issue 11 F12:
    ``alternatives`` re-estimated every larger card for every offer, quadratic in offers).

    The key is the sheet's canonical JSON (``sheet.canonical_json``: every field, defaults
    filled in) and the card's name; ``facts`` is the plan's, the same for every call."""

    def __init__(self) -> None:
        self._fits: dict[tuple[str, str], Fit] = {}
        self._json: dict[int, tuple[Sheet, str]] = {}  # the sheet is kept: its id stays its own

    def __call__(self, sheet: Sheet, facts: ModelFacts | None, card: Card) -> Fit:
        if id(sheet) not in self._json:
            self._json[id(sheet)] = (sheet, canonical_json(sheet))
        key = (self._json[id(sheet)][1], card.name)
        if key not in self._fits:
            self._fits[key] = check_fit(sheet, facts, card)
        return self._fits[key]


_SPELLED_AN = frozenset("AEFHILMNORSX")
"""Initials said with a vowel sound when spelled out: an A100, an H200, an RTX 5090, an L4."""


def _article(name: str) -> str:
    """``a`` or ``an`` before a card name: by its spelled initial for an acronym or model
    number (``RTX``, ``H100``, ``T4``), by its first letter for a word (``a Radeon``)."""
    spelled = len(name) > 1 and (name[1].isupper() or name[1].isdigit())
    first = name[:1].upper()
    vowel = first in _SPELLED_AN if spelled else first in "AEIOU"
    return "an" if vowel else "a"


def _alt(change: str, summary: str, sheet_changes: dict, card: Card, fit: Fit,
         risks: dict[str, str], **kw) -> Alternative:
    est = fit.estimate
    return Alternative(change, summary, sheet_changes, card.name, fit.device_bytes,
                       est.peak_bytes if est else None, est.device_peak_bytes if est else None,
                       fit.fits, fit.reason, risks, **kw)


def _bigger_card(sheet, facts, d: OfferDecision, decisions, runs: str, check: FitCheck):
    from ..catalog.cards import all_cards
    here = int(d.card.device_bytes.value)
    bigger = sorted((c for c in all_cards() if int(c.device_bytes.value) > here),
                    key=lambda c: int(c.device_bytes.value))
    last = None
    for c in bigger:
        fit = check(sheet, facts, c)
        last = (c, fit)
        if fit.fits is False:
            continue
        fmt = fit.estimate.weights_format if fit.estimate else runs
        offers = tuple(x.offer.id for x in decisions if x.card is not None
                       and x.card.name == c.name)
        larger = [x for x in decisions if x.card is not None and x.offer.id not in offers
                  and int(x.card.device_bytes.value) > here]
        fits_by_card = {x.card.name: check(sheet, facts, x.card).fits
                        for x in {x.card.name: x for x in larger}.values()}
        fitting = [f"{x.offer.id} ({x.card.name})" for x in larger
                   if fits_by_card[x.card.name] is True]
        risks = {"quality": "none: same format" if fmt == runs else
                 f"the card's rules run {fmt} instead of {runs}: quality to confirm",
                 "coverage": "none: the same workload",
                 "throughput": "another card: speed differs (prices say nothing about speed)",
                 "budget": (("catalog offers with this card: " + ", ".join(offers)) if offers
                            else "no offer in the catalog has this card")
                           + ("; catalog offers on other larger cards that fit: "
                              + ", ".join(fitting) if fitting else "")}
        if c.device_bytes.status != "confirmed":
            risks["coverage"] += ("; the card's device bytes are to confirm "
                                  f"({c.device_bytes.source})")
        return _alt("bigger_card", f"{_article(c.name)} {c.name} "
                    f"({fmt_bytes(int(c.device_bytes.value))}) instead of the {d.card.name}",
                    {}, c, fit, risks, offers=offers), None
    if last is None:
        return None, f"no card in the card table is larger than the {d.card.name}"
    return None, (f"no single card in the card table fits; the largest, {last[0].name}: "
                  f"{last[1].reason}")


def _shorter_cache(sheet, facts, card, check: FitCheck):
    inf = sheet.inference
    if inf is None or facts is None:
        return None, "no inference block with an architecture: there is no KV cache to shorten"
    if not inf.length_negotiable:
        return None, ("inference.length_negotiable is false: the required length "
                      f"{inf.tokens_per_sequence} tokens stays (R1, R10)")
    total = inf.tokens_per_sequence

    def shape(t: int) -> tuple[int, int]:
        new = max(1, round(t * inf.new_tokens / total))
        return max(1, t - new), new

    def one(t: int) -> Sheet:
        p, n = shape(t)
        return sheet.model_copy(update={"inference": inf.model_copy(
            update={"prompt_tokens": p, "new_tokens": n})})

    best = largest_fitting(2, total - 1, lambda t: check(one(t), facts, card).fits is True)
    if best is None:
        return None, "not even 2 tokens per sequence fit"
    p, n = shape(best)
    fit = check(one(best), facts, card)
    return _alt("shorter_cache", f"{best} tokens per sequence (prompt {p} + new {n}) instead of "
                f"{total} ({inf.prompt_tokens} + {inf.new_tokens}), same prompt:new ratio",
                {"inference.prompt_tokens": p, "inference.new_tokens": n}, card, fit,
                {"quality": f"outputs longer than {n} tokens are cut",
                 "coverage": f"prompts over {p} tokens are no longer served: a shorter context "
                             "is not the same need unless it really is negotiable (R1)",
                 "throughput": "none (less work per sequence)"}), None


def _smaller_microbatch(sheet, facts, card, check: FitCheck):
    t = sheet.training
    if t is None:
        return None, "inference: there is no microbatch (concurrency is the workload, R1)"
    effective = t.microbatch * t.gradient_accumulation
    candidates = [m for m in range(t.microbatch - 1, 0, -1) if effective % m == 0]
    if not candidates:
        return None, "microbatch is already 1"
    unknown, last = None, ""
    for m in candidates:  # largest first: the least extra accumulation
        one = sheet.model_copy(update={"training": t.model_copy(update={
            "microbatch": m, "gradient_accumulation": effective // m})})
        fit = check(one, facts, card)
        if fit.fits is True:
            return _alt("smaller_microbatch", f"microbatch {m} × accumulation {effective // m} "
                        f"instead of {t.microbatch} × {t.gradient_accumulation} (effective batch "
                        f"{effective} kept)", {"training.microbatch": m,
                                               "training.gradient_accumulation": effective // m},
                        card, fit,
                        {"quality": f"none expected: the same effective batch {effective}, "
                                    "updates stay comparable (R12); sums differ in rounding only",
                         "coverage": "none: the same sequences and sequence length",
                         "throughput": f"{effective // m} micro-steps per update instead of "
                                       f"{t.gradient_accumulation}: smaller matmuls, slower "
                                       "steps"}), None
        if fit.fits is None:
            unknown = fit.reason
        last = fit.reason
    if unknown:
        return None, f"cannot tell: {unknown}"
    return None, f"even microbatch {candidates[-1]} does not fit: {last}"


def _lower_precision(sheet, facts, card, ctx_of, runs: str, check: FitCheck):
    task = sheet.task
    if task == "full":
        return [], ["full fine-tuning trains the weights themselves: a lower-precision base is "
                    "another task"]
    if task == "qlora":
        return [], ["qlora already runs a 4-bit base"]
    tries = LOWER_FORMATS.get(runs, ())
    if not tries:
        return [], [f"{runs} has no lower-precision format gpusizer sizes at load"]
    out, why = [], []
    cc = card.compute_capability.value if card is not None else None
    cc = tuple(cc) if cc is not None else None
    chosen_bits: set[int] = set()
    for fmt in tries:
        rec = weight_format(fmt)
        # one step per width: the first successor of that width the card runs natively (bf16
        # where the card has it, else fp16)
        native = [t for t in tries if weight_format(t).bits == rec.bits
                  and weight_format(t).runs_natively(cc)]
        if rec.bits in chosen_bits or (native and fmt != native[0]):
            continue
        chosen_bits.add(rec.bits)
        # one change: the base's format. LoRA stays LoRA on the lower-precision frozen base
        # (switching to task qlora would also bring prepare_model_for_kbit_training's fp32
        # upcast, a second change that raises the activations)
        update: dict = {"weights": fmt}
        one = sheet.model_copy(update=update)
        fit = check(one, facts, card)
        if fit.fits is False or fit.estimate is None:
            why.append(f"{fmt}: {fit.reason}")
            continue
        crit = quality(ctx_of(one, fit.estimate))
        risks = {"quality": f"{crit.state}: {crit.reason}"
                            + (f" — {crit.condition}" if crit.condition else ""),
                 "coverage": "none: the same workload",
                 "throughput": weight_format(fmt).throughput}
        changes = {k: v for k, v in update.items()}
        out.append(_alt("lower_precision", f"weights {fmt} instead of {runs}", changes, card, fit,
                        risks, quality_state=crit.state))
    return out, why


def _checkpointing(sheet, facts, card, check: FitCheck):
    t = sheet.training
    if t is None:
        return None, "inference: no activations kept for a backward pass"
    if t.checkpoint_mode == "full" and t.checkpointing.every == 1:
        return None, "gradient checkpointing is already on"
    one = sheet.model_copy(update={"training": t.model_copy(update={
        "gradient_checkpointing": True, "checkpointing": type(t.checkpointing)(
            offload=t.checkpointing.offload)})})
    fit = check(one, facts, card)
    if fit.fits is not True:
        return None, fit.reason
    return _alt("gradient_checkpointing", "gradient checkpointing on",
                {"training.gradient_checkpointing": True}, card, fit,
                {"quality": "none: the same computation",
                 "coverage": "none: the same workload",
                 "throughput": "each layer's forward runs again in backward: about one more "
                               "forward per step (≈ +1/3 compute)"}), None


def offer_alternatives(sheet: Sheet, facts: ModelFacts | None, d: OfferDecision,
                       decisions: list[OfferDecision], ctx: OfferContext,
                       memory_state: str = "exclude",
                       check: FitCheck | None = None) -> OfferAlternatives:
    """The single changes for one offer that does not fit (its card must be known); ``check``
    sizes each changed sheet (a :class:`FitCache` shared by a plan's offers; default a new
    one)."""
    check = check or FitCache()
    card = d.card
    reason = d.criteria["memory"].reason
    if card is None:
        return OfferAlternatives(d.offer.id, None, reason, (), (("all", "the card is unknown"),),
                                 memory_state)
    runs = d.estimate.weights_format if d.estimate else sheet.weights

    def ctx_of(one: Sheet, est: MemoryEstimate) -> OfferContext:
        return OfferContext(one, facts, d.offer, card, est, ctx.evidence, ctx.total_usd,
                            ctx.days, ctx.checkpoint_bytes, required=ctx.required)

    alts, why = [], []
    for name, fn in (("bigger_card", lambda: _bigger_card(sheet, facts, d, decisions, runs,
                                                          check)),
                     ("shorter_cache", lambda: _shorter_cache(sheet, facts, card, check)),
                     ("smaller_microbatch", lambda: _smaller_microbatch(sheet, facts, card,
                                                                        check))):
        alt, no = fn()
        alts += [alt] if alt else []
        why += [(name, no)] if no else []
    lp, lp_why = _lower_precision(sheet, facts, card, ctx_of, runs, check)
    alts += lp
    why += [("lower_precision", w) for w in lp_why]
    alt, no = _checkpointing(sheet, facts, card, check)
    alts += [alt] if alt else []
    why += [("gradient_checkpointing", no)] if no else []
    return OfferAlternatives(d.offer.id, card.name, reason, tuple(alts), tuple(why),
                             memory_state)


def plan_alternatives(plan: PlanResult) -> AlternativesResult:
    """List single changes for each offer of ``plan`` whose memory is ``exclude`` or whose
    estimated peak does not fit; reads no file."""
    sheet = plan.sheet
    result = AlternativesResult(plan)
    check = FitCache()  # one estimate per distinct (changed sheet, card) for all offers
    for d in plan.decisions:
        state = d.criteria["memory"].state
        if state != "exclude":
            # an estimated overload (peak + margin > device, not a certain lower bound) leaves
            # memory to_confirm; its alternatives are listed too, labelled as such
            if d.fit is None or d.fit.state != "does_not_fit":
                continue
        ctx = OfferContext(sheet, plan.facts, d.offer, d.card, d.estimate, plan.evidence,
                           d.total_usd, d.days, plan.checkpoint_bytes,
                           required=required_dimensions(sheet))
        result.offers.append(offer_alternatives(sheet, plan.facts, d, plan.decisions, ctx,
                                                state, check))
    return result
