"""HTML rendering of the sizing sheet: the same sections as Markdown, plus the JSON document
embedded as ``<script type="application/json" id="gpusizer-json">`` for tools."""

from __future__ import annotations

import html
import json
from typing import Any

from .sections import Section, header_lines, memory_sections, offer_sections

__all__ = ["render_html"]

_STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:110em}"
          "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;"
          "padding:.2em .5em;vertical-align:top;font-size:.9em}th{background:#eee}")


def _section(s: Section) -> str:
    parts = [f"<h2>{html.escape(s.title)}</h2>"]
    if s.header:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in s.header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
                       for row in s.rows)
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    if s.lines:
        parts.append("<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in s.lines) + "</ul>")
    return "\n".join(parts)


def render_html(doc: dict[str, Any]) -> str:
    """A standalone HTML page of the sizing sheet."""
    title = "gpusizer sizing sheet" if "sheet_sha256" in doc else "gpusizer memory estimate"
    sections = memory_sections(doc) + (offer_sections(doc) if "sheet_sha256" in doc else [])
    # every <, > and & of the data island as a JSON escape: no string (``</script>``,
    # ``<!--<script>``) can close the island or change the HTML parser's state (S-c)
    data = (json.dumps(doc, default=str).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026"))
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{title}</title><style>{_STYLE}</style></head><body>"
            f"<h1>{title}</h1><ul>"
            + "".join(f"<li>{html.escape(x)}</li>" for x in header_lines(doc)) + "</ul>"
            + "\n".join(_section(s) for s in sections)
            + f"<script type=\"application/json\" id=\"gpusizer-json\">{data}</script>"
            "</body></html>\n")
