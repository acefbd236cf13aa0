"""Verdict and ranking (R3): selected = all six acceptable; conditional = no exclude.

Selected offers are ranked by total package cost, then useful memory margin (the fit rule's
``headroom_bytes``), then documented schedule (earliest start). Conditional offers get a
``provisional_rank`` by estimated headroom, then cost — labelled provisional wherever shown.
Prices say nothing about speed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..catalog.types import Card, Offer
from ..memory.fit_rule import FitJudgement
from ..memory.items import MemoryEstimate
from .criteria import Criterion
from .unknown_card import UnknownCardFit

__all__ = ["Verdict", "OfferDecision", "verdict_of", "rank_offers", "useful_margin_bytes"]

Verdict = Literal["selected", "conditional", "excluded"]


@dataclass
class OfferDecision:
    """One offer's six criteria, verdict and rank; ``fit`` is the fit rule's judgement of its
    per-card estimate (None when the card or the estimate is unknown)."""

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


def useful_margin_bytes(d: OfferDecision) -> int | None:
    """Memory left per GPU once the workload is served: the fit judgement's
    ``headroom_bytes`` (device − margin − device peak; for a serving engine's pool, its KV bytes
    minus those the required sequences need), None when unknown (``memory.fit_rule``)."""
    return None if d.fit is None else d.fit.headroom_bytes


def rank_offers(decisions: list[OfferDecision]) -> None:
    """Set ``verdict``, ``rank`` (selected) and ``provisional_rank`` (conditional) in place."""
    for d in decisions:
        d.verdict = verdict_of(d.criteria)
    inf = float("inf")
    margin = {id(d): useful_margin_bytes(d) for d in decisions}
    selected = [d for d in decisions if d.verdict == "selected"]
    selected.sort(key=lambda d: (d.total_usd if d.total_usd is not None else inf,
                                 -(margin[id(d)] or 0),
                                 d.offer.available_from.toordinal() if d.offer.available_from
                                 else inf))
    for i, d in enumerate(selected, 1):
        d.rank = i
    conditional = [d for d in decisions if d.verdict == "conditional"]
    conditional.sort(key=lambda d: (-margin[id(d)] if margin[id(d)] is not None else inf,
                                    d.total_usd if d.total_usd is not None else inf))
    for i, d in enumerate(conditional, 1):
        d.provisional_rank = i
