"""Read offer catalogs (``--catalog``): contract YAML or CSV, and SkyPilot ``vms.csv`` files.

``load_catalogs`` reads each file with the reader its form calls for (a ``.csv`` whose header has
``InstanceType`` and ``AcceleratorName`` is a SkyPilot catalog), checks that offer ids are unique
across files and records each file's SHA-256. Without ``--catalog`` the bundled default catalog
(the seed's two offers) is used: :func:`load_default_catalog`.
"""

from __future__ import annotations

import csv
import io
from importlib import resources
from pathlib import Path


from ..yaml_reader import YamlProblem, decode_text, parse_yaml
from ..errors import CatalogError
from .catalog_file import CatalogFile, CatalogKind, sha256_hex
from .offer_row import CONTRACT_KEYS, HOURS_PER_DAY, offer_from_mapping
from .skypilot import is_skypilot_header, read_skypilot_text
from .types import Offer

__all__ = [
    "read_catalog", "load_catalogs", "load_default_catalog", "offer_total_usd",
    "DEFAULT_CATALOG_FILE",
]

DEFAULT_CATALOG_FILE = "gpusizer/data/default_catalog.yaml"
"""How the bundled default catalog is named in reports (package data)."""


def offer_total_usd(offer: Offer, days: float | None) -> float | None:
    """Price of the whole lot, USD.

    Args:
        offer: the offer.
        days: the days the campaign needs (``budget.days``); used only when the offer has no
            ``days`` of its own.

    Returns:
        ``offer.total_usd`` when the catalog gave (or could compute) it; otherwise
        ``usd_per_hour × 24 × days`` with ``days`` = the offer's days, else the given days;
        None when neither a price nor a number of days is known.
    """
    if offer.total_usd is not None:
        return offer.total_usd
    if offer.usd_per_hour is None:
        return None
    rental_days = offer.days if offer.days is not None else days
    if rental_days is None:
        return None
    return offer.usd_per_hour * HOURS_PER_DAY * rental_days


def _decode(data: bytes, file: str) -> str:
    try:
        return decode_text(data)
    except YamlProblem as exc:
        raise CatalogError(str(exc), file=file) from None


def _offers_from_yaml(text: str, file: str) -> list[Offer]:
    try:
        rows = parse_yaml(text)
    except YamlProblem as exc:
        raise CatalogError(str(exc), file=file) from None
    if not isinstance(rows, list):
        raise CatalogError(
            f"expected a YAML list of offers (each a mapping of {', '.join(CONTRACT_KEYS)}), "
            f"got {type(rows).__name__}", file=file)
    return [offer_from_mapping(row, file=file, row_number=number)
            for number, row in enumerate(rows, start=1)]


def _offers_from_csv(text: str, file: str) -> list[Offer]:
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header:
        raise CatalogError("empty CSV: expected a header row with the contract keys", file=file)
    header = [name.strip() for name in header]
    for name in header:
        if name not in CONTRACT_KEYS:
            raise CatalogError(f"unknown column {name!r}; accepted: {', '.join(CONTRACT_KEYS)}",
                               field="header", value=name, file=file)
    duplicates = sorted({name for name in header if header.count(name) > 1})
    if duplicates:
        raise CatalogError(f"column(s) given twice: {duplicates}", field="header", file=file)
    offers = []
    for number, cells in enumerate(reader, start=1):
        if not any(cell.strip() for cell in cells):
            continue  # a blank line is not a row
        if len(cells) != len(header):
            raise CatalogError(f"{len(cells)} cells for {len(header)} columns (leave a cell empty "
                               "for an unknown value, but keep every column)",
                               field=f"row {number}", file=file)
        # an empty cell is an absent key (so its default or 'unknown' applies)
        mapping = {name: cell.strip() for name, cell in zip(header, cells) if cell.strip()}
        offers.append(offer_from_mapping(mapping, file=file, row_number=number))
    return offers


def read_catalog(path: Path, *, days: float | None = None) -> tuple[list[Offer], CatalogFile]:
    """Read one catalog file, choosing the reader by form.

    Args:
        path: a ``.yaml``/``.yml`` list of offers, a contract ``.csv``, or a SkyPilot ``vms.csv``.
        days: rental days for SkyPilot hourly prices (``budget.days``); None keeps them hourly.

    Returns:
        The file's offers and its :class:`CatalogFile` record.

    Raises:
        CatalogError: unreadable file, unknown form, or a bad row (file, row, field, value).
    """
    file = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError(f"cannot read the catalog: {exc.strerror or exc}", file=file) from exc
    text = _decode(data, file)
    digest = sha256_hex(data)
    suffix = path.suffix.lower()
    kind: CatalogKind
    if suffix in (".yaml", ".yml"):
        kind, offers = "offers-yaml", _offers_from_yaml(text, file)
    elif suffix == ".csv":
        first_line = next(csv.reader(io.StringIO(text, newline="")), [])
        if is_skypilot_header(first_line):
            offers, record = read_skypilot_text(text, file=file, sha256=digest, days=days)
            return offers, record
        kind, offers = "offers-csv", _offers_from_csv(text, file)
    else:
        raise CatalogError(f"unknown catalog form {suffix or '(no suffix)'!r}; expected .yaml, "
                           ".yml or .csv", file=file)
    _check_unique(offers, {}, file)
    return offers, CatalogFile(path=file, sha256=digest, kind=kind, offers=len(offers))


def _check_unique(offers: list[Offer], seen: dict[str, str], file: str) -> None:
    """Refuse an offer id already seen (``seen`` maps id → the file it came from)."""
    for offer in offers:
        if offer.id in seen:
            first = seen[offer.id]
            where = ("twice in this file (or the file is given twice)" if first == file
                     else f"also in {first}")
            raise CatalogError(f"offer id {offer.id!r} is used {where}; give each offer its own id",
                               field="id", value=offer.id, file=file)
        seen[offer.id] = file


def load_catalogs(paths: list[Path], *, days: float | None = None
                  ) -> tuple[list[Offer], list[CatalogFile]]:
    """Read every ``--catalog`` file and combine their offers.

    Args:
        paths: the catalog files, in the order given.
        days: ``budget.days``, used to total SkyPilot hourly prices (others keep theirs).

    Returns:
        All offers (file order, then row order) and one :class:`CatalogFile` per file.

    Raises:
        CatalogError: any file is invalid, or two offers share an id (within or across files).
    """
    offers: list[Offer] = []
    files: list[CatalogFile] = []
    seen: dict[str, str] = {}
    for path in paths:
        file_offers, record = read_catalog(Path(path), days=days)
        _check_unique(file_offers, seen, record.path)
        offers.extend(file_offers)
        files.append(record)
    return offers, files


def load_default_catalog() -> tuple[list[Offer], list[CatalogFile]]:
    """The bundled default catalog: the seed's two offers (RTX 4090 and RTX 6000 Ada, 1 card,
    3 days, 47.14 and 55.71 USD), with its :class:`CatalogFile` record."""
    data = resources.files("gpusizer").joinpath("data/default_catalog.yaml").read_bytes()
    offers = _offers_from_yaml(_decode(data, DEFAULT_CATALOG_FILE), DEFAULT_CATALOG_FILE)
    _check_unique(offers, {}, DEFAULT_CATALOG_FILE)
    record = CatalogFile(path=DEFAULT_CATALOG_FILE, sha256=sha256_hex(data),
                         kind="bundled-default", offers=len(offers))
    return offers, [record]
