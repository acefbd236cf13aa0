"""What could invalidate the conclusion (R15), computed from the sheet: the estimate at twice the
required length, items of unknown or declared size, card facts still to confirm, the quality
corpus, and what a bare parameter count leaves out."""

from __future__ import annotations

from ..errors import SheetError
from ..memory.estimate import estimate_memory
from ..memory.items import MemoryEstimate
from ..model.facts import ModelFacts
from ..sheet import Sheet
from ..units import fmt_bytes
from .verdict import OfferDecision

__all__ = ["invalidators", "double_length"]


def double_length(sheet: Sheet, facts: ModelFacts | None) -> str | None:
    """The estimate at twice the required length (R15: a longer real input moves the peak)."""
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


def invalidators(sheet: Sheet, facts: ModelFacts | None, est: MemoryEstimate,
                  decisions: list[OfferDecision]) -> list[str]:
    """What could invalidate the conclusion (R15), computed from the sheet."""
    out = []
    dl = double_length(sheet, facts)
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
