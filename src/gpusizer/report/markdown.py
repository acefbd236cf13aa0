"""Markdown rendering of the one-page sizing sheet (R15)."""

from __future__ import annotations

from typing import Any

from .sections import Section, header_lines, memory_sections, offer_sections

__all__ = ["render_markdown"]


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _section(s: Section) -> list[str]:
    out = [f"## {s.title}", ""]
    if s.header:
        out.append("| " + " | ".join(_cell(h) for h in s.header) + " |")
        out.append("|" + "---|" * len(s.header))
        out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in s.rows]
        out.append("")
    out += [f"- {line}" for line in s.lines]
    if s.lines:
        out.append("")
    return out


def render_markdown(doc: dict[str, Any]) -> str:
    """The sizing sheet as Markdown, from the JSON document."""
    title = ("gpusizer sizing sheet" if "sheet_sha256" in doc else
             "gpusizer memory simulation" if "simulation" in doc else "gpusizer memory estimate")
    out = [f"# {title}", ""]
    out += [f"- {line}" for line in header_lines(doc)] + [""]
    sections = memory_sections(doc) + (offer_sections(doc) if "sheet_sha256" in doc else [])
    if "simulation" in doc:
        from .simulation import simulation_sections
        sections += simulation_sections(doc)
    for s in sections:
        out += _section(s)
    return "\n".join(out).rstrip() + "\n"
