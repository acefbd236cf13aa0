"""Read the card table (``gpusizer/data/cards.yaml``) into :class:`Card` values and name indexes.

The YAML is validated with pydantic (unknown keys and bad values are :class:`CatalogError`), then
turned into frozen values: ``device_mib`` becomes ``Card.device_bytes`` (MiB × 2**20, what
``nvidia-smi --query-gpu=memory.total`` reports) and ``cuda_total_gib_logged`` becomes
``Card.cuda_total_bytes`` (round(GiB × 2**30); the log rounds to 0.01 GiB). Names are indexed
case-, space- and punctuation-insensitively (:func:`normalize_card_name`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..input_files import read_input
from ..yaml_reader import YamlProblem, parse_yaml
from ..errors import CatalogError
from ..units import GiB, MiB
from .row_errors import catalog_error_from
from .types import Card, Fact

__all__ = [
    "AmbiguousName", "UnlistedVariant", "CardTable", "normalize_card_name", "load_card_table",
    "bundled_card_table", "BUNDLED_CARDS_FILE",
]

BUNDLED_CARDS_FILE = "gpusizer/data/cards.yaml"
"""How the bundled table is named in messages and reports (package data, not a user path)."""

_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def normalize_card_name(name: str) -> str:
    """Lower-case and drop every character that is not a letter or digit.

    ``"NVIDIA GeForce RTX 4090"`` → ``"nvidiageforcertx4090"``; ``"RTX-A6000"``, ``"RTX A6000"``
    and ``"rtx_a6000"`` → ``"rtxa6000"``; ``"A100 (80 GB)"`` → ``"a10080gb"``.
    """
    return _NON_ALNUM.sub("", name.lower())


@dataclass(frozen=True)
class UnlistedVariant:
    """A product that an ambiguous name may mean but that the table does not describe.

    Attributes:
        name: the product's name.
        nominal_gb: its marketing GB, used only to tell whether a memory size could be it.
    """

    name: str
    nominal_gb: int


@dataclass(frozen=True)
class AmbiguousName:
    """Names that can mean several cards, and why.

    Attributes:
        names: the spellings (as written in cards.yaml).
        reason: why a name alone cannot decide.
        cards: canonical names of the table's cards it may mean.
        unlisted: products it may mean that the table lacks.
    """

    names: tuple[str, ...]
    reason: str
    cards: tuple[str, ...]
    unlisted: tuple[UnlistedVariant, ...] = ()


@dataclass(frozen=True)
class CardTable:
    """The parsed card table.

    Attributes:
        cards: every card, in file order.
        by_key: normalized canonical name or alias → card.
        ambiguous_by_key: normalized ambiguous name → its entry.
        file: where the table was read from.
    """

    cards: tuple[Card, ...]
    by_key: Mapping[str, Card]
    ambiguous_by_key: Mapping[str, AmbiguousName]
    file: str

    def by_name(self, canonical_name: str) -> Card:
        """The card with exactly this canonical name (KeyError otherwise)."""
        for card in self.cards:
            if card.name == canonical_name:
                return card
        raise KeyError(canonical_name)

    def all_names(self) -> tuple[str, ...]:
        """Every canonical name, alias and ambiguous name, as written in the file."""
        names: list[str] = []
        for card in self.cards:
            names.append(card.name)
            names.extend(card.aliases)
        for entry in dict.fromkeys(self.ambiguous_by_key.values()):
            names.extend(entry.names)
        return tuple(dict.fromkeys(names))


# ---- the YAML's shape (pydantic, at the edge) ----

_Status = Literal["confirmed", "to_confirm"]


class _FactIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: str = Field(min_length=1)
    status: _Status


class _MibFact(_FactIn):
    value: int = Field(gt=0)


class _GibLoggedFact(_FactIn):
    value: Annotated[float, Field(gt=0)] | None


class _BandwidthFact(_FactIn):
    value: float = Field(gt=0)


class _CapabilityFact(_FactIn):
    value: str = Field(pattern=r"^[0-9]+\.[0-9]+$")


class _NvlinkFact(_FactIn):
    value: bool | str

    @field_validator("value")
    @classmethod
    def _false_or_description(cls, value: bool | str) -> bool | str:
        if value is True:
            raise ValueError("expected false or a description string such as 'NVLink4'")
        return value


class _PeakIn(_FactIn):
    """Peak dense tensor-core throughput per dtype, 10**12 operations per second."""
    bf16: float | None = Field(None, gt=0)
    fp16: float | None = Field(None, gt=0)
    fp8: float | None = Field(None, gt=0)
    int8: float | None = Field(None, gt=0)
    fp4: float | None = Field(None, gt=0)


class _CardIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    aliases: list[str] = []
    nominal_gb: int = Field(gt=0)
    arch: str
    memory_type: str
    device_mib: _MibFact
    cuda_total_gib_logged: _GibLoggedFact
    bandwidth_gb_s: _BandwidthFact
    compute_capability: _CapabilityFact
    nvlink: _NvlinkFact
    peak_dense_tflops: _PeakIn | None = None


class _UnlistedIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    nominal_gb: int = Field(gt=0)


class _AmbiguousIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    names: list[str] = Field(min_length=1)
    reason: str = Field(min_length=1)
    cards: list[str] = Field(min_length=1)
    unlisted: list[_UnlistedIn] = []


class _TableIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cards: list[Any]
    ambiguous: list[Any] = []


def _fact(raw: _FactIn, value: object) -> Fact:
    return Fact(value=value, source=raw.source, status=raw.status)


def _to_card(raw: _CardIn) -> Card:
    gib_logged = raw.cuda_total_gib_logged.value
    # Decimal(str(x)): 23.58 GiB → 25318660833.28 B exactly, then rounded to whole bytes.
    cuda_total_bytes = (None if gib_logged is None
                        else int((Decimal(str(gib_logged)) * GiB).to_integral_value()))
    major, minor = (int(part) for part in raw.compute_capability.value.split("."))
    return Card(
        name=raw.name,
        aliases=tuple(raw.aliases),
        nominal_gb=raw.nominal_gb,
        device_bytes=_fact(raw.device_mib, raw.device_mib.value * MiB),
        cuda_total_bytes=_fact(raw.cuda_total_gib_logged, cuda_total_bytes),
        bandwidth_gb_s=_fact(raw.bandwidth_gb_s, float(raw.bandwidth_gb_s.value)),
        compute_capability=_fact(raw.compute_capability, (major, minor)),
        nvlink=_fact(raw.nvlink, raw.nvlink.value),
        arch=raw.arch,
        memory_type=raw.memory_type,
        peak_dense_tflops=_peaks(raw.peak_dense_tflops),
    )


def _peaks(raw: _PeakIn | None) -> tuple[tuple[str, Fact], ...]:
    """``peak_dense_tflops`` as ``(dtype, Fact)`` pairs sharing the entry's source and status."""
    if raw is None:
        return ()
    return tuple((dtype, _fact(raw, float(getattr(raw, dtype))))
                 for dtype in ("bf16", "fp16", "fp8", "int8", "fp4")
                 if getattr(raw, dtype) is not None)


def _index_key(key: str, owner: str, taken: dict[str, str], file: str) -> None:
    if not key:
        raise CatalogError(f"{owner}: a name normalizes to nothing", file=file)
    if key in taken and taken[key] != owner:
        raise CatalogError(
            f"the name key {key!r} belongs to both {taken[key]} and {owner}; "
            "list it once, or under `ambiguous`", file=file)
    taken[key] = owner


def parse_card_table(data: object, *, file: str) -> CardTable:
    """Validate the YAML's parsed data and build the table (no I/O).

    Raises:
        CatalogError: unknown key, bad value, a name claimed by two cards, or an ambiguous entry
            naming a card the table lacks.
    """
    try:
        table_in = _TableIn.model_validate(data)
    except ValidationError as exc:
        raise catalog_error_from(exc, file=file, where="table") from exc
    cards: list[Card] = []
    for position, raw in enumerate(table_in.cards, start=1):
        label = raw.get("name", f"#{position}") if isinstance(raw, dict) else f"#{position}"
        try:
            cards.append(_to_card(_CardIn.model_validate(raw)))
        except ValidationError as exc:
            raise catalog_error_from(exc, file=file, where=f"card {label!r}",
                                     known_keys=tuple(_CardIn.model_fields)) from exc
    owners: dict[str, str] = {}
    by_key: dict[str, Card] = {}
    for card in cards:
        for name in (card.name, *card.aliases):
            key = normalize_card_name(name)
            _index_key(key, f"card {card.name!r}", owners, file)
            by_key[key] = card
    canonical = {card.name for card in cards}
    ambiguous_by_key: dict[str, AmbiguousName] = {}
    for position, raw in enumerate(table_in.ambiguous, start=1):
        try:
            entry_in = _AmbiguousIn.model_validate(raw)
        except ValidationError as exc:
            raise catalog_error_from(exc, file=file, where=f"ambiguous #{position}") from exc
        missing = [name for name in entry_in.cards if name not in canonical]
        if missing:
            raise CatalogError(f"names cards the table lacks: {missing}",
                               field=f"ambiguous #{position}.cards", file=file)
        entry = AmbiguousName(
            names=tuple(entry_in.names), reason=entry_in.reason, cards=tuple(entry_in.cards),
            unlisted=tuple(UnlistedVariant(u.name, u.nominal_gb) for u in entry_in.unlisted))
        for name in entry.names:
            key = normalize_card_name(name)
            _index_key(key, f"ambiguous {entry.names[0]!r}", owners, file)
            ambiguous_by_key[key] = entry
    return CardTable(cards=tuple(cards), by_key=MappingProxyType(by_key),
                     ambiguous_by_key=MappingProxyType(ambiguous_by_key), file=file)


def load_card_table(path: Path) -> CardTable:
    """Read and validate a card table file (YAML).

    Raises:
        CatalogError: not a regular file, over 64 MiB, not valid YAML or not a valid table.
    """
    raw = read_input(path, "catalog", CatalogError)
    try:
        data = parse_yaml(raw.decode("utf-8"))
    except (UnicodeDecodeError, YamlProblem) as exc:
        raise CatalogError(f"cannot read the card table: {exc}", file=str(path)) from None
    return parse_card_table(data, file=str(path))


@functools.lru_cache(maxsize=1)
def bundled_card_table() -> CardTable:
    """The card table shipped with gpusizer, parsed once per process (cached)."""
    text = resources.files("gpusizer").joinpath("data/cards.yaml").read_text(encoding="utf-8")
    return parse_card_table(parse_yaml(text), file=BUNDLED_CARDS_FILE)
