"""A campaign's decision (R15, CONTRACT.md ``campaign``): which variants each offer covers and the
cheapest offer that covers them all.

An offer *covers* a variant when it is not excluded for that variant and its ``estimated_fit``
there is ``fits`` (:func:`covers`). ``cheapest_covering`` is the offer of lowest total USD (one
rental of the lot for ``budget.days``) that covers every variant; offers of unknown price never
are (nothing says they are cheapest). Covering says nothing about speed (R3).

Every variant is judged by the same criteria as a whole sheet; what makes a campaign cheap to
judge is that two offers that differ only in what no criterion reads get the same states
(:func:`offer_class`), so each variant is judged once per class of offers, not once per offer.
The price is left out of the class too: only the budget criterion reads it, and that criterion
reads the sheet's ``budget`` block (the campaign's, the same for every variant) and the offer,
so an offer's budget state is the base plan's for every variant (:data:`SHARED_CRITERIA`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..catalog.types import Offer
from .verdict import OfferDecision, judgement_of

__all__ = ["VariantSummary", "OfferCoverage", "Campaign", "covers", "offer_class",
           "IGNORED_OFFER_FIELDS", "PRICE_FIELDS", "SHARED_CRITERIA", "campaign_of"]

IGNORED_OFFER_FIELDS = ("id", "region", "document", "version", "notes", "cloud",
                        "instance_type")
"""Offer fields no criterion's *state* depends on (they appear in reasons and citations only):
the row's id (unless evidence names it, see :func:`offer_class`), where the lot is, the
commercial sheet's name and version, and what SkyPilot calls it (cloud, instance type). Checked by tests/decision/test_campaign.py, which judges
offers differing in each of these and compares the states."""

PRICE_FIELDS = ("total_usd", "usd_per_hour")
"""Offer fields only the budget criterion reads (``criteria.budget``: total vs ``max_usd``)."""
SHARED_CRITERIA = ("budget",)
"""Criteria whose state is the same for every variant of a campaign: they read only the
campaign's keys (``budget``) and the offer. Checked by tests/pipeline/test_campaign.py against
each variant's own plan."""


@dataclass(frozen=True)
class VariantSummary:
    """One variant of the campaign as the compact block gives it.

    Attributes:
        name: the variant's name (``base`` for the sheet's own workload).
        sheet_sha256: its whole sheet's hash (evidence counts per variant).
        peak_bytes: its estimated peak allocated per GPU without a card's rules (bytes), or
            None when unknown.
        device_peak_bytes: the same with the non-PyTorch items (bytes), or None when unknown.
    """

    name: str
    sheet_sha256: str
    peak_bytes: int | None
    device_peak_bytes: int | None


@dataclass(frozen=True)
class OfferCoverage:
    """One offer's coverage: its id, the lot's total USD (None when unknown) and the variants
    it covers, in the campaign's variant order."""

    id: str
    total_usd: float | None
    covers: tuple[str, ...]


@dataclass(frozen=True)
class Campaign:
    """The campaign block: variants in the sheet's order (``base`` first), offers ordered by
    variants covered (most first), then total USD (unknown last), then catalog order, and the
    cheapest offer that covers every variant (None when none does)."""

    variants: tuple[VariantSummary, ...]
    offers: tuple[OfferCoverage, ...]
    cheapest_covering: str | None


def covers(d: OfferDecision, *, besides: tuple[str, ...] = ()) -> bool:
    """True when the offer carries the variant as far as the figures say: not excluded, and its
    ``estimated_fit`` (the fit rule's answer, ``verdict.judgement_of``) is ``fits``; with
    ``besides``, an exclusion on those criteria is left to the caller (:data:`SHARED_CRITERIA`).
    """
    if any(c.state == "exclude" for k, c in d.criteria.items() if k not in besides):
        return False
    j = judgement_of(d)
    return j is not None and j.state == "fits"


def offer_class(offer: Offer, named_ids: frozenset[str] = frozenset()) -> tuple:
    """The fields of ``offer`` a criterion's state can depend on, as a hashable key: every field
    but :data:`IGNORED_OFFER_FIELDS` and :data:`PRICE_FIELDS` (the budget criterion is judged
    per offer, once: :data:`SHARED_CRITERIA`), and the id too when evidence names this offer
    (``scope.offer_id``), since that evidence applies to it alone (R4)."""
    key = tuple(getattr(offer, name) for name in _CLASS_FIELDS)
    return key + ((offer.id,) if offer.id in named_ids else ())


_CLASS_FIELDS = tuple(f.name for f in dataclasses.fields(Offer)
                      if f.name not in IGNORED_OFFER_FIELDS + PRICE_FIELDS)


def campaign_of(variants: Sequence[VariantSummary], offers: Sequence[Offer],
                totals: Sequence[float | None],
                covered: Iterable[tuple[str, Sequence[bool]]]) -> Campaign:
    """The campaign block from each variant's coverage.

    Args:
        variants: the variants, in the sheet's order.
        offers: every offer, in the base plan's order.
        totals: each offer's total USD (None when unknown), aligned with ``offers``.
        covered: per variant name, one bool per offer (aligned with ``offers``).

    Returns:
        :class:`Campaign`, whose offers are ordered as its docstring says.
    """
    names: list[list[str]] = [[] for _ in offers]
    for name, flags in covered:
        for i, ok in enumerate(flags):
            if ok:
                names[i].append(name)
    order = [v.name for v in variants]
    rows = [OfferCoverage(o.id, t, tuple(sorted(n, key=order.index)))
            for o, t, n in zip(offers, totals, names)]
    inf = float("inf")
    ranked = sorted(range(len(rows)), key=lambda i: (-len(rows[i].covers),
                                                     rows[i].total_usd if rows[i].total_usd
                                                     is not None else inf, i))
    every = [rows[i] for i in ranked
             if len(rows[i].covers) == len(variants) and rows[i].total_usd is not None]
    return Campaign(tuple(variants), tuple(rows[i] for i in ranked),
                    every[0].id if every else None)
