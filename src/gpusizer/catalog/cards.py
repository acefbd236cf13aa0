"""Find a card by any of its names: canonical, NVML, SkyPilot, FSDL spellings.

``lookup_card`` answers a :class:`Card` or None; ``resolve_card`` says why; ``require_card`` is
what ``--card NAME`` uses and raises :class:`UnknownCardError` with close matches. A name that can
mean several cards ("RTX6000", "A100", "H100") is decided by the memory the caller saw, and only
when exactly one variant fits; otherwise the card is unknown, with the reason, never guessed.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass

from ..errors import UnknownCardError
from ..units import GB, GiB, fmt_bytes
from .card_table import AmbiguousName, CardTable, bundled_card_table, normalize_card_name
from .types import Card, Offer

__all__ = [
    "CardMatch", "MEMORY_MATCH_TOLERANCE", "resolve_card", "lookup_card", "require_card",
    "close_card_names", "all_cards", "memory_fits_card", "resolve_offer_card", "VariantMemory",
    "variant_memory",
]

MEMORY_MATCH_TOLERANCE = 0.12
"""Largest relative gap between a memory figure and a card's device bytes that still counts as
that card (fraction).

Derivation: a catalog may give the nominal size in GiB where the device reports 1/16 less with
ECC on (L4: 24 GiB = 24576 MiB vs 23034 MiB, 6.3 %), or a decimal GB figure (24 × 10**9 B vs 24564
MiB, 6.8 %); 12 % covers both with room. The closest pair it must still tell apart is H100 80GB
(81559 MiB) vs H100 NVL (95830 MiB), 17.5 % apart.
"""


@dataclass(frozen=True)
class CardMatch:
    """The outcome of a name lookup.

    Attributes:
        query: the name asked for.
        card: the card, or None when unknown or undecided.
        reason: how the name was matched, or why no card was chosen.
        candidates: canonical names (and unlisted variants) the name may mean; empty when the
            name matched one card directly or nothing at all.
    """

    query: str
    card: Card | None
    reason: str
    candidates: tuple[str, ...] = ()


def _relative_gap(memory_bytes: int, reference_bytes: int) -> float:
    return abs(memory_bytes - reference_bytes) / reference_bytes


def memory_fits_card(memory_bytes: int, card: Card) -> bool:
    """True when ``memory_bytes`` is within :data:`MEMORY_MATCH_TOLERANCE` of the card's device
    bytes (nvidia-smi total)."""
    device_bytes = card.device_bytes.value
    return isinstance(device_bytes, int) and (
        _relative_gap(memory_bytes, device_bytes) <= MEMORY_MATCH_TOLERANCE)


def _fits_nominal(memory_bytes: int, nominal_gb: int) -> bool:
    # the nominal figure may have been written as GB (10**9 B) or GiB (2**30 B)
    return min(_relative_gap(memory_bytes, nominal_gb * GB),
               _relative_gap(memory_bytes, nominal_gb * GiB)) <= MEMORY_MATCH_TOLERANCE


def _decide(query: str, entry: AmbiguousName, memory_bytes: int | None,
            table: CardTable) -> CardMatch:
    listed = tuple(table.by_name(name) for name in entry.cards)
    everything = entry.cards + tuple(variant.name for variant in entry.unlisted)
    if memory_bytes is None:
        return CardMatch(query, None,
                         f"{query!r} is ambiguous ({entry.reason}); no memory size to decide "
                         f"between {', '.join(everything)}", everything)
    fitting = [card for card in listed if memory_fits_card(memory_bytes, card)]
    fitting_unlisted = [v.name for v in entry.unlisted if _fits_nominal(memory_bytes, v.nominal_gb)]
    shown = fmt_bytes(memory_bytes)
    if len(fitting) == 1 and not fitting_unlisted:
        card = fitting[0]
        return CardMatch(query, card,
                         f"{query!r} is ambiguous ({entry.reason}); {shown} fits only "
                         f"{card.name} (device: {fmt_bytes(card.device_bytes.value)})")
    names = [card.name for card in fitting] + fitting_unlisted
    if not names:
        why = f"{shown} fits none of {', '.join(everything)}"
    elif fitting_unlisted and not fitting:
        why = f"{shown} fits {', '.join(fitting_unlisted)}, which the card table does not describe"
    else:
        why = f"{shown} fits several: {', '.join(names)}"
    return CardMatch(query, None, f"{query!r} is ambiguous ({entry.reason}); {why}",
                     tuple(names) or everything)


def resolve_card(name: str, memory_bytes: int | None = None, *,
                 table: CardTable | None = None) -> CardMatch:
    """Match a card name, using ``memory_bytes`` only to decide an ambiguous name.

    Args:
        name: any spelling; case, spaces, hyphens, underscores and punctuation are ignored.
        memory_bytes: per-GPU memory the caller saw (nvidia-smi total, or a catalog's figure),
            bytes; ignored for a name that means one card.
        table: the card table (default: the bundled one).

    Returns:
        A :class:`CardMatch`; ``card`` is None for an unknown name and for an ambiguous name the
        memory cannot decide.
    """
    if table is None or table is bundled_card_table():
        return _resolve_bundled(name, memory_bytes)
    return _resolve(name, memory_bytes, table)


@functools.lru_cache(maxsize=4096)
def _resolve_bundled(name: str, memory_bytes: int | None) -> CardMatch:
    """:func:`resolve_card` on the bundled table, once per distinct (name, memory) in a process:
    a 10 000-row catalog names some forty cards (issue 12, "Speed"); a CardMatch is frozen."""
    return _resolve(name, memory_bytes, bundled_card_table())


def _resolve(name: str, memory_bytes: int | None, table: CardTable) -> CardMatch:
    key = normalize_card_name(name)
    card = table.by_key.get(key)
    if card is not None:
        how = "canonical name" if normalize_card_name(card.name) == key else "alias"
        return CardMatch(name, card, f"{name!r} is the {how} of {card.name}")
    entry = table.ambiguous_by_key.get(key)
    if entry is not None:
        return _decide(name, entry, memory_bytes, table)
    close = close_card_names(name, table=table)
    return CardMatch(name, None, f"{name!r} is not in the card table ({table.file})"
                     + (f"; close matches: {', '.join(close)}" if close else ""))


def lookup_card(name: str, memory_bytes: int | None = None) -> Card | None:
    """The card a name means, or None (unknown name, or ambiguous and undecided by memory).

    ``lookup_card("RTX6000", 24576 * MiB)`` is the Quadro RTX 6000; ``lookup_card("RTX6000")`` is
    None. See :func:`resolve_card` for the reason.
    """
    return resolve_card(name, memory_bytes).card


def close_card_names(name: str, limit: int = 5, *, table: CardTable | None = None) -> list[str]:
    """Names of the table (as written there) closest to ``name`` (difflib ratio >= 0.6)."""
    if table is None or table is bundled_card_table():
        return list(_close_bundled(normalize_card_name(name), limit))
    return _close(normalize_card_name(name), limit, table)


@functools.lru_cache(maxsize=1024)
def _close_bundled(key: str, limit: int) -> tuple[str, ...]:
    """:func:`close_card_names` on the bundled table, once per distinct normalized name."""
    return tuple(_close(key, limit, bundled_card_table()))


def _close(key: str, limit: int, table: CardTable) -> list[str]:
    display: dict[str, str] = {}
    for written in table.all_names():
        display.setdefault(normalize_card_name(written), written)
    keys = difflib.get_close_matches(key, list(display), n=limit, cutoff=0.6)
    return [display[key] for key in keys]


def require_card(name: str, memory_bytes: int | None = None) -> Card:
    """The card for ``--card NAME``.

    Raises:
        UnknownCardError: the name is unknown (the message lists close matches) or ambiguous and
            not decided by ``memory_bytes`` (the message lists the variants).
    """
    match = resolve_card(name, memory_bytes)
    if match.card is not None:
        return match.card
    if match.candidates:
        listed = [c for c in match.candidates if lookup_card(c) is not None]
        unlisted = [c for c in match.candidates if c not in listed]
        text = f"{match.reason}; name one of: {', '.join(listed)}" if listed else match.reason
        if unlisted:
            text += (f" ({', '.join(unlisted)}: not in the card table, so not sizable by name; "
                     "add the card to gpusizer/data/cards.yaml with its sources)")
        raise UnknownCardError(text, field="card", value=name)
    close = close_card_names(name)
    hint = (f"close matches: {', '.join(close)}" if close
            else "no close match; `gpusizer` knows the names in gpusizer/data/cards.yaml")
    raise UnknownCardError(f"unknown card {name!r}; {hint}", field="card", value=name)


def all_cards() -> tuple[Card, ...]:
    """Every card of the bundled table, in file order."""
    return bundled_card_table().cards


def resolve_offer_card(offer: Offer) -> CardMatch:
    """The card an offer rents: the reader's decision (``offer.canonical_card``) when it made one,
    else ``offer.card`` decided with the catalog's per-card memory claim, if any."""
    table = bundled_card_table()
    if offer.canonical_card is not None:
        try:
            card = table.by_name(offer.canonical_card)
        except KeyError:
            return CardMatch(offer.card, None, f"canonical_card {offer.canonical_card!r} is not "
                                               f"in the card table ({table.file})")
        return CardMatch(offer.card, card, f"decided by the catalog reader: {card.name}")
    return resolve_card(offer.card, offer.catalog_memory_bytes, table=table)


@dataclass(frozen=True)
class VariantMemory:
    """The memory of the cards an undecided ambiguous name may mean.

    Attributes:
        names: the variants left (the match's candidates), canonical or unlisted names.
        every: every variant the name may mean (the table's cards, then the unlisted ones).
        common_bytes: the device bytes every candidate has (nvidia-smi total of the table's
            cards, each unlisted variant's nominal size within :data:`MEMORY_MATCH_TOLERANCE`
            of it), or None when they differ.
        largest_bytes: the most memory any variant of the name may have, whatever memory the
            caller saw: the table's device bytes, or an unlisted variant's nominal size read
            as GiB (the larger reading of GB / GiB).
    """

    names: tuple[str, ...]
    every: tuple[str, ...]
    common_bytes: int | None
    largest_bytes: int


def variant_memory(match: CardMatch, *, table: CardTable | None = None) -> VariantMemory | None:
    """The memory of the variants an ambiguous name left undecided (``match.card`` None with
    candidates), or None for a decided, unknown or unambiguous name, or a variant of unknown
    memory."""
    table = table or bundled_card_table()
    entry = table.ambiguous_by_key.get(normalize_card_name(match.query))
    if match.card is not None or entry is None or not match.candidates:
        return None
    every = [table.by_name(n).device_bytes.value for n in entry.cards]
    listed = [table.by_name(n) for n in match.candidates if n in entry.cards]
    unlisted = [v for v in entry.unlisted if v.name in match.candidates]
    sizes = [c.device_bytes.value for c in listed]
    if any(not isinstance(b, int) for b in every):
        return None
    # every variant of the name, not only those a memory claim left: a claim proves nothing
    largest = max([*every, *(v.nominal_gb * GiB for v in entry.unlisted)])
    common = sizes[0] if sizes and len(set(sizes)) == 1 else None
    if common is not None and not all(_fits_nominal(common, v.nominal_gb) for v in unlisted):
        common = None
    every_name = entry.cards + tuple(v.name for v in entry.unlisted)
    return VariantMemory(tuple(match.candidates), every_name, common, largest)
