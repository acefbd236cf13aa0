"""``gpusizer fit`` as Markdown; the JSON document (``FitAnswer.to_json()``) is the source."""

from __future__ import annotations

from typing import Any

__all__ = ["render_fit_markdown"]


def render_fit_markdown(doc: dict[str, Any]) -> str:
    """A heading with the card, its device bytes and the margin, then one line per answer and
    per note."""
    lines = [f"# gpusizer fit on {doc['card']} (device {doc['device_bytes']} B, margin "
             f"{doc['margin']})", ""]
    lines += [f"- {k}: {v if v is not None else 'none (not even one sequence fits)'}"
              for k, v in doc["answers"].items()]
    lines += [f"- note: {n}" for n in doc["notes"]]
    return "\n".join(lines) + "\n"
