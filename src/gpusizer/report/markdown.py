"""Markdown rendering of the one-page sizing sheet (R15).

A plan's sheet leads with page one (``page_one``: the answer, the workload, memory per GPU by
phase, the shortlist, what could invalidate the conclusion, the measurement conditions), every
line of it at most :data:`~gpusizer.report.page_one.PAGE_ONE_WIDTH` characters (a long line is
wrapped, a table cell too wide for its row is shortened in the middle with ``…``; the whole
value follows under Details). The fixed heading ``## Details`` ends page one; the items with
formulas and every offer's six criteria with evidence follow it.

Every value is written as text: ``&``, ``<`` and ``>`` become entities (a catalog's
``<script>`` or ``<img onerror>`` shows as written, and a viewer that renders raw HTML renders
none; issue 11 point 4, S-d), ``|`` is escaped in table cells and a newline becomes a space.
"""

from __future__ import annotations

import html
import textwrap
from typing import Any

from .offer_words import View
from .page_one import DETAILS_TITLE, PAGE_ONE_WIDTH, answer_lines, details_lists, page_one_sections
from .sections import Section, header_lines, memory_sections, offer_sections

__all__ = ["render_markdown", "md_text", "md_cell", "fit_row"]


def md_text(text: object) -> str:
    """``text`` for a Markdown line: HTML escaped (``&``, ``<``, ``>``), one line."""
    return html.escape(str(text), quote=False).replace("\r", " ").replace("\n", " ")


def md_cell(text: object) -> str:
    """``text`` for a Markdown table cell: :func:`md_text` with ``|`` escaped."""
    return md_text(text).replace("|", "\\|")


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def fit_row(cells: list[str], width: int) -> str:
    """A table row of (escaped) ``cells`` within ``width`` characters: the longest cell loses
    its middle to ``…`` until the row fits, each cell keeping at least 8 characters (a row of
    cells that short stays as it is). Every step shortens a cell, so it always ends."""
    cells = list(cells)
    while len(_row(cells)) > width:
        i = max(range(len(cells)), key=lambda k: len(cells[k]))
        text = cells[i]
        if len(text) <= 8:
            break
        keep = max(len(text) - (len(_row(cells)) - width) - 1, 7)  # characters besides "…"
        cells[i] = text[:(keep + 1) // 2] + "…" + text[len(text) - keep // 2:]
    return _row(cells)


def _bullets(lines: tuple[str, ...] | list[str], width: int | None) -> list[str]:
    out = []
    for line in lines:
        text = md_text(line)
        if width is None:
            out.append(f"- {text}")
        else:
            out += textwrap.wrap(text, width=width, initial_indent="- ", subsequent_indent="  ",
                                 break_on_hyphens=False) or ["-"]
    return out


def _section(s: Section, level: str = "##", width: int | None = None) -> list[str]:
    out = [f"{level} {md_text(s.title)}", ""]
    if s.header:
        head = [md_cell(h) for h in s.header]
        out.append(_row(head) if width is None else fit_row(head, width))
        out.append("|" + "---|" * len(s.header))
        for row in s.rows:
            cells = [md_cell(c) for c in row]
            out.append(_row(cells) if width is None else fit_row(cells, width))
        out.append("")
    out += _bullets(s.lines, width)
    if s.lines:
        out.append("")
    return out


def _plan_markdown(doc: dict[str, Any], view: View) -> list[str]:
    out = ["# gpusizer sizing sheet", ""]
    out += _bullets(answer_lines(doc), PAGE_ONE_WIDTH) + [""]
    for s in page_one_sections(doc, view):
        out += _section(s, "##", PAGE_ONE_WIDTH)
    out += [f"## {DETAILS_TITLE}", ""]
    for s in memory_sections(doc) + offer_sections(doc, view) + details_lists(doc):
        out += _section(s, "###")
    return out


def render_markdown(doc: dict[str, Any], view: View = View()) -> str:
    """The sizing sheet as Markdown, from the JSON document; a plan's sheet with page one
    first (``view``: the offers a person asked to see, labelled on the page)."""
    if "sheet_sha256" in doc:
        return "\n".join(_plan_markdown(doc, view)).rstrip() + "\n"
    title = "gpusizer memory simulation" if "simulation" in doc else "gpusizer memory estimate"
    out = [f"# {title}", ""]
    out += [f"- {md_text(line)}" for line in header_lines(doc)] + [""]
    sections = memory_sections(doc)
    if "simulation" in doc:
        from .simulation import simulation_sections
        sections += simulation_sections(doc)
    for s in sections:
        out += _section(s)
    return "\n".join(out).rstrip() + "\n"
