"""Inverse questions (``gpusizer fit``): the largest dimension whose estimated peak fits a card.

fits ⇔ device_peak_bytes + margin ≤ device_bytes (CONTRACT.md ``margin``); for ``engine: vllm``,
⇔ the required sequences fit vLLM's KV pool. Peaks grow monotonically with concurrency and length,
so a binary search over the estimate finds the boundary exactly.
"""

from __future__ import annotations

from typing import Any, Callable

from .catalog.types import Card
from .errors import GpusizerError, SheetError
from .memory.estimate import estimate_memory
from .pipeline import resolve_facts
from .sheet import Sheet

__all__ = ["fit_inference"]


def _largest(lo: int, hi: int, ok: Callable[[int], bool]) -> int | None:
    """Largest n in [lo, hi] with ok(n), assuming ok is monotone decreasing; None if ok(lo) fails."""
    if not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def fit_inference(sheet: Sheet, card: Card, *, base_dir=None) -> dict[str, Any]:
    """Largest concurrency at the sheet's length, and largest length (prompt + new, with the
    sheet's new_tokens) at the sheet's concurrency, that fit ``card``.

    Raises:
        SheetError: the sheet has no inference block.
        GpusizerError: training sheets (sized by a later version).
    """
    if sheet.task != "inference":
        raise GpusizerError("fit for training (largest microbatch / sequence length) needs the "
                            "training memory items, not sized by this version")
    inf = sheet.inference
    if inf is None:
        raise SheetError("fit needs an inference block (prompt_tokens, new_tokens)",
                         field="inference")
    facts = resolve_facts(sheet, base_dir=base_dir)
    if facts is None:
        raise SheetError("fit needs the architecture (model.id or model.path), not a bare count",
                         field="model.parameters")
    device = int(card.device_bytes.value)
    margin = sheet.margin.of(device)

    unknown: set[str] = set()

    def fits(s: Sheet) -> bool:
        try:
            est = estimate_memory(s, facts, card=card)
        except SheetError:
            return False
        unknown.update(n for p in est.phases for n in p.unknown_items)
        v = est.vllm
        if v is not None:
            # the pool must start and hold every required sequence at once (no queueing)
            return (bool(v.starts) and v.sequences_held is not None
                    and v.sequences_held >= s.inference.concurrency
                    and est.lower_bound_bytes <= device)
        peak = est.device_peak_bytes
        if peak is None:  # unknown items: judge on the known part (an upper bound on the answer)
            peak = max(p.known_bytes for p in est.phases)
        return peak + margin <= device

    def with_inf(**kw) -> Sheet:
        return sheet.model_copy(update={"inference": inf.model_copy(update=kw)})

    conc = _largest(1, 1 << 16, lambda c: fits(with_inf(concurrency=c)))
    window = facts.context_window_tokens or (1 << 22)
    max_prompt = window - inf.new_tokens
    prompt = None if max_prompt < 1 else _largest(1, max_prompt,
                                                   lambda p: fits(with_inf(prompt_tokens=p)))
    answers = {
        "largest concurrency at the required length": conc,
        "largest prompt_tokens at the required concurrency and new_tokens": prompt,
        "largest context (prompt + new tokens)": (
            prompt + inf.new_tokens if prompt is not None else None),
    }
    notes = ["estimated peaks (arithmetic), not measured: confirm the boundary with "
             "`gpusizer measure`",
             f"search bounded by the context window {window} tokens and 65536 sequences",
             "null: not even one sequence of the required length fits"]
    if unknown:
        notes.append("upper bounds: items of unknown size (" + ", ".join(sorted(unknown))
                     + ") were left out of the peaks")
    return {"card": card.name, "device_bytes": device, "margin": str(sheet.margin),
            "answers": answers, "notes": notes}
