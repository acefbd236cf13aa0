"""Markdown rendering of the one-page sizing sheet (R15).

Every value is written as text: ``&``, ``<`` and ``>`` become entities (a catalog's
``<script>`` or ``<img onerror>`` shows as written, and a viewer that renders raw HTML renders
none; issue 11 point 4, S-d), ``|`` is escaped in table cells and a newline becomes a space.
"""

from __future__ import annotations

import html
from typing import Any

from .sections import Section, header_lines, memory_sections, offer_sections

__all__ = ["render_markdown", "md_text", "md_cell"]


def md_text(text: object) -> str:
    """``text`` for a Markdown line: HTML escaped (``&``, ``<``, ``>``), one line."""
    return html.escape(str(text), quote=False).replace("\r", " ").replace("\n", " ")


def md_cell(text: object) -> str:
    """``text`` for a Markdown table cell: :func:`md_text` with ``|`` escaped."""
    return md_text(text).replace("|", "\\|")


def _section(s: Section) -> list[str]:
    out = [f"## {s.title}", ""]
    if s.header:
        out.append("| " + " | ".join(md_cell(h) for h in s.header) + " |")
        out.append("|" + "---|" * len(s.header))
        out += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in s.rows]
        out.append("")
    out += [f"- {md_text(line)}" for line in s.lines]
    if s.lines:
        out.append("")
    return out


def render_markdown(doc: dict[str, Any]) -> str:
    """The sizing sheet as Markdown, from the JSON document."""
    title = ("gpusizer sizing sheet" if "sheet_sha256" in doc else
             "gpusizer memory simulation" if "simulation" in doc else "gpusizer memory estimate")
    out = [f"# {title}", ""]
    out += [f"- {md_text(line)}" for line in header_lines(doc)] + [""]
    sections = memory_sections(doc) + (offer_sections(doc) if "sheet_sha256" in doc else [])
    if "simulation" in doc:
        from .simulation import simulation_sections
        sections += simulation_sections(doc)
    for s in sections:
        out += _section(s)
    return "\n".join(out).rstrip() + "\n"
