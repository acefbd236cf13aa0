"""What could invalidate the conclusion (R15), computed from the sheet: the estimate at twice the
required length, items of unknown or declared size, card facts still to confirm, the quality
corpus, and what a bare parameter count leaves out.

Each is an :class:`Invalidator`: a sentence for people (``text``, the JSON's ``invalidators``
strings) and the same under machine keys (what changes, by how much, its effect on the peak) for
the JSON's ``invalidator_details`` (issue 12, point 7)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import SheetError
from ..memory.estimate import estimate_memory
from ..memory.items import MemoryEstimate
from ..model.facts import ModelFacts
from ..sheet import Sheet
from ..units import fmt_bytes
from .verdict import OfferDecision

__all__ = ["Change", "Invalidator", "INVALIDATOR_KINDS", "invalidators", "invalidator_records",
           "double_length"]

INVALIDATOR_KINDS = ("longer_input", "longer_input_impossible", "unknown_item", "declared_items",
                     "unknown_card", "card_fact", "quality_evaluation", "bare_count")
"""Every ``Invalidator.kind``, in the order they are listed."""


@dataclass(frozen=True)
class Change:
    """One sheet field an invalidator changes.

    Attributes:
        field: the sheet's dotted key (``inference.prompt_tokens``).
        value: the sheet's value (tokens, sequences).
        changed_to: the value the invalidator considers.
    """

    field: str
    value: int
    changed_to: int


@dataclass(frozen=True)
class Invalidator:
    """One thing that could invalidate the conclusion.

    Attributes:
        kind: one of :data:`INVALIDATOR_KINDS`.
        text: the sentence shown to people.
        subjects: what it is about: item names, a card name, the corpus file; empty when the
            whole sheet is (a longer input).
        changes: the sheet fields it changes (``longer_input``); empty otherwise.
        device_peak_bytes: the estimated device peak per GPU after the changes (bytes), or None
            (no change, or unknown).
        peak_change_bytes: ``device_peak_bytes`` minus the sheet's own device peak (bytes), or
            None when either is unknown.
    """

    kind: str
    text: str
    subjects: tuple[str, ...] = ()
    changes: tuple[Change, ...] = field(default=())
    device_peak_bytes: int | None = None
    peak_change_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON object of ``invalidator_details[]`` (docs/json-output.md)."""
        return {"kind": self.kind, "subjects": list(self.subjects),
                "changes": [{"field": c.field, "value": c.value, "changed_to": c.changed_to}
                            for c in self.changes],
                "device_peak_bytes": self.device_peak_bytes,
                "peak_change_bytes": self.peak_change_bytes, "text": self.text}


def _longer(sheet: Sheet, facts: ModelFacts | None, est: MemoryEstimate) -> Invalidator | None:
    """The estimate at twice the required length (R15: a longer real input moves the peak)."""
    inf, tr = sheet.inference, sheet.training
    if facts is None:
        return None
    if tr is not None:
        doubled = sheet.model_copy(update={"training": tr.model_copy(update={
            "sequence_length": 2 * tr.sequence_length})})
        changes: tuple[Change, ...] = (Change("training.sequence_length", tr.sequence_length,
                                              2 * tr.sequence_length),)
        what = f"twice the training length ({2 * tr.sequence_length} tokens"
        shown = (("activations", "activations"), ("logits", "logits"))
    elif inf is not None:
        doubled = sheet.model_copy(update={"inference": inf.model_copy(update={
            "prompt_tokens": 2 * inf.prompt_tokens, "new_tokens": 2 * inf.new_tokens})})
        changes = (Change("inference.prompt_tokens", inf.prompt_tokens, 2 * inf.prompt_tokens),
                   Change("inference.new_tokens", inf.new_tokens, 2 * inf.new_tokens))
        what = f"twice the length ({2 * inf.tokens_per_sequence} tokens"
        shown = (("KV cache", "kv_cache"),)
    else:
        return None
    try:
        new = estimate_memory(doubled, facts)
    except SheetError as exc:
        return Invalidator("longer_input_impossible", f"{what}) is impossible: {exc.reason}",
                           changes=changes)
    items = ", ".join(f"{label} {fmt_bytes(new.item(name).bytes)}" for label, name in shown)
    text = (f"{what} per sequence): estimated device peak {fmt_bytes(new.device_peak_bytes)} "
            f"per GPU ({items})")
    return _with_peak("longer_input", text, changes, new, est)


def _with_peak(kind: str, text: str, changes: tuple[Change, ...], new: MemoryEstimate,
               old: MemoryEstimate) -> Invalidator:
    after, before = new.device_peak_bytes, old.device_peak_bytes
    return Invalidator(kind, text, changes=changes, device_peak_bytes=after,
                       peak_change_bytes=(after - before if after is not None
                                          and before is not None else None))


def double_length(sheet: Sheet, facts: ModelFacts | None) -> str | None:
    """The sentence of the estimate at twice the required length, or None (no length)."""
    found = _longer(sheet, facts, estimate_memory(sheet, facts)) if facts is not None else None
    return found.text if found else None


def invalidator_records(sheet: Sheet, facts: ModelFacts | None, est: MemoryEstimate,
                        decisions: list[OfferDecision]) -> list[Invalidator]:
    """What could invalidate the conclusion (R15), computed from the sheet; ``est`` is the
    sheet's own estimate (the longer input's peak change is against it)."""
    out: list[Invalidator] = []
    longer = _longer(sheet, facts, est)
    if longer:
        out.append(longer)
    for it in est.items:
        if it.bytes is None and it.phases:
            out.append(Invalidator("unknown_item",
                                   f"item {it.name} has unknown size: {it.unknown_reason}",
                                   subjects=(it.name,)))
    declared = tuple(it.name for it in est.items if it.provenance == "declared" and it.bytes)
    if declared:
        out.append(Invalidator("declared_items",
                               "declared (not measured) items: " + ", ".join(declared),
                               subjects=declared))
    seen = set()
    for d in decisions:
        c = d.card
        if c is None:
            if d.card_note and d.offer.card not in seen:
                seen.add(d.offer.card)
                out.append(Invalidator("unknown_card", f"card {d.offer.card!r}: {d.card_note}",
                                       subjects=(d.offer.card,)))
            continue
        if c.name in seen:
            continue
        seen.add(c.name)
        for label, fact in (("device bytes", c.device_bytes), ("compute capability",
                                                                c.compute_capability)):
            if fact.status != "confirmed":
                out.append(Invalidator("card_fact",
                                       f"{c.name} {label} still to confirm ({fact.source})",
                                       subjects=(c.name, label.replace(" ", "_"))))
    if sheet.quality is not None:
        out.append(Invalidator("quality_evaluation",
                               f"quality judged on {sheet.quality.corpus} with "
                               f"{sheet.quality.metric}: another evaluation may change the "
                               "conclusion", subjects=(sheet.quality.corpus,)))
    out.extend(Invalidator("bare_count", n.text) for n in est.notes if n.code == "bare_count")
    return out


def invalidators(sheet: Sheet, facts: ModelFacts | None, est: MemoryEstimate,
                 decisions: list[OfferDecision]) -> list[str]:
    """The sentences of :func:`invalidator_records` (the JSON's ``invalidators``)."""
    return [i.text for i in invalidator_records(sheet, facts, est, decisions)]
