"""``gpusizer cards``: the card table, and with a sheet every card's fit at 1, 2, 4 and 8 GPUs
(R1 "suggesting cards for a model"), without a catalog."""

from __future__ import annotations

from pathlib import Path

from ..catalog.card_table import CardTable, bundled_card_table
from ..decision.card_choice import CardsResult, suggest_cards
from ..sheet import Sheet
from .inputs import SheetInputs, load_sheet_inputs

__all__ = ["cards", "run_cards", "card_table"]


def card_table() -> CardTable:
    """The bundled card table (``gpusizer cards`` without a sheet)."""
    return bundled_card_table()


def cards(inputs: SheetInputs, *, table: CardTable | None = None) -> CardsResult:
    """Every card of ``table`` (default: the bundled one) judged for the sheet at 1, 2, 4 and 8
    GPUs; reads no file (``decision.card_choice.suggest_cards``).

    Raises:
        ModelError: a fact the sizing needs is unknown (the same on every card).
    """
    t = table or bundled_card_table()
    known = tuple(c for c in t.cards if c.device_bytes.value is not None)
    return suggest_cards(inputs.sheet, inputs.facts, known, card_table=t.file)


def run_cards(sheet: Sheet, *, base_dir: Path | None = None) -> CardsResult:
    """:func:`load_sheet_inputs`, then :func:`cards` (``gpusizer cards SHEET``)."""
    return cards(load_sheet_inputs(sheet, base_dir=base_dir))
