"""What was read from one catalog file: its hash, what it held, what was set aside and why.

The report prints each catalog's SHA-256 (``gpusizer.catalogs`` in the JSON output), so a plan can
be tied to the exact bytes it was computed from.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["CatalogFile", "CatalogDiscrepancy", "SkippedRow", "CatalogKind", "sha256_hex"]

CatalogKind = Literal["offers-yaml", "offers-csv", "offers-rows", "skypilot-vms",
                      "bundled-default"]


def sha256_hex(data: bytes) -> str:
    """SHA-256 of the file's bytes, lower-case hex (as ``sha256sum`` prints it)."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class CatalogDiscrepancy:
    """A catalog's per-card memory claim that disagrees with the card table.

    The card table's device bytes are used; this record only reports the claim.

    Attributes:
        offer_id: the offer whose row made the claim.
        card: the card table's canonical name.
        catalog_bytes: per-card memory the catalog claims (e.g. SkyPilot GpuInfo SizeInMiB × 2**20).
        card_bytes: the card table's device bytes (nvidia-smi total).
        relative_difference: (catalog_bytes − card_bytes) / card_bytes; positive when the catalog
            claims more than the device reports.
    """

    offer_id: str
    card: str
    catalog_bytes: int
    card_bytes: int
    relative_difference: float


@dataclass(frozen=True)
class SkippedRow:
    """A catalog row that gave no offer, with the reason (never dropped silently).

    Attributes:
        row: 1-based data row number (the header is not counted).
        reason: why it gave no offer.
        label: what identifies the row (e.g. its InstanceType), if anything.
    """

    row: int
    reason: str
    label: str = ""


@dataclass(frozen=True)
class CatalogFile:
    """One catalog file as read.

    Attributes:
        path: the file as given (or ``gpusizer/data/default_catalog.yaml`` for the bundled one,
            the name given to a catalog read from text or rows: ``catalogs[0]``).
        sha256: SHA-256 of its bytes (of the rows' canonical JSON for ``offers-rows``).
        kind: which reader read it.
        offers: how many offers it gave.
        discrepancies: memory claims that disagree with the card table.
        skipped: rows that gave no offer, with reasons.
    """

    path: str
    sha256: str
    kind: CatalogKind
    offers: int
    discrepancies: tuple[CatalogDiscrepancy, ...] = field(default=())
    skipped: tuple[SkippedRow, ...] = field(default=())
