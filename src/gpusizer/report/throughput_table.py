"""The speed bounds table under Details (CONTRACT.md ``offers[].throughput``; SPEC R3): one row
per offer with a bound, in the offers' own order. The bounds are labelled as bounds and never
order anything; a measured figure, where evidence carries one, stands beside its bound."""

from __future__ import annotations

from typing import Any

from .offer_words import View, shown_offers
from .sections import Section

__all__ = ["throughput_sections"]


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def throughput_sections(doc: dict[str, Any], view: View = View()) -> list[Section]:
    """The table, or nothing when no offer has a bound (no card the table describes)."""
    offers, label = shown_offers(doc, view, page_one=False)
    rows = []
    sources: dict[str, None] = {}
    for o in offers:
        t = o.get("throughput")
        if not t:
            continue
        rows.append((o["id"], f"{o['canonical_card']} × {o['cards']}",
                     _num(t["decode_tokens_per_s_bound"], ".1f"),
                     _num(t["measured_decode_tokens_per_s"], ".1f"),
                     _num(t["usd_per_million_tokens_bound"], ".4f"),
                     _num(t["prefill_seconds_bound"], ".3f"),
                     _num(t["training_days_bound"], ".2f")))
        sources.setdefault(t["source"])
    if not rows:
        return []
    lines = (f"{label}. Bounds from the card's datasheet figures (decode: memory bandwidth; "
             "prefill and training: peak dense throughput), per lot at the sheet's "
             "concurrency; never an order (prices say nothing about speed, R3).",
             *list(sources)[:3])
    return [Section("Speed bounds (labelled bounds, not measurements)",
                    ("offer", "card × cards", "decode tokens/s (at most)",
                     "decode tokens/s (measured)", "USD per million tokens (at least)",
                     "prefill seconds (at least)", "training days (at the stated mfu)"),
                    tuple(rows), lines)]
