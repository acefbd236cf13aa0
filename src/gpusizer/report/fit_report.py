"""``gpusizer fit`` as Markdown; the JSON document (``FitAnswer.to_json()``) is the source."""

from __future__ import annotations

from typing import Any

from ..units import fmt_bytes

__all__ = ["render_fit_markdown"]


def render_fit_markdown(doc: dict[str, Any]) -> str:
    """A heading with the card, its device memory (GiB beside bytes) and the margin, then one
    line per answer (with the estimated device peak and headroom there, when the document's
    ``limits`` has them) and per note."""
    lines = [f"# gpusizer fit on {doc['card']} (device {fmt_bytes(doc['device_bytes'])}, "
             f"margin {doc['margin']})", ""]
    by_question = {v["question"]: v for v in doc.get("limits", {}).values()}
    for question, value in doc["answers"].items():
        if value is None:
            lines.append(f"- {question}: none (not even one sequence fits)")
            continue
        limit = by_question.get(question, {})
        peak = limit.get("device_peak_bytes")
        detail = (f" (estimated device peak {fmt_bytes(peak)}, headroom "
                  f"{fmt_bytes(limit.get('headroom_bytes'))})" if peak is not None else "")
        lines.append(f"- {question}: {value}{detail}")
    lines += [f"- note: {n}" for n in doc["notes"]]
    return "\n".join(lines) + "\n"
