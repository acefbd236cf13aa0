"""The terminal view (rich, imported lazily by the CLI only).

For a plan, a summary that fits the terminal's width: the answer, the workload, memory per GPU
by phase, and the offers (offer, card, cards, USD, verdict, estimated fit, headroom, rank), then
the conditions every shown offer shares, what could invalidate the conclusion and the
measurement conditions — page one's content (``page_one``) as rich tables. A cell wraps between
words; a column is never narrower than its longest word (up to :data:`WORD_MAX` characters),
so no word or number is broken; where the offers' columns would not fit so (80 columns), the
cards join the card and the rank the verdict (:data:`COMPACT_COLUMNS`). For an estimate, the
key memory tables.

Every string is printed as text: a rich ``Text`` (never parsed as markup, so an offer id
``[/]`` or ``[link=…]`` is shown as written) with control characters escaped (an ESC from a
catalog cell reaches the terminal as ``\\x1b``; issue 11 F15).
"""

from __future__ import annotations

from typing import Any

from ..errors import one_line
from .offer_words import View, fit_state_text, headroom_text, rank_text, shown_offers, state_class
from .page_one import answer_lines, page_one_sections, verdict_cell
from .sections import POOL_TITLE, Section, header_lines, memory_sections

__all__ = ["print_terminal", "column_widths", "table_fits", "WORD_MAX", "SUMMARY_COLUMNS",
           "COMPACT_COLUMNS"]

WORD_MAX = 24
"""The longest word a column keeps whole; a longer one (an unusual offer id) folds."""
SUMMARY_COLUMNS = ("offer", "card", "cards", "USD (lot)", "verdict", "estimated fit",
                   "headroom (GiB/GPU)", "rank")
_STYLES = {"ok": "green", "warn": "yellow", "bad": "red", "unknown": "dim"}
_SHOWN = ("Memory per GPU", "Phase peaks", POOL_TITLE, "Fit against the card",
          "What could invalidate this conclusion")


COMPACT_COLUMNS = ("offer", "card × cards", "USD (lot)", "verdict (p: provisional)",
                   "estimated fit", "headroom (GiB/GPU)")
"""The offers at a narrow width: the cards joined to the card and the rank to the verdict (page
one's cells), so that no column is narrower than its longest word."""


def _offer_rows(doc: dict[str, Any], view: View, *,
                compact: bool = False) -> tuple[list[tuple[str, ...]], str]:
    """The summary's offer rows (:data:`SUMMARY_COLUMNS`, or :data:`COMPACT_COLUMNS`)."""
    offers, label = shown_offers(doc, view, page_one=True)
    rows = []
    for o in offers:
        usd = "unknown" if o["total_usd"] is None else f"{o['total_usd']:.2f}"
        fit, head = fit_state_text(doc, o), headroom_text(o).removesuffix(" GiB")
        card = o["canonical_card"] or o["card"]
        rows.append((o["id"], f"{card} × {o['cards']}", usd, verdict_cell(o), fit, head)
                    if compact else
                    (o["id"], card, str(o["cards"]), usd, o["verdict"], fit, head, rank_text(o)))
    return rows, label


def _cells(header: tuple[str, ...], rows) -> list[list[str]]:
    return [[one_line(str(c)) for c in (h, *(r[i] for r in rows))] for i, h in enumerate(header)]


def _longest_words(cells: list[list[str]]) -> list[int]:
    """Each column's longest word (up to :data:`WORD_MAX`): the narrowest it may be."""
    return [min(max(len(w) for c in col for w in c.split() or [""]), WORD_MAX) for col in cells]


def table_fits(header: tuple[str, ...], rows, width: int) -> bool:
    """Whether a table of these cells fits ``width`` columns (rich's borders and padding: 3
    characters a column, 1 more) with no column narrower than its longest word."""
    return sum(_longest_words(_cells(header, rows))) + 3 * len(header) + 1 <= width


def column_widths(natural: list[int], minimum: list[int], available: int) -> list[int]:
    """Column widths (characters, padding and borders excluded) within ``available``: each
    column its natural width when all fit; else its minimum (its longest word) plus a share of
    what is left, in proportion to how much more it would take. The minimums win over
    ``available`` when even they do not fit (the terminal then wraps the table's lines)."""
    minimum = [min(m, n) for m, n in zip(minimum, natural)]
    if sum(natural) <= available:
        return list(natural)
    spare = max(available - sum(minimum), 0)
    want = [n - m for n, m in zip(natural, minimum)]
    total = sum(want) or 1
    widths = [m + (spare * w) // total for m, w in zip(minimum, want)]
    return widths


def print_terminal(doc: dict[str, Any], *, file=None, view: View = View(),
                   width: int | None = None, stderr: bool = True) -> None:
    """Print the summary with rich: to ``file`` if given, else to stderr (``stderr``, so stdout
    stays the document) or stdout. ``width``: the columns (None: the terminal's own)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    def text(value: object) -> Text:
        return Text(one_line(str(value)))

    def table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]] | tuple,
              caption: str | None = None) -> Table:
        t = Table(title=text(title), caption=text(caption) if caption else None,
                  caption_justify="left", show_lines=False)
        cells = _cells(header, rows)
        widths = column_widths([max(len(c) for c in col) for col in cells],
                               _longest_words(cells), console.width - 3 * len(header) - 1)
        for h, w in zip(header, widths):
            t.add_column(text(h), overflow="fold", width=w)
        for row in rows:
            t.add_row(*(coloured(c) for c in row))
        return t

    def coloured(value: object) -> Text:
        """A state, verdict or fit keeps its word and gets its colour (never colour alone)."""
        t = text(value)
        kind = state_class(t.plain)
        if kind:
            t.stylize(_STYLES[kind])
        return t

    def lines(s: Section, bullet: str = "• ") -> None:
        for line in s.lines:
            console.print(text(f"{bullet}{line}"), highlight=False)

    console = Console(file=file, stderr=stderr if file is None else False, width=width)
    if "sheet_sha256" not in doc:
        for line in header_lines(doc):
            console.print(text(line), highlight=False)
        for s in memory_sections(doc):
            if s.title in _SHOWN:
                if s.header:
                    console.print(table(s.title, s.header, s.rows))
                lines(s)
        return
    for line in answer_lines(doc):
        console.print(text(line), highlight=False, style="bold")
    for s in page_one_sections(doc, view):
        if s.title == "Offers":
            header, (rows, label) = SUMMARY_COLUMNS, _offer_rows(doc, view)
            if not table_fits(header, rows, console.width):  # narrow: fewer, wider columns
                header, (rows, label) = COMPACT_COLUMNS, _offer_rows(doc, view, compact=True)
            console.print(table("Offers", header, rows, caption=label + "; a "
                                "provisional rank is not a selection"))
            continue
        if s.header:
            console.print(table(s.title, s.header, s.rows))
        else:
            console.print(text(s.title), style="bold", highlight=False)
        lines(s)
    console.print(text("The whole sheet (items with formulas, every offer's six criteria with "
                       "evidence): --format md, or -o FILE.md / FILE.html"), highlight=False)
