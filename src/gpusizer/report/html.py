"""HTML rendering of the sizing sheet: the same sections as Markdown, plus the JSON document
embedded as ``<script type="application/json" id="gpusizer-json">`` for tools.

A plan's page puts page one (``page_one``) in ``<section id="page-one">`` and the rest under the
heading Details in ``<section id="details">``, which starts a new printed page: page one prints
on one A4 page and needs no horizontal scroll at 1280 px (cells wrap, tables take the page's
width; ``tests/report/test_html_browser.py`` checks both in headless Chromium). A state, verdict
or estimated fit is always written as its word; a colour (``offer_words.STATE_CLASSES``) only
adds to it.
"""

from __future__ import annotations

import html
import json
from typing import Any

from .offer_words import View, state_class
from .page_one import DETAILS_TITLE, answer_lines, details_lists, page_one_sections
from .sections import Section, header_lines, memory_sections, offer_sections

__all__ = ["render_html", "page_one_html", "details_html", "STYLE"]

_LONG = 60
"""A cell longer than this (characters) may break anywhere (a path or a formula); shorter cells
break only between words, so a column of short figures keeps its words whole."""

_WIDE = 10
"""A table of more columns than this is set smaller (the offers' table: 17 columns)."""

STYLE = (
    "body{font-family:system-ui,sans-serif;margin:1em auto;max-width:1240px;padding:0 1em;"
    "font-size:14px;line-height:1.35}"
    "h1{font-size:1.5em;margin:.3em 0}h2{font-size:1.15em;margin:.8em 0 .3em}"
    "h3{font-size:1.05em;margin:.8em 0 .3em}ul{margin:.2em 0;padding-left:1.3em}"
    "table{border-collapse:collapse;margin:.4em 0;width:100%}"
    "td,th{border:1px solid #bbb;padding:.15em .4em;vertical-align:top;text-align:left;"
    "overflow-wrap:break-word}th{background:#eee}td.long{overflow-wrap:anywhere;min-width:16em}"
    ".ok{background:#d9f2d9}.warn{background:#fff0c2}.bad{background:#f9d3d3}"
    "table.wide{font-size:.8em}table.wide td,table.wide th{padding:.1em .25em}"
    ".unknown{background:#e4e4e4}.answer{font-weight:600}"
    "@page{size:A4;margin:10mm}"
    "@media print{body{font-size:8.5pt;margin:0;max-width:none;padding:0}"
    "#details{break-before:page}"
    "td,th{-webkit-print-color-adjust:exact;print-color-adjust:exact}}")


def _cell(text: object) -> str:
    value = str(text)
    classes = [c for c in (state_class(value), "long" if len(value) > _LONG else None) if c]
    attr = f' class="{" ".join(classes)}"' if classes else ""
    return f"<td{attr}>{html.escape(value)}</td>"


def _section(s: Section, level: str = "h2") -> str:
    parts = [f"<{level}>{html.escape(s.title)}</{level}>"]
    if s.header:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in s.header)
        body = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in s.rows)
        wide = ' class="wide"' if len(s.header) > _WIDE else ""
        parts.append(f"<table{wide}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    if s.lines:
        parts.append("<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in s.lines) + "</ul>")
    return "\n".join(parts)


def _body(doc: dict[str, Any], view: View) -> str:
    if "sheet_sha256" not in doc:
        return ("<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in header_lines(doc))
                + "</ul>" + "\n".join(_section(s) for s in memory_sections(doc)))
    return page_one_html(doc, view) + details_html(doc, view)


def page_one_html(doc: dict[str, Any], view: View = View()) -> str:
    """A plan's page one as ``<section id="page-one">`` (the answer first), every value
    escaped: what :func:`render_html` puts first, for a page that embeds it (``gpusizer
    serve``)."""
    page_one = ('<ul class="answer">'
                + "".join(f"<li>{html.escape(x)}</li>" for x in answer_lines(doc)) + "</ul>"
                + "\n".join(_section(s) for s in page_one_sections(doc, view)))
    return f'<section id="page-one">{page_one}</section>'


def details_html(doc: dict[str, Any], view: View = View()) -> str:
    """A plan's Details as ``<section id="details">`` (memory items, every offer, lists)."""
    details = "\n".join(_section(s, "h3") for s in memory_sections(doc)
                        + offer_sections(doc, view) + details_lists(doc))
    return f'<section id="details"><h2>{DETAILS_TITLE}</h2>{details}</section>'


def render_html(doc: dict[str, Any], view: View = View()) -> str:
    """A standalone HTML page of the sizing sheet (``view``: the offers a person asked to see,
    labelled on the page; the embedded JSON always holds every offer)."""
    title = "gpusizer sizing sheet" if "sheet_sha256" in doc else "gpusizer memory estimate"
    # every <, > and & of the data island as a JSON escape: no string (``</script>``,
    # ``<!--<script>``) can close the island or change the HTML parser's state (S-c)
    data = (json.dumps(doc, default=str).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026"))
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{title}</title><style>{STYLE}</style></head><body>"
            f"<h1>{title}</h1>" + _body(doc, view)
            + f"<script type=\"application/json\" id=\"gpusizer-json\">{data}</script>"
            "</body></html>\n")
