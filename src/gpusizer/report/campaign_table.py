"""The campaign table of page one (R15, issue 17 point 1), from the JSON document's ``campaign``
block: the top offers × the variants, each variant a short code (``v1`` = the base workload,
``v2``… in the sheet's order) as a column, at most :data:`PAGE_ONE_VARIANTS` of them on page one;
the other variants' columns follow under Details. A cell says whether the offer covers the
variant (not excluded there and estimated to fit). Covering says nothing about speed (R3).
"""

from __future__ import annotations

from typing import Any

from .sections import Section

__all__ = ["PAGE_ONE_VARIANTS", "CAMPAIGN_ROWS", "variant_codes", "campaign_answer",
           "campaign_sections", "campaign_details"]

PAGE_ONE_VARIANTS = 8
"""Variant columns on page one (the rest follow under Details)."""
CAMPAIGN_ROWS = 10
"""Offers in the campaign table (the JSON block holds every offer)."""
COVERS, MISSES = "yes", "-"
"""A cell's text: the offer covers the variant, or does not."""


def variant_codes(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """``(code, name)`` per variant in the sheet's order: ``v1`` is the base workload."""
    return [(f"v{i}", v["name"]) for i, v in enumerate(doc["campaign"]["variants"], 1)]


def _offers_by_id(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["id"]: o for o in doc["offers"]}


def _card(o: dict[str, Any] | None) -> str:
    return "-" if o is None else f"{o['canonical_card'] or o['card']} × {o['cards']}"


def campaign_answer(doc: dict[str, Any]) -> str:
    """One line: the cheapest offer covering every variant, or that none does and which offer
    covers the most."""
    c = doc["campaign"]
    n = len(c["variants"])
    by_id = _offers_by_id(doc)
    if c["cheapest_covering"] is not None:
        o = next(x for x in c["offers"] if x["id"] == c["cheapest_covering"])
        return (f"Campaign answer: {o['id']} ({_card(by_id.get(o['id']))}, "
                f"{o['total_usd']:.2f} USD) is the cheapest offer that covers all {n} variants "
                "(not excluded and estimated to fit on each).")
    best = c["offers"][0] if c["offers"] else None
    if best is None or not best["covers"]:
        return f"Campaign answer: no offer covers any of the {n} variants."
    return (f"Campaign answer: no offer covers all {n} variants; {best['id']} "
            f"({_card(by_id.get(best['id']))}) covers the most, {len(best['covers'])} "
            f"({', '.join(best['covers'])}).")


def _table(doc: dict[str, Any], codes: list[tuple[str, str]], title: str) -> Section:
    c = doc["campaign"]
    by_id = _offers_by_id(doc)
    rows = []
    for o in c["offers"][:CAMPAIGN_ROWS]:
        covered = set(o["covers"])
        usd = "unknown" if o["total_usd"] is None else f"{o['total_usd']:.2f}"
        rows.append((o["id"], _card(by_id.get(o["id"])), usd,
                     f"{len(covered)}/{len(c['variants'])}",
                     *(COVERS if name in covered else MISSES for _, name in codes)))
    legend = "; ".join(f"{code} {name}" for code, name in codes)
    shown = min(CAMPAIGN_ROWS, len(c["offers"]))
    lines = (f"Variants: {legend}.",
             f"The first {shown} of {len(c['offers'])} offers, by variants covered, then total "
             f"USD; {COVERS}: covers it (not excluded, estimated to fit); prices say nothing "
             "about speed.")
    return Section(title, ("offer", "card × cards", "total USD", "covers",
                           *(code for code, _ in codes)), tuple(rows), lines)


def campaign_sections(doc: dict[str, Any]) -> list[Section]:
    """Page one's campaign table (its first :data:`PAGE_ONE_VARIANTS` variants), or nothing
    without a campaign."""
    if "campaign" not in doc:
        return []
    codes = variant_codes(doc)
    table = _table(doc, codes[:PAGE_ONE_VARIANTS], "Campaign: offers × variants")
    more = len(codes) - PAGE_ONE_VARIANTS
    tail = ((f"{more} more variants follow under Details.",) if more > 0 else ())
    tail += ("Below: the base workload (v1) in full; a variant's own plan: "
             "`gpusizer plan SHEET --variant NAME`.",)
    return [Section(table.title, table.header, table.rows, table.lines + tail)]


def campaign_details(doc: dict[str, Any]) -> list[Section]:
    """The variants past page one's :data:`PAGE_ONE_VARIANTS`, in tables of as many columns."""
    if "campaign" not in doc:
        return []
    codes = variant_codes(doc)[PAGE_ONE_VARIANTS:]
    groups = [codes[i:i + PAGE_ONE_VARIANTS] for i in range(0, len(codes), PAGE_ONE_VARIANTS)]
    return [_table(doc, g, f"Campaign: variants {g[0][0]}–{g[-1][0]}") for g in groups]
