"""A rich table in the terminal: phase peaks and offers (rich imported lazily by the CLI only)."""

from __future__ import annotations

from typing import Any

from .sections import POOL_TITLE, header_lines, memory_sections, offer_sections

__all__ = ["print_terminal"]

_SHOWN = ("Memory per GPU", "Phase peaks", POOL_TITLE, "Offers", "Fit against the card",
          "What could invalidate this conclusion")


def print_terminal(doc: dict[str, Any], *, file=None) -> None:
    """Print the key tables with rich (to stderr by default, so stdout stays the document)."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=file, stderr=file is None, width=160)
    for line in header_lines(doc):
        console.print(line, highlight=False)
    sections = memory_sections(doc) + (offer_sections(doc) if "sheet_sha256" in doc else [])
    for s in sections:
        if s.title not in _SHOWN:
            continue
        if s.header:
            t = Table(title=s.title, show_lines=False)
            for h in s.header:
                t.add_column(h, overflow="fold")
            for row in s.rows:
                t.add_row(*row)
            console.print(t)
        for line in s.lines:
            console.print(f"• {line}", highlight=False)
