"""Cards suggested for a sheet without a catalog (R1 "suggesting cards for a model"):
``gpusizer cards SHEET``.

Every card of the card table is judged at 1, 2, 4 and 8 GPUs (and at the sheet's own count when
it is another): the sheet is copied with ``placement.gpus`` = N under one multi-GPU strategy —
the one the sheet names (``placement.strategy``), else ``tensor-parallel`` for inference and
``fsdp`` for training — then estimated once on the card and judged by the fit rule
(``memory.fit_rule.judge_on_card`` through :class:`~gpusizer.decision.alternatives.FitCache`:
one estimate per (card, GPU count)). No catalog, so no interconnect: the NCCL buffers of a
multi-GPU count use the card's default link (``memory.nccl.within_node_link``).

The answer a person needs first is :attr:`CardsResult.answer`: the fewest GPUs that fit, then the
smallest card memory among those (the cheapest-looking: prices are not known here), then the
largest headroom.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..catalog.types import Card
from ..memory.fit_rule import FitState
from ..model.facts import ModelFacts
from ..sheet import Sheet
from .alternatives import FitCache

if TYPE_CHECKING:
    from ..memory.items import MemoryEstimate

__all__ = ["GPU_COUNTS", "CountFit", "CardFits", "CardsResult", "suggest_cards",
           "multi_gpu_strategy"]

GPU_COUNTS = (1, 2, 4, 8)
"""The GPU counts every card is judged at (one node)."""

_DEFAULT_STRATEGY = {True: "tensor-parallel", False: "fsdp"}
"""inference → tensor-parallel; training → fsdp (when the sheet names no multi-GPU strategy)."""


def multi_gpu_strategy(sheet: Sheet) -> tuple[str, bool]:
    """The strategy the multi-GPU counts run under, and whether it is the default.

    The sheet's ``placement.strategy`` when it names a multi-GPU one (``single`` is not), else
    ``tensor-parallel`` for inference and ``fsdp`` for training.
    """
    named = sheet.placement.strategy
    if named != "single":
        return named, False
    return _DEFAULT_STRATEGY[sheet.task == "inference"], True


@dataclass(frozen=True)
class CountFit:
    """One card at one GPU count.

    Attributes:
        gpus: GPUs of the placement (one node).
        strategy: ``single`` at 1 GPU, else the multi-GPU strategy.
        estimated_fit: the fit rule's state (``fits`` / ``does_not_fit`` / ``unknown``), or None
            when the sheet cannot run so (``refused`` says why).
        headroom_bytes: device − margin − device peak per GPU (a pool: its spare KV bytes);
            negative when it does not fit; None when unknown or refused.
        certain: the fit rule proved it (a certain lower bound, or an engine that refuses to start).
        peak_bytes, device_peak_bytes: the estimate per GPU on the card (None when unknown).
        reason: the fit rule's comparison, or why the sheet cannot run so.
        refused: why the sheet cannot run at this count on this card (a head split that is not
            even, a format the card lacks), else None.
        sheet_count: this is the sheet's own ``placement.gpus``.
    """

    gpus: int
    strategy: str
    estimated_fit: FitState | None
    headroom_bytes: int | None
    certain: bool
    peak_bytes: int | None
    device_peak_bytes: int | None
    reason: str
    refused: str | None = None
    sheet_count: bool = False


@dataclass(frozen=True)
class CardFits:
    """One card at every GPU count.

    Attributes:
        card: the card (device bytes from the card table, never a catalog's claim).
        counts: one :class:`CountFit` per GPU count, ascending.
        fewest_gpus: the smallest count estimated to fit, or None when none of them does.
    """

    card: Card
    counts: tuple[CountFit, ...]
    fewest_gpus: int | None

    def at(self, gpus: int) -> CountFit:
        """The judgement at ``gpus`` (KeyError when that count was not judged)."""
        for c in self.counts:
            if c.gpus == gpus:
                return c
        raise KeyError(gpus)


@dataclass
class CardsResult:
    """``gpusizer cards SHEET``: every card's fit at each GPU count.

    Attributes:
        sheet, facts: the sheet and its model's facts (None for a bare parameter count).
        strategy: the multi-GPU strategy; strategy_is_default: the sheet named none.
        gpu_counts: the counts judged (1, 2, 4, 8 and the sheet's own).
        sheet_gpus: the sheet's ``placement.gpus``.
        cards: one :class:`CardFits` per card, in card-table order.
        card_table: the card table's file.
    """

    sheet: Sheet
    facts: ModelFacts | None
    strategy: str
    strategy_is_default: bool
    gpu_counts: tuple[int, ...]
    sheet_gpus: int
    cards: list[CardFits]
    card_table: str

    @property
    def answer(self) -> tuple[CardFits, CountFit] | None:
        """The fewest GPUs that fit: fewest GPUs, then smallest card memory, then largest
        headroom; None when no card fits at any count."""
        fitting = [(c, c.at(c.fewest_gpus)) for c in self.cards if c.fewest_gpus is not None]
        if not fitting:
            return None
        return min(fitting, key=lambda cf: (cf[1].gpus, int(cf[0].card.device_bytes.value),
                                            -(cf[1].headroom_bytes or 0)))


def _count_sheet(sheet: Sheet, gpus: int, strategy: str) -> Sheet:
    # the counts are GPUs of one node; one GPU runs single, which shards and offloads nothing
    # (the sheet refuses offload under single), so its figure is the unsharded one
    one = {"offload": "none", "fsdp_sharding": "full"} if gpus == 1 else {}
    placement = sheet.placement.model_copy(update={
        "gpus": gpus, "nodes": 1, "strategy": "single" if gpus == 1 else strategy, **one})
    return sheet.model_copy(update={"placement": placement})


def _judged(est: MemoryEstimate | None, fit, gpus: int, strategy: str,
            own: bool) -> CountFit:
    j = fit.judgement
    if est is None or j is None:
        why = fit.reason.removeprefix("cannot be estimated: ")
        return CountFit(gpus, strategy, None, None, False, None, None, f"cannot run: {why}",
                        refused=why, sheet_count=own)
    return CountFit(gpus, strategy, j.state, j.headroom_bytes, j.certain, est.peak_bytes,
                    est.device_peak_bytes, j.reason, sheet_count=own)


def suggest_cards(sheet: Sheet, facts: ModelFacts | None, cards: tuple[Card, ...], *,
                  card_table: str = "") -> CardsResult:
    """Judge ``sheet`` on every card at 1, 2, 4 and 8 GPUs (and the sheet's own count); reads
    no file.

    Args:
        sheet: the validated sheet (its margin is the fit rule's margin).
        facts: the model's facts, or None for a bare parameter count.
        cards: the cards to judge (the card table's), each with known device bytes.
        card_table: the card table's file, for the provenance.

    Returns:
        A :class:`CardsResult`.
    """
    strategy, default = multi_gpu_strategy(sheet)
    own = sheet.placement.gpus
    counts = tuple(sorted(set(GPU_COUNTS) | {own}))
    check = FitCache()
    sheets = {n: _count_sheet(sheet, n, strategy) for n in counts}
    out = []
    for card in cards:
        judged = []
        for n in counts:
            fit = check(sheets[n], facts, card)
            judged.append(_judged(fit.estimate, fit, n, "single" if n == 1 else strategy,
                                  n == own))
        fewest = next((c.gpus for c in judged if c.estimated_fit == "fits"), None)
        out.append(CardFits(card, tuple(judged), fewest))
    return CardsResult(sheet, facts, strategy, default, counts, own, out, card_table)
