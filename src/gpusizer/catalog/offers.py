"""Read offer catalogs (``--catalog``): contract YAML or CSV, and SkyPilot ``vms.csv`` files,
from a file, its bytes, a text or rows already parsed.

``load_catalogs`` reads each catalog with the reader its form calls for (a CSV whose header has
``InstanceType`` and ``AcceleratorName`` is a SkyPilot catalog), checks that offer ids are unique
across catalogs and records each one's SHA-256. Without ``--catalog`` the bundled default catalog
(the seed's two offers) is used: :func:`load_default_catalog`.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path, PurePath
from typing import Any, Literal, Union


from ..input_files import read_input
from ..yaml_reader import YamlProblem, decode_text, parse_yaml
from ..errors import CatalogError, listed
from .catalog_file import CatalogFile, CatalogKind, sha256_hex
from .offer_row import CONTRACT_KEYS, HOURS_PER_DAY, offer_from_mapping
from .skypilot import is_skypilot_header, read_skypilot_text
from .types import Offer

__all__ = [
    "read_catalog", "read_catalog_bytes", "read_catalog_text", "read_catalog_rows",
    "load_catalogs", "load_default_catalog", "offer_total_usd", "catalog_text_form",
    "CatalogForm", "CatalogSource", "DEFAULT_CATALOG_FILE",
]

CatalogForm = Literal["yaml", "csv"]
"""How a catalog's text is written: a YAML list of rows, or CSV (contract or SkyPilot header)."""

CatalogSource = Union["os.PathLike[str]", str, Sequence[Mapping[str, Any]]]
"""One catalog: a file (``os.PathLike``), a text (``str``, never a path) or its rows."""

_SUFFIX_FORMS: dict[str, CatalogForm] = {".yaml": "yaml", ".yml": "yaml", ".csv": "csv"}

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
    return _every_row(((number, row) for number, row in enumerate(rows, start=1)), file)


MAX_ROW_ERRORS = 10
"""The most bad rows one catalog error lists (the count of the others follows)."""


def _every_row(rows, file: str) -> list[Offer]:
    """Every row made an offer, or one CatalogError counting every bad row and listing the
    first ones (at most :data:`MAX_ROW_ERRORS`, within ``errors.LISTED_CHARS``), then how many
    more: a user sees them all at once and the line stays short.

    Args:
        rows: ``(row number, mapping)`` pairs.
    """
    offers, bad = [], []
    for number, mapping in rows:
        try:
            offers.append(offer_from_mapping(mapping, file=file, row_number=number))
        except CatalogError as exc:
            bad.append(exc)
    if len(bad) == 1:
        raise bad[0]
    if bad:
        text = listed([f"{e.field}: {e.reason}" if e.field else e.reason for e in bad],
                      most=MAX_ROW_ERRORS, names=[e.field or "" for e in bad])
        raise CatalogError(f"{len(bad)} rows are invalid: {text}", file=file)
    return offers


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
    def rows():
        for number, cells in enumerate(reader, start=1):
            if not any(cell.strip() for cell in cells):
                continue  # a blank line is not a row
            if len(cells) != len(header):
                raise CatalogError(f"{len(cells)} cells for {len(header)} columns (leave a cell "
                                   "empty for an unknown value, but keep every column)",
                                   field=f"row {number}", file=file)
            # an empty cell is an absent key (so its default or 'unknown' applies)
            yield number, {name: cell.strip() for name, cell in zip(header, cells)
                           if cell.strip()}

    return _every_row(rows(), file)


def read_catalog(path: Path, *, days: float | None = None) -> tuple[list[Offer], CatalogFile]:
    """Read one catalog file, choosing the reader by form.

    Args:
        path: a ``.yaml``/``.yml`` list of offers, a contract ``.csv``, or a SkyPilot ``vms.csv``.
        days: rental days for SkyPilot hourly prices (``budget.days``); None keeps them hourly.

    Returns:
        The file's offers and its :class:`CatalogFile` record.

    Raises:
        CatalogError: unreadable file, not a regular file, over 64 MiB, unknown form, or a bad
            row (file, row, field, value).
    """
    data = read_input(path, "catalog", CatalogError)
    return read_catalog_bytes(data, str(path), days=days)


def read_catalog_bytes(data: bytes, name: str, *, days: float | None = None,
                       form: CatalogForm | None = None) -> tuple[list[Offer], CatalogFile]:
    """Read one catalog from its bytes, as :func:`read_catalog` reads the file ``name``.

    Args:
        data: the catalog's bytes (UTF-8, with or without BOM).
        name: what the catalog is called in messages and in the report (a file name: for a
            SkyPilot catalog it also names the cloud, ``lambda/vms.csv`` → ``lambda``).
        days: rental days for SkyPilot hourly prices (``budget.days``); None keeps them hourly.
        form: ``"yaml"`` or ``"csv"`` (a SkyPilot ``vms.csv`` is told by its header); None →
            from ``name``'s suffix (``.yaml``, ``.yml``, ``.csv``).

    Returns:
        The catalog's offers and its :class:`CatalogFile` record (SHA-256 of ``data``).

    Raises:
        CatalogError: not UTF-8, unknown form, or a bad row (name, row, field, value).
    """
    text = _decode(data, name)
    digest = sha256_hex(data)
    suffix = PurePath(name).suffix.lower()
    form = form or _SUFFIX_FORMS.get(suffix)
    kind: CatalogKind
    if form == "yaml":
        kind, offers = "offers-yaml", _offers_from_yaml(text, name)
    elif form == "csv":
        first_line = next(csv.reader(io.StringIO(text, newline="")), [])
        if is_skypilot_header(first_line):
            offers, record = read_skypilot_text(text, file=name, sha256=digest, days=days)
            return offers, record
        kind, offers = "offers-csv", _offers_from_csv(text, name)
    else:
        raise CatalogError(f"unknown catalog form {suffix or '(no suffix)'!r}; expected .yaml, "
                           ".yml or .csv", file=name)
    _check_unique(offers, {}, name)
    return offers, CatalogFile(path=name, sha256=digest, kind=kind, offers=len(offers))


def catalog_text_form(text: str) -> CatalogForm:
    """YAML when the first line that is neither blank nor a ``#`` comment starts with ``-``,
    ``[`` or ``%`` (a YAML catalog is a list of rows; ``---`` and directives included); CSV
    otherwise (a header row of contract keys, or SkyPilot's ``InstanceType,…``)."""
    for line in text.splitlines():
        stripped = line.strip().lstrip("\ufeff")
        if stripped and not stripped.startswith("#"):
            return "yaml" if stripped.startswith(("-", "[", "%")) else "csv"
    return "yaml"


def read_catalog_text(text: str, name: str, *, days: float | None = None
                      ) -> tuple[list[Offer], CatalogFile]:
    """Read one catalog given as text; YAML or CSV by :func:`catalog_text_form`.

    Args:
        text: the catalog as written in a file.
        name: what it is called in messages and in the report (e.g. ``catalogs[0]``).
        days: rental days for SkyPilot hourly prices.

    Returns:
        Its offers and its :class:`CatalogFile` (SHA-256 of the text's UTF-8 bytes).

    Raises:
        CatalogError: as :func:`read_catalog_bytes`.
    """
    return read_catalog_bytes(text.encode("utf-8"), name, days=days,
                              form=catalog_text_form(text))


def read_catalog_rows(rows: Sequence[Mapping[str, Any]], name: str = "catalogs"
                      ) -> tuple[list[Offer], CatalogFile]:
    """Read one catalog given as rows already parsed: each a mapping of the contract keys, as
    a YAML catalog's rows are (``host_ram: "64 GB"``, dates as text or ``datetime.date``).

    Args:
        rows: the rows, in order (row numbers in messages count from 1).
        name: what the catalog is called in messages and in the report.

    Returns:
        Its offers and its :class:`CatalogFile` (kind ``offers-rows``; SHA-256 of the rows'
        canonical JSON: keys sorted, no spaces, dates as ISO text).

    Raises:
        CatalogError: a row that is not a mapping, an unknown key, a bad value, or an offer id
            used twice (name, row, field and value named).
    """
    offers = [offer_from_mapping(dict(row) if isinstance(row, Mapping) else row, file=name,
                                 row_number=number)
              for number, row in enumerate(rows, start=1)]
    _check_unique(offers, {}, name)
    canonical = json.dumps([dict(row) for row in rows], sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False, default=str)
    return offers, CatalogFile(path=name, sha256=sha256_hex(canonical.encode("utf-8")),
                               kind="offers-rows", offers=len(offers))


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


def load_catalogs(sources: Sequence[CatalogSource] | CatalogSource, *,
                  days: float | None = None) -> tuple[list[Offer], list[CatalogFile]]:
    """Read every catalog and combine their offers.

    Args:
        sources: the catalogs, in the order given. Each is a path (``os.PathLike``: a file, read
            by :func:`read_catalog`), a text (``str``: :func:`read_catalog_text`, named
            ``catalogs[i]``) or a sequence of rows (:func:`read_catalog_rows`, named
            ``catalogs[i]``). A sequence of mappings is itself one catalog of rows, named
            ``catalogs``; a single path or text is one catalog.
        days: ``budget.days``, used to total SkyPilot hourly prices (others keep theirs).

    Returns:
        All offers (catalog order, then row order) and one :class:`CatalogFile` per catalog.

    Raises:
        CatalogError: any catalog is invalid, a source is of none of these kinds, or two offers
            share an id (within or across catalogs).
    """
    offers: list[Offer] = []
    files: list[CatalogFile] = []
    seen: dict[str, str] = {}
    for file_offers, record in _read_each(sources, days):
        _check_unique(file_offers, seen, record.path)
        offers.extend(file_offers)
        files.append(record)
    return offers, files


def _read_each(sources: Sequence[CatalogSource] | CatalogSource, days: float | None
               ) -> Iterable[tuple[list[Offer], CatalogFile]]:
    """Each source read in turn (lazily: a later unreadable file is met after an earlier
    duplicate id, as the files are given)."""
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    if sources and all(isinstance(s, Mapping) for s in sources):
        yield read_catalog_rows(sources, "catalogs")  # type: ignore[arg-type]
        return
    for i, source in enumerate(sources):
        name = f"catalogs[{i}]"
        if isinstance(source, os.PathLike):
            yield read_catalog(Path(source), days=days)
        elif isinstance(source, str):
            yield read_catalog_text(source, name, days=days)
        elif isinstance(source, Sequence) and all(isinstance(r, Mapping) for r in source):
            yield read_catalog_rows(source, name)
        else:
            raise CatalogError("expected a catalog file (os.PathLike), a catalog text (str) or a "
                               f"list of offer rows (mappings), got {type(source).__name__}",
                               field=name)


def load_default_catalog() -> tuple[list[Offer], list[CatalogFile]]:
    """The bundled default catalog: the seed's two offers (RTX 4090 and RTX 6000 Ada, 1 card,
    3 days, 47.14 and 55.71 USD), with its :class:`CatalogFile` record."""
    data = resources.files("gpusizer").joinpath("data/default_catalog.yaml").read_bytes()
    offers, record = read_catalog_bytes(data, DEFAULT_CATALOG_FILE)
    return offers, [dataclasses.replace(record, kind="bundled-default")]
