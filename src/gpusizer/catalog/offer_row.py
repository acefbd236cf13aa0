"""One row of a contract catalog file (YAML or CSV), validated at the edge, then made an Offer.

The keys are the contract's (shared/CONTRACT.md, "Catalog files"); any other key is an error.
Prices: ``total_usd`` is the whole lot for ``days`` days; ``usd_per_hour`` is the whole lot per
hour, turned into ``total_usd = usd_per_hour × 24 × days`` when ``days`` is given (otherwise the
decision stage does it with ``budget.days``, see :func:`gpusizer.catalog.offers.offer_total_usd`).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import (BaseModel, ConfigDict, Field, ValidationError, ValidationInfo,
                      field_validator, model_validator)

from ..bounds import (MAX_COUNT, MAX_DAYS, MAX_USD, NumberProblem, check_number,
                      first_unsafe_text, number_from_text)
from ..errors import CatalogError, SheetError, shown
from ..units import parse_bytes
from .row_errors import catalog_error_from
from .types import Offer

__all__ = ["OfferRow", "CONTRACT_KEYS", "offer_from_mapping", "HOURS_PER_DAY"]

HOURS_PER_DAY = 24
"""A rented day is 24 billed hours (hourly prices × 24 × days)."""

CONTRACT_KEYS: tuple[str, ...] = (
    "id", "provider", "card", "cards", "days", "total_usd", "usd_per_hour", "available_from",
    "available_until", "host_ram", "storage", "interconnect", "environment", "spot", "document",
    "version", "cloud", "region", "instance_type",
)


_NUMBER_BOUNDS: dict[str, dict[str, Any]] = {
    "cards": {"maximum": MAX_COUNT, "whole": True},
    "days": {"maximum": MAX_DAYS},
    "total_usd": {"maximum": MAX_USD},
    "usd_per_hour": {"maximum": MAX_USD},
}
"""The catalog's number keys and their upper bounds (``gpusizer.bounds``); the lower bounds are
the fields' own (``cards >= 1``, ``days > 0``, prices ``>= 0``)."""


class OfferRow(BaseModel):
    """A catalog row as written (pydantic; unknown keys are refused).

    Attributes mirror the contract's keys; ``host_ram`` and ``storage`` arrive as sizes with a
    unit (``"64 GB"``) and leave as bytes.
    """

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    provider: str = Field(min_length=1)
    card: str = Field(min_length=1)
    cards: int = Field(ge=1)
    days: float | None = Field(default=None, gt=0)
    total_usd: float | None = Field(default=None, ge=0)
    usd_per_hour: float | None = Field(default=None, ge=0)
    available_from: dt.date | None = None
    available_until: dt.date | None = None
    host_ram: int | None = None
    storage: int | None = None
    interconnect: str | None = None
    environment: str | None = None
    spot: bool = False
    document: str | None = None
    version: str | None = None
    cloud: str | None = None
    region: str | None = None
    instance_type: str | None = None

    @field_validator(*_NUMBER_BOUNDS, mode="before")
    @classmethod
    def _number(cls, value: Any, info: ValidationInfo) -> Any:
        """Every number through ``gpusizer.bounds`` (YAML values and CSV text alike): no
        true/false, no NaN or infinity, bounded."""
        if value is None:
            return None
        bounds = _NUMBER_BOUNDS[info.field_name]
        try:
            return (number_from_text(value, **bounds) if isinstance(value, str)
                    else check_number(value, **bounds))
        except NumberProblem as exc:
            raise ValueError(exc.expected) from None

    @field_validator("spot", mode="before")
    @classmethod
    def _flag(cls, value: Any) -> Any:
        """true or false (a CSV cell says ``true``/``false``); 1 is not true."""
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {value!r:.40}")
        return value

    @field_validator("id", "version", "document", "provider", "card", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("expected text, not true/false")
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            # YAML reads 1.10 as the number 1.1: refuse rather than change the text
            raise ValueError("expected text; quote it in YAML (1.10 would be read as 1.1)")
        return value

    @field_validator("host_ram", "storage", mode="before")
    @classmethod
    def _size(cls, value: Any) -> Any:
        if value is None:
            return None
        try:
            return parse_bytes(value)
        except SheetError as exc:
            raise ValueError(
                "expected a size with a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. "
                "'64 GB'; a bare number could be GB or GiB") from exc

    @field_validator("interconnect")
    @classmethod
    def _lower(cls, value: str | None) -> str | None:
        return value.strip().lower() if value is not None else None

    @model_validator(mode="after")
    def _consistent(self) -> OfferRow:
        if self.total_usd is not None and self.usd_per_hour is not None:
            raise ValueError("give total_usd or usd_per_hour, not both (which one is the price?)")
        if (self.available_from is not None and self.available_until is not None
                and self.available_until < self.available_from):
            raise ValueError(f"available_until {self.available_until} is before "
                             f"available_from {self.available_from}")
        return self


def _to_offer(row: OfferRow, *, row_number: int, document: str | None) -> Offer:
    notes: list[str] = []
    total_usd = row.total_usd
    if total_usd is None and row.usd_per_hour is not None:
        if row.days is not None:
            total_usd = row.usd_per_hour * HOURS_PER_DAY * row.days
            notes.append(f"total_usd = usd_per_hour {row.usd_per_hour} × 24 × {row.days} days")
        else:
            notes.append("hourly price only; the total needs budget.days")
    if total_usd is None and row.usd_per_hour is None:
        notes.append("no price in the catalog row")
    return Offer(
        id=row.id or f"{row.provider}-{row_number}",
        provider=row.provider,
        card=row.card,
        cards=row.cards,
        days=row.days,
        total_usd=total_usd,
        usd_per_hour=row.usd_per_hour,
        available_from=row.available_from,
        available_until=row.available_until,
        host_ram_bytes=row.host_ram,
        storage_bytes=row.storage,
        interconnect=row.interconnect,
        environment=row.environment,
        spot=row.spot,
        document=row.document or document,
        version=row.version,
        notes=tuple(notes),
        cloud=row.cloud,
        region=row.region,
        instance_type=row.instance_type,
    )


def offer_from_mapping(mapping: object, *, file: str, row_number: int,
                       document: str | None = None) -> Offer:
    """Validate one row and build its :class:`Offer`.

    Args:
        mapping: the row (YAML mapping, or CSV cells with empty cells already removed).
        file: the catalog file, for messages.
        row_number: 1-based data row number (default id = provider-row_number).
        document: fallback ``document`` when the row names none (e.g. the file name).

    Raises:
        CatalogError: not a mapping, unknown key, bad value, a control or bidi character in a
            text (``gpusizer.bounds.unsafe_character``); names file, row, field and value.
    """
    where = f"row {row_number}"
    if not isinstance(mapping, dict):
        raise CatalogError(f"expected a mapping of {', '.join(CONTRACT_KEYS)}, "
                           f"got {type(mapping).__name__} {mapping!r}", field=where, file=file)
    unsafe = first_unsafe_text(mapping)
    if unsafe is not None:  # an ANSI escape, a newline or a bidi override in a text field
        raise CatalogError(f"{unsafe[1]} in {shown(unsafe[2])}: text may not "
                           "hold control or bidi characters", field=f"{where}.{unsafe[0]}",
                           file=file)
    try:
        row = OfferRow.model_validate(mapping)
    except ValidationError as exc:
        raise catalog_error_from(exc, file=file, where=where, known_keys=CONTRACT_KEYS) from exc
    return _to_offer(row, row_number=row_number, document=document)
