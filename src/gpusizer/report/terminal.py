"""A rich table in the terminal: phase peaks and offers (rich imported lazily by the CLI only).

Every string is printed as text: a rich ``Text`` (never parsed as markup, so an offer id
``[/]`` or ``[link=…]`` is shown as written) with control characters escaped (an ESC from a
catalog cell reaches the terminal as ``\\x1b``; issue 11 F15).
"""

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
    from rich.text import Text

    from ..errors import one_line

    def text(value: object) -> Text:
        return Text(one_line(str(value)))

    console = Console(file=file, stderr=file is None, width=160)
    for line in header_lines(doc):
        console.print(text(line), highlight=False)
    sections = memory_sections(doc) + (offer_sections(doc) if "sheet_sha256" in doc else [])
    for s in sections:
        if s.title not in _SHOWN:
            continue
        if s.header:
            t = Table(title=text(s.title), show_lines=False)
            for h in s.header:
                t.add_column(text(h), overflow="fold")
            for row in s.rows:
                t.add_row(*(text(c) for c in row))
            console.print(t)
        for line in s.lines:
            console.print(text(f"• {line}"), highlight=False)
