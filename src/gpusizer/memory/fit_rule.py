"""One fit rule: does one GPU's estimate fit a card with the sheet's margin (CONTRACT.md
``estimated_fit`` and ``headroom_bytes``).

Every caller asks this rule and only maps its answer: the memory criterion (to a state with
evidence), ``gpusizer fit`` (a binary search), ``alternatives`` (each one-change sheet), ranking
(the headroom) and ``estimate --card``. The rule, in order:

1. a serving engine that takes its pool at start (``MemoryEstimate.pool``): the engine's own
   condition (``Engine.pool_condition``). It refuses to start → ``does_not_fit``, certain;
2. the certain lower bound exceeds the device (``lower_bound_bytes > device_bytes``) →
   ``does_not_fit``, certain (no margin: the bound is already an overflow);
3. a pool that does not hold every required sequence at the required length → ``does_not_fit``;
   with no pool, ``known + margin > device`` → ``does_not_fit``, where ``known`` is the device
   peak, or the largest known part of a phase when an item is unknown (a lower bound of it);
4. an item of unknown size, or no phase at all (weights only) → ``unknown``;
5. the device peak's error interval (``memory.intervals``, widened to contain the peak itself)
   plus the margin straddles the device (``low + margin <= device < high + margin``) →
   ``borderline``, whichever side the peak itself lies on (a pool's peak is its budget: exact);
6. otherwise ``fits``: ``device_peak + margin <= device``, or the pool holds the sequences;
   ``does_not_fit`` when ``device_peak + margin > device``.

``headroom_bytes`` = device − margin − device peak (from the known part when an item is
unknown: then an upper bound, and only given when the judgement is ``does_not_fit``); for a pool
it is the pool's KV bytes minus the KV bytes the required sequences need (the engine's
utilization setting is its margin). None when the judgement is ``unknown``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..units import fmt_bytes
from .engines import ENGINES
from .items import MemoryEstimate

if TYPE_CHECKING:
    from ..catalog.types import Card
    from ..sheet import Margin

__all__ = ["FitState", "FitJudgement", "judge_fit", "judge_on_card", "judge_lot", "lot_words"]

FitState = Literal["fits", "does_not_fit", "borderline", "unknown"]


@dataclass(frozen=True)
class FitJudgement:
    """Whether one GPU's estimate fits its card, and by how much (CONTRACT.md).

    Attributes:
        state: ``fits``, ``does_not_fit`` or ``unknown`` (an item it needs is unknown).
        certain: True when the judgement is proven, not estimated: a certain lower bound that
            already exceeds the device, or an engine that refuses to start.
        device_bytes: the card's total (nvidia-smi ``memory.total``), bytes.
        margin_bytes: the sheet's margin on this card, bytes (a pool's judgement does not use
            it: the engine's utilization setting is its margin).
        headroom_bytes: device − margin − device peak, or for a pool its KV bytes minus the KV
            bytes the required sequences need; negative when it does not fit; None when
            ``unknown``.
        reason: the comparison in one line, with the figures.
        unknown_items: the live items of unknown size the judgement met.
    """

    state: FitState
    certain: bool
    device_bytes: int
    margin_bytes: int
    headroom_bytes: int | None
    reason: str
    unknown_items: tuple[str, ...] = ()


def _unknown_tail(unknown: tuple[str, ...]) -> str:
    return " — an upper bound: " + ", ".join(unknown) + " unknown" if unknown else ""


def judge_fit(estimate: MemoryEstimate, *, device_bytes: int,
              margin_bytes: int) -> FitJudgement:
    """Judge ``estimate`` (one GPU, under a card's rules) against a card of ``device_bytes``.

    Args:
        estimate: the per-GPU estimate made with the card (``estimate_memory(..., card=)``).
        device_bytes: the card's total, bytes.
        margin_bytes: the sheet's margin on that card, bytes (``Margin.of(device_bytes)``).

    Returns:
        A :class:`FitJudgement` (the rule is in the module's docstring).
    """
    est, device, margin = estimate, device_bytes, margin_bytes
    unknown = tuple(sorted({n for p in est.phases for n in p.unknown_items}))

    def judged(state: FitState, headroom: int | None, reason: str,
               certain: bool = False) -> FitJudgement:
        return FitJudgement(state, certain, device, margin, headroom, reason, unknown)

    covers = est.lower_bound_covers if est.phases else "weights alone"
    overflow = (f"{covers} = {fmt_bytes(est.lower_bound_bytes)} per GPU exceed the device's "
                f"{fmt_bytes(device)} (a certain lower bound)")
    pool = est.pool
    if pool is not None:
        condition = ENGINES[pool.engine].pool_condition(pool)
        headroom = (None if pool.kv_cache_bytes is None
                    else pool.kv_cache_bytes - pool.required_kv_bytes)
        if not condition.starts:
            return judged("does_not_fit", headroom, condition.reason, certain=True)
        if est.lower_bound_bytes > device:
            return judged("does_not_fit", headroom, overflow, certain=True)
        if not condition.holds:
            return judged("does_not_fit", headroom, condition.reason + _unknown_tail(unknown))
        if unknown:
            return judged("unknown", None, condition.reason + _unknown_tail(unknown))
        return judged("fits", headroom, condition.reason)
    peak = est.device_peak_bytes
    known = max([est.lower_bound_bytes, *(p.known_bytes for p in est.phases)])
    needed = known if peak is None else peak
    headroom = device - margin - needed
    if est.lower_bound_bytes > device:
        return judged("does_not_fit", headroom, overflow, certain=True)
    if not est.phases:
        text = (f"only the weights are known (the peak is unknown): weights only {fmt_bytes(est.weights_bytes)}, "
                f"indicative envelope (weights + reserve {fmt_bytes(est.reserve_bytes)}) "
                f"{fmt_bytes(est.envelope_bytes)} vs device {fmt_bytes(device)}; context, "
                "concurrency and working memory are not in the calculation")
        if needed + margin > device:
            return judged("does_not_fit", headroom, text)
        return judged("unknown", None, text)
    if peak is None:
        text = (f"only a lower bound is known: the known part {fmt_bytes(known)} per GPU + "
                f"margin {fmt_bytes(margin)} {'>' if needed + margin > device else '<='} device "
                f"{fmt_bytes(device)}; items of unknown size: " + ", ".join(unknown))
        if needed + margin > device:
            return judged("does_not_fit", headroom, text)
        return judged("unknown", None, text)
    fits = peak + margin <= device
    text = (f"estimated device peak {fmt_bytes(peak)} + margin {fmt_bytes(margin)} "
            f"{'<=' if fits else '>'} device {fmt_bytes(device)}; conservative envelope "
            f"{fmt_bytes(est.conservative_envelope_bytes)}")
    interval = est.device_peak_interval_bytes
    if interval is not None:
        low, high = min(interval[0], peak), max(interval[1], peak)
        if low + margin <= device < high + margin:
            return judged("borderline", headroom, text + f"; its nominal 90 % range "
                          f"[{fmt_bytes(low)}, {fmt_bytes(high)}] + margin straddles the device")
    return judged("fits" if fits else "does_not_fit", headroom, text)


def judge_on_card(estimate: MemoryEstimate, card: Card, margin: Margin) -> FitJudgement:
    """:func:`judge_fit` on ``card``'s device bytes with the sheet's ``margin``.

    Raises:
        TypeError: the card's device bytes are unknown (``card.device_bytes.value`` is None).
    """
    if card.device_bytes.value is None:
        raise TypeError(f"card {card.name} has no known device bytes to judge a fit against")
    device = int(card.device_bytes.value)
    return judge_fit(estimate, device_bytes=device, margin_bytes=margin.of(device))


def lot_words(cards: int, gpus: int) -> str:
    """``the lot has 4 cards; the placement needs 8`` (why a short lot's fit is unknown)."""
    return f"the lot has {cards} card{'' if cards == 1 else 's'}; the placement needs {gpus}"


def judge_lot(judgement: FitJudgement, *, cards: int, gpus: int) -> FitJudgement:
    """A per-GPU judgement applied to a lot of ``cards`` cards for a placement of ``gpus``.

    The per-GPU figures are those of a ``gpus``-GPU placement; on fewer cards the workload is
    split otherwise and nothing is known of its per-GPU memory, so the fit is ``unknown``
    (CONTRACT.md: an item it needs is unknown; docs/contract-extensions.md) with no headroom.
    A lot with at least ``gpus`` cards keeps ``judgement``.
    """
    if cards >= gpus:
        return judgement
    return FitJudgement("unknown", False, judgement.device_bytes, judgement.margin_bytes, None,
                        lot_words(cards, gpus) + " (the per-GPU figures are those of "
                        f"{gpus} GPUs)", judgement.unknown_items)
