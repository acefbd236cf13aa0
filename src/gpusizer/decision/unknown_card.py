"""An offer whose card the card table does not decide (issue 12, point 8): the memory figure
its ``estimated_fit`` is judged at, and whether a certain lower bound already exceeds every card
its name may mean.

- A name ambiguous between variants of the same memory (``H100`` with 80 GB: SXM and PCIe both
  report 81559 MiB) is judged at that memory, from the card table.
- Otherwise, a catalog that states the per-GPU memory (SkyPilot ``GpuInfo``) is judged at its
  claim, labelled "catalog's claim" (CONTRACT.md ``claimed_device_bytes``).
- The memory criterion stays ``to_confirm`` in both cases (a claim proves nothing, R4), except
  when the certain lower bound exceeds every variant the name may mean: then it is ``exclude``,
  whatever the variant turns out to be.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.cards import CardMatch, variant_memory
from ..catalog.types import Offer
from ..memory.fit_rule import FitJudgement, judge_fit
from ..memory.items import MemoryEstimate
from ..sheet import Margin
from ..units import fmt_bytes

__all__ = ["UnknownCardFit", "CATALOG_CLAIM", "unknown_card_fit"]

CATALOG_CLAIM = "catalog's claim"
"""The label of a fit judged at the catalog's own per-GPU memory."""


@dataclass(frozen=True)
class UnknownCardFit:
    """The fit of an offer whose card is unknown or undecided.

    Attributes:
        judgement: the fit rule's answer at ``basis_bytes`` (the estimate without card rules).
        basis_bytes: the per-GPU memory judged at, bytes.
        basis: where ``basis_bytes`` comes from, in words (``catalog's claim``, or the variants'
            common memory).
        claimed_device_bytes: the catalog's own per-GPU memory, bytes, or None.
        excluded: why the certain lower bound exceeds every variant, or None.
    """

    judgement: FitJudgement | None
    basis_bytes: int | None
    basis: str | None
    claimed_device_bytes: int | None
    excluded: str | None = None


def unknown_card_fit(estimate: MemoryEstimate, offer: Offer, match: CardMatch,
                     margin: Margin) -> UnknownCardFit | None:
    """The fit of ``offer`` when ``match`` found no card, or None when nothing gives a memory
    figure (an unknown name without a catalog claim).

    Args:
        estimate: the sheet's estimate without card rules (per GPU).
        offer: the offer; ``catalog_memory_bytes`` is its catalog's per-GPU claim.
        match: the card lookup that left the card undecided.
        margin: the sheet's margin.
    """
    claim = offer.catalog_memory_bytes
    variants = variant_memory(match)
    excluded = None
    if variants is not None and estimate.lower_bound_bytes > variants.largest_bytes:
        excluded = (f"{estimate.lower_bound_covers} = {fmt_bytes(estimate.lower_bound_bytes)} "
                    f"per GPU exceed every card {match.query!r} may mean "
                    f"({', '.join(variants.every)}; the largest has "
                    f"{fmt_bytes(variants.largest_bytes)}): a certain lower bound")
    if variants is not None and variants.common_bytes is not None:
        basis_bytes = variants.common_bytes
        basis = (f"the memory the variants {', '.join(variants.names)} of {match.query!r} "
                 "share (card table)")
    elif claim is not None:
        basis_bytes, basis = claim, CATALOG_CLAIM
    else:
        if excluded is None:
            return None
        return UnknownCardFit(None, None, None, None, excluded)
    judgement = judge_fit(estimate, device_bytes=basis_bytes,
                          margin_bytes=margin.of(basis_bytes))
    return UnknownCardFit(judgement, basis_bytes, basis, claim, excluded)
