"""``gpusizer alternatives`` as a JSON document and as Markdown (the JSON is the source)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from .. import SCHEMA_VERSION, __version__
from ..decision.alternatives import AlternativesResult
from ..stack import applied_versions
from ..units import fmt_bytes
from .markdown import md_cell, md_text

__all__ = ["alternatives_document", "render_alternatives_markdown"]


def alternatives_document(r: AlternativesResult) -> dict[str, Any]:
    """``{"gpusizer", "sheet_sha256", "sheet", "offers": [{offer_id, card, memory_state,
    memory_reason, alternatives: [...], not_offered: [{change, reason}]}], "note"}``; bytes are
    integers."""
    plan = r.plan
    return {
        "schema_version": SCHEMA_VERSION,
        "gpusizer": {"version": __version__, "stack": applied_versions(plan.sheet.stack)},
        "sheet_sha256": plan.sheet_sha256,
        "sheet": plan.sheet.model_dump(mode="json"),
        "offers": [{"offer_id": o.offer_id, "card": o.card, "memory_state": o.memory_state,
                    "memory_reason": o.memory_reason,
                    "alternatives": [{**asdict(a), "offers": list(a.offers)}
                                     for a in o.alternatives],
                    "not_offered": [{"change": c, "reason": w} for c, w in o.not_offered]}
                   for o in r.offers],
        "excluded_on_memory": sum(o.memory_state == "exclude" for o in r.offers),
        "estimated_not_to_fit": sum(o.memory_state != "exclude" for o in r.offers),
        "note": "one change at a time, never applied: each peak is the estimate of the sheet with "
                "that one change, on that card (arithmetic, to confirm by `gpusizer measure`); a "
                "changed format must meet the locked quality criteria (R13)",
    }


def render_alternatives_markdown(doc: dict[str, Any]) -> str:
    """Markdown: one section per offer excluded on memory."""
    lines = ["# gpusizer alternatives", "", f"sheet_sha256 `{doc['sheet_sha256']}`", "",
             f"_{doc['note']}_", ""]
    if not doc["offers"]:
        lines.append("No offer is excluded on memory or estimated not to fit: there is nothing "
                     "to change.")
    for o in doc["offers"]:
        t, c = md_text, md_cell  # values from the catalog and the sheet are text, never HTML
        lines += [f"## {t(o['offer_id'])} ({t(o['card'] or 'unknown card')})", "",
                  t(f"memory: exclude — {o['memory_reason']}" if o["memory_state"] == "exclude"
                    else f"memory: to confirm, estimated not to fit — {o['memory_reason']}"), ""]
        if o["alternatives"]:
            lines += ["| change | new device peak per GPU | card | fits | quality | coverage | "
                      "throughput |", "|---|---|---|---|---|---|---|"]
            for a in o["alternatives"]:
                r = a["risks"]
                fits = {True: "yes", False: "no", None: "unknown"}[a["fits"]]
                lines.append(f"| {c(a['summary'])} | {fmt_bytes(a['device_peak_bytes'])} | "
                             f"{c(a['card'])} | {fits}: {c(a['reason'])} | "
                             f"{c(r.get('quality', ''))} | {c(r.get('coverage', ''))} | "
                             + c(r.get('throughput', '')
                                 + (f"; {r['budget']}" if "budget" in r else "")) + " |")
            lines.append("")
        if o["not_offered"]:
            lines += ["Changes that do not make it fit or do not apply:", ""]
            lines += [f"- {t(n['change'])}: {t(n['reason'])}" for n in o["not_offered"]]
            lines.append("")
    return "\n".join(lines).replace("|  |", "| |") + "\n"
