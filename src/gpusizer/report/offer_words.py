"""How an offer's estimated fit, rank and place in a listing are said (CONTRACT.md
``estimated_fit``, ``headroom_bytes``, ``rank``, ``provisional_rank``), from the JSON document.

Every view (Markdown, HTML, terminal) says an offer's fit with :func:`fit_words`, and lists
offers through :func:`shown_offers`, which applies a person's ``--top`` and ``--sort``
(:class:`View`) and returns the label that says so on the page. The JSON document always keeps
every offer in the contract's order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..memory.engines import ENGINES
from ..memory.fit_rule import lot_words
from ..units import fmt_gib

__all__ = ["View", "SORT_KEYS", "SHORTLIST", "fit_words", "fit_state_text", "headroom_text",
           "rank_text", "shown_offers", "unknown_why", "cost_key", "STATE_CLASSES",
           "state_class"]

STATE_CLASSES = (("acceptable", "ok"), ("selected", "ok"), ("fits", "ok"),
                 ("to confirm", "warn"), ("conditional", "warn"), ("borderline", "warn"),
                 ("exclude", "bad"), ("does not fit", "bad"), ("unknown", "unknown"))
"""A cell's text (its start) → its kind: ``ok`` (green), ``warn`` (amber), ``bad`` (red),
``unknown`` (grey). ``excluded`` and ``exclude: …`` start with ``exclude``. Views colour a state,
verdict or estimated fit by its kind and always print its word."""

SHORTLIST = 5
"""Offers on page one unless ``--top`` says otherwise."""


def state_class(text: str) -> str | None:
    """The kind (:data:`STATE_CLASSES`) of a cell whose text is a state, verdict or estimated
    fit, else None."""
    low = text.lower()
    return next((cls for word, cls in STATE_CLASSES if low.startswith(word)), None)


def cost_key(o: dict[str, Any]) -> float:
    """An offer's total USD for sorting (unknown: last)."""
    return float("inf") if o["total_usd"] is None else o["total_usd"]


def _headroom_key(o: dict[str, Any]) -> float:
    return float("inf") if o["headroom_bytes"] is None else -o["headroom_bytes"]


SORT_KEYS: dict[str, tuple[str, Callable[[dict[str, Any]], Any] | None]] = {
    "order": ("rank (then the other conditional and the excluded offers, by total USD)", None),
    "cost": ("total USD, cheapest first", cost_key),
    "headroom": ("estimated headroom per GPU, largest first (unknown last)", _headroom_key),
    "card": ("card (canonical name, else the catalog's), then total USD",
             lambda o: ((o["canonical_card"] or o["card"]).lower(), cost_key(o))),
}
"""``--sort`` keys: the label printed on the page and the key (None: the document's order)."""


@dataclass(frozen=True)
class View:
    """What a person asked to see: at most ``top`` offers (None: :data:`SHORTLIST` on page one
    and every offer under Details), sorted by ``sort`` (a key of :data:`SORT_KEYS`)."""

    top: int | None = None
    sort: str = "order"


def shown_offers(doc: dict[str, Any], view: View, *,
                 page_one: bool) -> tuple[list[dict[str, Any]], str]:
    """The offers a view lists and the label that says so ("showing the top N of M offers,
    sorted by …"). ``page_one`` caps an unset ``top`` at :data:`SHORTLIST`."""
    offers = list(doc["offers"])
    label, key = SORT_KEYS[view.sort]
    if key is not None:
        offers.sort(key=key)  # stable: ties keep the contract's order
    top = view.top if view.top is not None else (SHORTLIST if page_one else None)
    shown = offers if top is None else offers[:top]
    what = ("showing the 1 offer" if len(offers) == 1 else
            f"showing all {len(offers)} offers" if len(shown) == len(offers)
            else f"showing the top {len(shown)} of {len(offers)} offers")
    return shown, f"{what}, sorted by {label}"


def _pool_engine(doc: dict[str, Any], o: dict[str, Any]) -> str | None:
    """The serving engine's label when the offer's fit is its pool's (CONTRACT.md)."""
    pool = o.get("pool")
    return ENGINES[pool["engine"]].label if pool else None


def unknown_why(doc: dict[str, Any], o: dict[str, Any], *, short: bool = False) -> str:
    """Why an offer's fit is unknown: its lot has fewer cards than the placement, its card is
    not in the card table, it has no estimate, the live items of unknown size (by name), or
    only the weights are known (no phase)."""
    gpus = doc["sheet"]["placement"]["gpus"]
    if o["cards"] < gpus:
        return f"{o['cards']} of {gpus} cards" if short else lot_words(o["cards"], gpus)
    if o["canonical_card"] is None:
        return "card not in the card table" if short else "the card is not in the card table"
    if o.get("memory") is None:
        return "no estimate" if short else "no estimate for this card"
    unknown = [i["name"] for i in doc["memory"]["items"] if i["bytes"] is None and i["phases"]]
    if unknown:
        return ", ".join(unknown) + ("" if short else " of unknown size")
    if not doc["memory"]["phases"]:
        return "weights only" if short else "only the weights are known (no phase peak)"
    return "an item is unknown" if short else "an item it needs is unknown"


def fit_state_text(doc: dict[str, Any], o: dict[str, Any]) -> str:
    """The estimated fit in words, without the headroom: ``fits``, ``does not fit``,
    ``borderline`` or ``unknown: <why>`` (short)."""
    state = o["estimated_fit"]
    if state == "unknown":
        return f"unknown: {unknown_why(doc, o, short=True)}"
    return state.replace("_", " ")


def headroom_text(o: dict[str, Any]) -> str:
    """The headroom per GPU in GiB (negative when it does not fit), ``-`` when unknown."""
    h = o["headroom_bytes"]
    return "-" if h is None else f"{fmt_gib(h)} GiB"


def fit_words(doc: dict[str, Any], o: dict[str, Any], *, prefix: str = "estimated: ") -> str:
    """One offer's estimated fit (CONTRACT.md ``estimated_fit``, ``headroom_bytes``) in words:
    "estimated: fits, 17.22 GiB headroom", "estimated: does not fit by 5.58 GiB",
    "estimated: borderline, … GiB headroom (the estimate's range straddles the limit)" or
    "estimated: unknown (why)". For a serving engine the figure is its KV pool's spare bytes."""
    state, h = o["estimated_fit"], o["headroom_bytes"]
    engine = _pool_engine(doc, o)
    where = f" in the {engine} KV pool" if engine else ""
    if state == "unknown" or (h is None and state != "does_not_fit"):
        return f"{prefix}unknown ({unknown_why(doc, o)})"
    if o.get("estimated_fit_basis") not in (None, "card table"):  # say what was judged
        prefix = f"{prefix.rstrip(': ')} ({o['estimated_fit_basis']}): "
    if state == "fits":
        return f"{prefix}fits, {fmt_gib(h)} GiB headroom{where}"
    if state == "borderline":
        return (f"{prefix}borderline, {fmt_gib(h)} GiB headroom{where} (the estimate's range "
                "straddles the limit)")
    if h is None:
        return f"{prefix}does not fit" + (f" ({engine} does not start)" if engine else "")
    if engine:
        return f"{prefix}does not fit, the {engine} KV pool is short by {fmt_gib(-h)} GiB"
    return f"{prefix}does not fit by {fmt_gib(-h)} GiB"


def rank_text(o: dict[str, Any]) -> str:
    """``1``, ``provisional 2`` or ``-``."""
    if o["rank"] is not None:
        return str(o["rank"])
    return f"provisional {o['provisional_rank']}" if o["provisional_rank"] else "-"
