"""Verdict and ranking (R3): selected = all six acceptable; conditional = no exclude.

Selected offers are ranked by total package cost, then useful memory margin (the fit rule's
``headroom_bytes``, larger first), then documented schedule (earliest start). Conditional offers
whose ``estimated_fit`` is ``fits`` get a ``provisional_rank`` in the same order — labelled
provisional wherever shown; other offers get none. The offers are then listed (CONTRACT.md
"Meanings"): selected by rank, conditional by provisional rank, the other conditional offers,
then excluded ones (each of the last two by total cost). Prices say nothing about speed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..catalog.types import Card, Offer
from ..memory.fit_rule import FitJudgement
from ..memory.items import MemoryEstimate
from .criteria import Criterion
from .unknown_card import UnknownCardFit

__all__ = ["Verdict", "OfferDecision", "verdict_of", "rank_offers", "useful_margin_bytes",
           "contract_order"]

Verdict = Literal["selected", "conditional", "excluded"]


@dataclass
class OfferDecision:
    """One offer's six criteria, verdict and rank; ``fit`` is the fit rule's judgement of its
    per-card estimate (None when the card or the estimate is unknown; ``unknown`` for a lot with
    fewer cards than the placement, ``memory.fit_rule.judge_lot``)."""

    offer: Offer
    card: Card | None
    criteria: dict[str, Criterion]
    estimate: MemoryEstimate | None
    total_usd: float | None
    days: float | None
    verdict: Verdict = "conditional"
    rank: int | None = None
    provisional_rank: int | None = None
    card_note: str | None = None
    fit: FitJudgement | None = None
    unknown_card: UnknownCardFit | None = None
    """For a card the table does not decide: the fit at the variants' memory or the catalog's
    claim (``decision.unknown_card``); ``fit`` stays None."""


def verdict_of(criteria: dict[str, Criterion]) -> Verdict:
    """``selected`` when all six are acceptable, ``excluded`` on any exclude, else conditional."""
    states = [c.state for c in criteria.values()]
    if "exclude" in states:
        return "excluded"
    if all(s == "acceptable" for s in states):
        return "selected"
    return "conditional"


def judgement_of(d: OfferDecision) -> FitJudgement | None:
    """The fit rule's answer the offer's ``estimated_fit`` shows: its card's, or for a card the
    table does not decide, the one at the variants' memory or the catalog's claim."""
    if d.fit is not None:
        return d.fit
    return d.unknown_card.judgement if d.unknown_card is not None else None


def useful_margin_bytes(d: OfferDecision) -> int | None:
    """Memory left per GPU once the workload is served: the fit judgement's
    ``headroom_bytes`` (device − margin − device peak; for a serving engine's pool, its KV bytes
    minus those the required sequences need), None when unknown (``memory.fit_rule``)."""
    fit = judgement_of(d)
    return None if fit is None else fit.headroom_bytes


def _r3_key(d: OfferDecision, margin: int | None) -> tuple[float, float, float]:
    """R3's order: total cost, then useful margin (larger first), then schedule (earliest)."""
    inf = float("inf")
    return (d.total_usd if d.total_usd is not None else inf,
            -margin if margin is not None else inf,
            d.offer.available_from.toordinal() if d.offer.available_from else inf)


def _fits(d: OfferDecision) -> bool:
    fit = judgement_of(d)
    return fit is not None and fit.state == "fits"


def contract_order(decisions: list[OfferDecision]) -> list[OfferDecision]:
    """The offers in CONTRACT.md's order: selected by ``rank``, conditional by
    ``provisional_rank``, the other conditional offers, then excluded ones (each of the last two
    by total cost, then catalog order). Needs :func:`rank_offers` to have run."""
    inf = float("inf")

    def key(ix: tuple[int, OfferDecision]) -> tuple[int, float, int]:
        i, d = ix
        cost = d.total_usd if d.total_usd is not None else inf
        if d.rank is not None:
            return (0, d.rank, i)
        if d.provisional_rank is not None:
            return (1, d.provisional_rank, i)
        return (2 if d.verdict == "conditional" else 3, cost, i)

    return [d for _, d in sorted(enumerate(decisions), key=key)]


def rank_offers(decisions: list[OfferDecision]) -> None:
    """Set ``verdict``, ``rank`` (selected) and ``provisional_rank`` (conditional offers
    estimated to fit), then reorder ``decisions`` in place by :func:`contract_order`."""
    for d in decisions:
        d.verdict = verdict_of(d.criteria)
    margin = {id(d): useful_margin_bytes(d) for d in decisions}
    selected = [d for d in decisions if d.verdict == "selected"]
    selected.sort(key=lambda d: _r3_key(d, margin[id(d)]))
    for i, d in enumerate(selected, 1):
        d.rank = i
    fitting = [d for d in decisions if d.verdict == "conditional" and _fits(d)]
    fitting.sort(key=lambda d: _r3_key(d, margin[id(d)]))
    for i, d in enumerate(fitting, 1):
        d.provisional_rank = i
    decisions[:] = contract_order(decisions)
