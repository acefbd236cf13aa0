"""Page one of the sizing sheet (R15, R3): the answer first, from the JSON document.

The first lines name the cheapest offer estimated to fit and what is left to confirm on it (or
say that none fits, and why); then the workload (model @ revision, task, precision, lengths,
concurrency or microbatch), one small table of memory per GPU by phase, the shortlist (verdict,
estimated fit with its headroom, USD, open conditions; a condition every shown offer shares is
said once), what could invalidate the conclusion and the measurement conditions. Everything else
(items with formulas, every offer's six criteria with evidence) follows the fixed heading
:data:`DETAILS_TITLE`. Markdown, HTML and the terminal render these same sections.

A person may ask for ``--top N`` offers and ``--sort KEY`` (:class:`View`); the page says which
(``offer_words.shown_offers``). The JSON document always holds every offer in CONTRACT.md's order.
"""

from __future__ import annotations

import re
from typing import Any

from ..memory.engines import ENGINES
from ..units import fmt_gib
from .campaign_table import campaign_answer, campaign_details, campaign_sections
from .throughput_table import throughput_sections
from .offer_words import View, cost_key, fit_state_text, fit_words, shown_offers, unknown_why
from .sections import CRITERIA, Section, header_lines

__all__ = ["verdict_cell", "DETAILS_TITLE", "PAGE_ONE_WIDTH", "LISTED", "answer_lines",
           "page_one_sections", "invalidator_lines", "measurement_lines", "NO_INVALIDATOR",
           "NO_MEASUREMENT", "details_lists", "command_lines"]

DETAILS_TITLE = "Details"
"""The fixed heading that ends page one (``## Details`` in Markdown)."""
PAGE_ONE_WIDTH = 120
"""Characters per line on page one, table rows included (issue 12, point 3)."""
LISTED = 6
"""Invalidators and measurement conditions on page one; the rest follow under Details."""


def verdict_cell(o: dict[str, Any]) -> str:
    """``selected (1)``, ``conditional (p1)`` (provisional), ``conditional`` or ``excluded``."""
    if o["rank"] is not None:
        return f"{o['verdict']} ({o['rank']})"
    if o["provisional_rank"]:
        return f"{o['verdict']} (p{o['provisional_rank']})"
    return o["verdict"]


def _open_cell(o: dict[str, Any], shared: dict[str, str]) -> str:
    """The criteria left to confirm on ``o``: those not every shown offer shares by name, then
    how many shared ones are said once below the table ("the 6 below", "memory; 4 more below");
    ``none`` when nothing is open; for an excluded offer, the criteria that exclude it."""
    if o["verdict"] == "excluded":
        return "exclude: " + ", ".join(c for c in CRITERIA
                                       if o["criteria"][c]["state"] == "exclude")
    own = [c for c in _open(o) if c not in shared]
    below = [f"the {len(shared)} below" if not own else f"{len(shared)} more below"] \
        if shared else []
    return "; ".join([", ".join(own)] * bool(own) + below) or "none"


def _open(o: dict[str, Any]) -> dict[str, str]:
    """Criterion → condition for each criterion left to confirm on ``o``."""
    return {c: (o["criteria"][c]["condition"] or o["criteria"][c]["reason"]) for c in CRITERIA
            if o["criteria"][c]["state"] == "to_confirm"}


def _shared(offers: list[dict[str, Any]]) -> dict[str, str]:
    """The conditions every shown offer has, word for word (said once on the page)."""
    if not offers:
        return {}
    first = _open(offers[0])
    return {c: t for c, t in first.items() if all(_open(o).get(c) == t for o in offers[1:])}


def _usd(o: dict[str, Any]) -> str:
    return "unknown" if o["total_usd"] is None else f"{o['total_usd']:.2f}"


def _card(o: dict[str, Any]) -> str:
    return f"{o['canonical_card'] or o['card']} × {o['cards']}"


def _best(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The cheapest offer estimated to carry the workload: rank 1, else provisional rank 1."""
    offers = doc["offers"]
    return (next((o for o in offers if o["rank"] == 1), None)
            or next((o for o in offers if o["provisional_rank"] == 1), None))


def answer_lines(doc: dict[str, Any]) -> list[str]:
    """The answer (R3): the cheapest offer estimated to fit and what is left to confirm on it,
    or that none fits and why."""
    if "campaign" in doc:  # a campaign's answer leads; the base workload's follows
        return [campaign_answer(doc)] + _answer_lines(doc)
    return _answer_lines(doc)


def _answer_lines(doc: dict[str, Any]) -> list[str]:
    offers = doc["offers"]
    if not offers:
        return ["Answer: no offer to judge (the catalogs gave none)."]
    best = _best(doc)
    if best is not None:
        left = _open(best)
        what = "selected (all six criteria acceptable)" if best["verdict"] == "selected" else \
            "conditional, provisional rank 1"
        cheaper = [o for o in offers if o is not best and o["verdict"] != "excluded"
                   and o["estimated_fit"] != "fits" and cost_key(o) < cost_key(best)]
        first = ("is the cheapest offer estimated to fit" if best["total_usd"] is not None else
                 "ranks first among the offers estimated to fit (total USD unknown: declare "
                 "budget.days; ranked by headroom)")
        out = [f"Answer: {best['id']} ({_card(best)}, {_usd(best)} USD) {first} — "
               f"{fit_words(doc, best)}; {what}.",
               "Left to confirm on it: " + (", ".join(left) + " (conditions below)" if left
                                            else "nothing") + "."]
        if cheaper:
            out.append("Cheaper, not estimated to fit: " + "; ".join(
                f"{o['id']} ({_usd(o)} USD) — {fit_words(doc, o)}" for o in cheaper[:2])
                + (f"; and {len(cheaper) - 2} more" if len(cheaper) > 2 else "") + ".")
        return out
    by_state: dict[str, list[dict[str, Any]]] = {}
    for o in offers:
        key = "excluded" if o["verdict"] == "excluded" else o["estimated_fit"]
        by_state.setdefault(key, []).append(o)
    parts = []
    for key, words in (("does_not_fit", "estimated not to fit"), ("unknown", "cannot tell"),
                       ("borderline", "{are} borderline"),
                       ("fits", "{fit} but {are} not conditional")):
        group = by_state.get(key, [])
        if not group:
            continue
        one = len(group) == 1
        words = words.format(are="is" if one else "are", fit="fits" if one else "fit")
        if key == "does_not_fit":
            closest = max(group, key=lambda o: o["headroom_bytes"] if o["headroom_bytes"]
                          is not None else -float("inf"))
            parts.append(f"{len(group)} {words} (closest: {closest['id']}, "
                         f"{fit_words(doc, closest)})")
        elif key == "unknown":
            parts.append(f"{len(group)} {words} ({unknown_why(doc, group[0])})")
        else:
            parts.append(f"{len(group)} {words}")
    if by_state.get("excluded"):
        parts.append(_excluded_words(by_state["excluded"], every=len(offers)))
    # an offer estimated to fit but excluded can be fitted, not rented as is (its criteria)
    lead = ("no offer can be rented as is" if any(o["estimated_fit"] == "fits" for o in offers)
            else "no offer is estimated to fit")
    return [f"Answer: {lead}: " + "; ".join(parts) + "."]


_FIT_STATE_WORDS = {"fits": "estimated to fit", "does_not_fit": "estimated not to fit",
                    "borderline": "borderline", "unknown": "of unknown fit"}
REASON_CHARS = 60
"""Characters of an excluding criterion's reason quoted in the answer (then "…")."""


def _short(text: str, chars: int = REASON_CHARS) -> str:
    """``text`` without its byte counts in parentheses, cut at a space to at most ``chars``
    characters, with "…" when cut."""
    text = re.sub(r" \(\d[\d ]* B\)", "", text)  # the byte counts beside a GiB figure
    if len(text) <= chars:
        return text
    return text[:chars - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + " …"


def _excluded_words(group: list[dict[str, Any]], *, every: int) -> str:
    """The excluded offers of the answer: how many, their estimated fits counted (an offer
    estimated to fit may be excluded on another criterion), and each excluding criterion with
    the reason of its first (cheapest) offer, shortened. ``every``: the offers judged."""
    n = len(group)
    counts: dict[str, int] = {}
    for o in group:
        counts[o["estimated_fit"]] = counts.get(o["estimated_fit"], 0) + 1
    if len(counts) == 1:
        state = _FIT_STATE_WORDS[next(iter(counts))]
        who = ("the only offer is" if every == 1 else "1 is") if n == 1 else \
            (f"all {n} are" if n == every else f"{n} are")
        head = f"{who} {state} {'but' if state == _FIT_STATE_WORDS['fits'] else 'and'} excluded"
    else:
        head = (f"{n} are excluded (" + ", ".join(
            f"{counts[s]} {w}" for s, w in _FIT_STATE_WORDS.items() if s in counts) + ")")
    on = []
    for c in CRITERIA:
        hit = [o for o in group if o["criteria"][c]["state"] == "exclude"]
        if not hit:
            continue
        count = "" if len(hit) == n else f"{len(hit)} of {n}; "
        on.append(f"{c} ({count}{hit[0]['id']}: "
                  f"{_short(hit[0]['criteria'][c]['reason'])})")
    return f"{head} on " + ", ".join(on)


def _workload_lines(doc: dict[str, Any]) -> list[str]:
    """:func:`header_lines` with the inference line split at its semicolons (short lines)."""
    out: list[str] = []
    for line in header_lines(doc):
        if line.startswith("Lengths:"):
            head, _, rest = line.partition("; engine ")
            out += [head, "Engine " + rest] if rest else [line]
        elif line.startswith("Reserve") and out and out[-1].startswith("Placement"):
            out[-1] += "; r" + line[1:]
        else:
            out.append(line)
    return out


def _with_range(phase: dict[str, Any]) -> str:
    """``28.39 [27.80, 33.20]``: the device peak and its interval (GiB), or the peak alone."""
    iv = phase.get("device_peak_interval_bytes")
    peak = fmt_gib(phase["device_peak_bytes"])
    return peak if not iv else f"{peak} [{fmt_gib(iv[0])}, {fmt_gib(iv[1])}]"


def _memory_section(doc: dict[str, Any]) -> Section:
    mem = doc["memory"]
    sizes = {i["name"]: i for i in mem["items"]}
    rows = []
    for p in mem["phases"]:
        live = {n: (sizes[n].get("phase_bytes") or {}).get(p["name"], sizes[n]["bytes"])
                for n in p["items"] if sizes.get(n) and sizes[n]["bytes"]}
        largest = sorted(live, key=lambda n: -live[n])[:3]
        rows.append((p["name"], fmt_gib(p["peak_bytes"]), _with_range(p),
                     ", ".join(f"{n} {fmt_gib(live[n])}" for n in largest)))
    lines = [f"weights only {fmt_gib(mem['weights_bytes'])} GiB; certain lower bound "
             f"{fmt_gib(mem['lower_bound_bytes'])} GiB "
             f"({mem.get('lower_bound_covers', 'weights and KV cache')})"]
    if not rows:
        lines.append(f"no phase peak: indicative envelope (weights + reserve) "
                     f"{fmt_gib(mem['envelope_bytes'])} GiB; the peak is unknown")
    inf = doc["sheet"].get("inference") or {}
    engine = ENGINES[inf["engine"]] if inf.get("engine") in ENGINES else None
    if any(o.get("pool") for o in doc["offers"]) and engine is not None:
        lines.append(f"{engine.label} takes its pool at start: an offer's fit is its pool holding "
                     f"{inf['concurrency']} sequences at the required length; headroom is the "
                     "pool's spare KV bytes")
    if not rows:
        return Section("Phase peaks, memory per GPU", lines=tuple(lines))
    ranged = any(p.get("device_peak_interval_bytes") for p in mem["phases"])
    if ranged:
        lines.append("range: the nominal 90 % range of the device peak, from the spread of its "
                     "items' kinds on the public cases (src/gpusizer/data/intervals.json)")
    return Section("Phase peaks, memory per GPU", ("phase", "peak allocated (GiB per GPU)",
                                               "device peak [range] (GiB per GPU)" if ranged
                                               else "device peak (GiB per GPU)",
                                               "largest items (GiB per GPU)"),
                   tuple(rows), tuple(lines))


def _capped(title: str, lines: list[str], empty: str) -> Section:
    shown = lines[:LISTED]
    more = len(lines) - len(shown)
    tail = (f"and {more} more under {DETAILS_TITLE}",) if more else ()
    return Section(title, lines=tuple(shown) + tail if shown else (empty,))


def invalidator_lines(doc: dict[str, Any]) -> list[str]:
    """What could invalidate the conclusion (R15), as the document states it."""
    return list(doc.get("invalidators", []))


def measurement_lines(doc: dict[str, Any]) -> list[str]:
    """The measurement conditions: evidence used (document, version, scope) and ignored."""
    ev = doc.get("evidence", {})
    out = [f"{e['document']} ({e['version']}; {e['scope']})" for e in ev.get("used", [])]
    out += [f"ignored {x['file']}: {x['reason']}" for x in ev.get("ignored", [])]
    return out


NO_INVALIDATOR = "none"
NO_MEASUREMENT = "no measurement: every figure is estimated or declared, not measured"


def command_lines(offers: list[dict[str, Any]]) -> list[str]:
    """``offer ids: command`` for the offers shown whose serving engine took a pool, one line per
    distinct command (CONTRACT.md ``offers[].pool.command``), in the offers' order."""
    by_command: dict[str, list[str]] = {}
    for o in offers:
        command = (o.get("pool") or {}).get("command")
        if command:
            by_command.setdefault(command, []).append(o["id"])
    return [f"{', '.join(ids)}: {command}" for command, ids in by_command.items()]


def page_one_sections(doc: dict[str, Any], view: View = View()) -> list[Section]:
    """Page one's sections after the answer: workload, memory by phase, shortlist, shared
    conditions, what could invalidate the conclusion, measurement conditions."""
    offers, label = shown_offers(doc, view, page_one=True)
    shared = _shared(offers)
    rows = tuple((o["id"], _card(o), _usd(o), verdict_cell(o), fit_state_text(doc, o),
                  "-" if o["headroom_bytes"] is None else fmt_gib(o["headroom_bytes"]),
                  _open_cell(o, shared)) for o in offers)
    lines = (f"{label}. A provisional rank is not a selection; prices say nothing about speed.",)
    out = campaign_sections(doc)  # a campaign's table first (none without variants)
    out += [Section("Workload", lines=tuple(_workload_lines(doc))), _memory_section(doc),
           Section("Offers", ("offer", "card × cards", "total USD", "verdict (p: provisional)",
                              "estimated fit", "headroom (GiB/GPU)", "open conditions"),
                   rows, lines)]
    commands = command_lines(offers)
    if commands:
        out.append(Section("Engine command lines (each verdict holds under its own)",
                           lines=tuple(commands)))
    if shared:
        out.append(Section("Left to confirm on every offer shown",
                           lines=tuple(f"{c}: {t}" for c, t in shared.items())))
    out += [_capped("What could invalidate this conclusion", invalidator_lines(doc),
                   NO_INVALIDATOR),
            _capped("Measurement conditions", measurement_lines(doc), NO_MEASUREMENT)]
    return out


def details_lists(doc: dict[str, Any]) -> list[Section]:
    """The whole lists that page one shortens (more than :data:`LISTED` lines), for Details."""
    out = campaign_details(doc) + throughput_sections(doc)
    for title, lines in (("What could invalidate this conclusion (all)", invalidator_lines(doc)),
                         ("Measurement conditions (all)", measurement_lines(doc))):
        if len(lines) > LISTED:
            out.append(Section(title, lines=tuple(lines)))
    return out
