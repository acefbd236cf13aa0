"""Read a SkyPilot catalog ``vms.csv`` (skypilot-org/skypilot-catalog ``catalogs/v8/<cloud>/``).

Columns are found by header name (their order differs between clouds): InstanceType,
AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, GpuInfo, Price, SpotPrice, Region. One offer
per row that has an accelerator and a Price; a SpotPrice > 0 gives a second, separate offer
(``spot=True``, id suffix ``-spot``). Rows that give no offer are recorded with the reason.

``Price``/``SpotPrice`` are USD per hour for the whole instance (all its GPUs), so
``total_usd = price × 24 × days`` with ``days`` from the caller (``budget.days``); without days
the offer keeps ``usd_per_hour`` and ``total_usd`` stays None.

``GpuInfo`` is a Python-literal dict (with JSON ``null`` in some files), parsed by walking its
syntax tree (never ``eval``). Its ``MemoryInfo.SizeInMiB`` is per GPU in most files but the total
over the row's GPUs in vast's (2x-H200: 287542 = 2 × 143771); where ``TotalGpuMemoryInMiB``
repeats it on a multi-GPU row, the card table decides which reading is per GPU, then the
provider's convention (:data:`SIZE_IS_TOTAL_PROVIDERS`), else ``SizeInMiB`` is per GPU
(:func:`per_gpu_memory_mib`). That figure is a claim: the card table's device bytes win, and
each claim off by more than :data:`DISCREPANCY_THRESHOLD` is returned as a
:class:`CatalogDiscrepancy`.
"""

from __future__ import annotations

import ast
import csv
import functools
import io
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Callable

from ..bounds import (MAX_BYTES, MAX_COUNT, MAX_USD, NumberProblem, first_unsafe_text,
                      number_from_text)
from ..errors import CatalogError
from ..input_files import read_input
from ..units import GiB, MiB, fmt_bytes
from .card_table import bundled_card_table
from .cards import memory_fits_card, resolve_card
from .catalog_file import CatalogDiscrepancy, CatalogFile, SkippedRow, sha256_hex
from .offer_row import HOURS_PER_DAY
from .types import Offer

__all__ = [
    "SKYPILOT_COLUMNS", "DISCREPANCY_THRESHOLD", "SIZE_IS_TOTAL_PROVIDERS", "is_skypilot_header",
    "read_skypilot_csv",
    "read_skypilot_text", "provider_from_path", "parse_gpu_info", "per_gpu_memory_mib",
    "describe_discrepancy",
]

SKYPILOT_COLUMNS: tuple[str, ...] = (
    "InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "GpuInfo",
    "Price", "SpotPrice", "Region",
)
_REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price")

SIZE_IS_TOTAL_PROVIDERS = frozenset({"vast"})
"""Providers whose multi-GPU rows give the row's total as ``SizeInMiB`` (and repeat it as
``TotalGpuMemoryInMiB``): in skypilot-catalog v8 ``vast/vms.csv`` every multi-GPU row of a
card the table knows reads N × the card's nvidia-smi total (2x-H200: 287542 = 2 × 143771 MiB),
so its rows of unknown cards are read the same way."""

DISCREPANCY_THRESHOLD = 0.001
"""Relative gap (fraction) above which a catalog's per-GPU memory claim is reported.

0.1 %: reports jarvislabs' H200 144384 MiB (141 GiB nominal) against the 143771 MiB the device
reports (+0.43 %, 613 MiB that a fit could count on) and hyperstack's H100 81920 vs 81559 MiB
(+0.44 %); a 1 % threshold would hide both. Gaps below it (RTX A4000 16384 vs 16376 MiB, 0.05 %)
are rounding of a nominal figure.
"""

# vast names its instance types "<N>x-<GPU variant>-<vCPUs>-<RAM MiB>", e.g. 1x-H100_SXM-32-65536
_VARIANT_IN_INSTANCE_TYPE = re.compile(r"^\d+x-(?P<variant>.+?)-\d+-\d+$")
_PROVIDER_IN_FILE_NAME = re.compile(r"(?:^|_)(?P<provider>[A-Za-z0-9]+)_vms$")
_JSON_WORDS = {"null": None, "true": True, "false": False, "None": None, "True": True,
               "False": False}


def is_skypilot_header(header: list[str]) -> bool:
    """True when a CSV header is a SkyPilot ``vms.csv`` one (has InstanceType and
    AcceleratorName)."""
    names = {name.strip() for name in header}
    return {"InstanceType", "AcceleratorName"} <= names


def provider_from_path(file: str) -> str:
    """The cloud a vms.csv belongs to: ``…_vast_vms.csv`` → ``vast``; ``v8/lambda/vms.csv`` →
    ``lambda``; otherwise the file's stem."""
    path = Path(file)
    match = _PROVIDER_IN_FILE_NAME.search(path.stem)
    if match:
        return match.group("provider")
    if path.stem == "vms" and path.parent.name:
        return path.parent.name
    return path.stem


def _literal(node: ast.AST) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Dict):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values) if k is not None}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(element) for element in node.elts]
    if isinstance(node, ast.Name) and node.id in _JSON_WORDS:
        return _JSON_WORDS[node.id]
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, (int, float))):
        return -node.operand.value
    raise ValueError(f"not a literal: {ast.dump(node)[:60]}")


def parse_gpu_info(text: str) -> dict:
    """Parse a GpuInfo cell like ``ast.literal_eval`` does, also accepting JSON's null/true/false
    (hyperstack writes ``'Manufacturer': null``). Never evaluates code.

    Raises:
        ValueError: the cell is not a literal dict.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"GpuInfo is not a literal: {exc.msg}") from exc
    value = _literal(tree.body)
    if not isinstance(value, dict):
        raise ValueError("GpuInfo is not a dict")
    return value


def _whole(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if float(value).is_integer() else None


def per_gpu_memory_mib(info: dict, fits_card: Callable[[int], bool] | None = None, *,
                       size_is_total: bool = False) -> tuple[int | None, str]:
    """Per-GPU memory a GpuInfo claims, MiB, and how it was read.

    ``SizeInMiB`` is per GPU when ``TotalGpuMemoryInMiB = SizeInMiB × Count``. When
    ``TotalGpuMemoryInMiB = SizeInMiB`` with ``Count > 1`` the row is ambiguous: vast writes the
    row's total in both (2x-H200: 287542 = 2 × 143771), other providers the per-GPU figure in
    both. The card decides where it can (``fits_card``: does this per-GPU MiB figure fit the
    card the row names?); otherwise the provider's convention (``size_is_total``), else the
    per-GPU reading of ``SizeInMiB`` wins.

    Args:
        info: the parsed GpuInfo cell.
        fits_card: a predicate on a per-GPU MiB figure, or None (no card to ask).
        size_is_total: the provider writes the row's total in ``SizeInMiB``
            (:data:`SIZE_IS_TOTAL_PROVIDERS`).

    Returns:
        (MiB or None, a sentence saying how, or why unknown).
    """
    gpus = info.get("Gpus")
    if not isinstance(gpus, list) or len(gpus) != 1 or not isinstance(gpus[0], dict):
        return None, "GpuInfo does not list exactly one GPU kind"
    size = _whole((gpus[0].get("MemoryInfo") or {}).get("SizeInMiB"))
    count = _whole(gpus[0].get("Count"))
    total = _whole(info.get("TotalGpuMemoryInMiB"))
    if size is None or size <= 0:
        return None, "GpuInfo has no SizeInMiB"
    if count is None or count < 1:
        return None, "GpuInfo has no GPU Count"
    if count == 1 or (total is not None and total == size * count):
        return size, "GpuInfo SizeInMiB is per GPU"
    if total == size:
        share = size // count if size % count == 0 else None
        per_gpu = fits_card is not None and fits_card(size)
        divided = fits_card is not None and share is not None and fits_card(share)
        if share is not None and divided and not per_gpu:
            return share, (f"GpuInfo SizeInMiB {size} is the total of {count} GPUs (the card "
                           f"has {share} MiB); divided")
        if share is not None and size_is_total and not per_gpu:
            return share, (f"GpuInfo SizeInMiB {size} is the total of {count} GPUs (this "
                           "provider writes totals); divided")
        return size, (f"GpuInfo SizeInMiB {size} taken per GPU (TotalGpuMemoryInMiB repeats it "
                      f"for {count} GPUs)")
    return None, (f"GpuInfo SizeInMiB {size}, Count {count} and TotalGpuMemoryInMiB {total} "
                  "disagree")


@functools.lru_cache(maxsize=4096)
def _gpu_info_memory(text: str, accelerator: str, instance_type: str, size_is_total: bool
                     ) -> tuple[int | None, str]:
    """:func:`per_gpu_memory_mib` of a GpuInfo cell, asking the card table whether a figure
    fits the card the row names, or (None, why unreadable); once per distinct cell (a large
    catalog repeats a few dozen; issue 12, "Speed")."""
    def fits_card(mib: int) -> bool:
        name, _ = _card_of(accelerator, instance_type, mib * MiB)
        return name is not None and memory_fits_card(mib * MiB,
                                                     bundled_card_table().by_name(name))

    try:
        return per_gpu_memory_mib(parse_gpu_info(text), fits_card, size_is_total=size_is_total)
    except ValueError as exc:
        return None, f"GpuInfo unreadable ({exc})"


def _card_of(accelerator: str, instance_type: str, memory_bytes: int | None
             ) -> tuple[str | None, str]:
    """The canonical card a row names (its AcceleratorName, else vast's variant in the instance
    type), decided by ``memory_bytes`` where the name is ambiguous, and how."""
    match = resolve_card(accelerator, memory_bytes)
    if match.card is not None:
        return match.card.name, match.reason
    variant = _VARIANT_IN_INSTANCE_TYPE.match(instance_type)
    if variant:
        by_type = resolve_card(variant.group("variant"), memory_bytes)
        if by_type.card is not None:
            return by_type.card.name, (f"{match.reason}; decided by the instance type "
                                       f"{instance_type!r}: {by_type.reason}")
    return None, f"card unknown: {match.reason}"


def _price(text: str) -> float | None:
    """A USD-per-hour cell through ``gpusizer.bounds`` (finite, 0 ≤ price ≤ MAX_USD), or None."""
    try:
        return float(number_from_text(text, minimum=0, maximum=MAX_USD))
    except NumberProblem:
        return None


def _count(text: str) -> int | None:
    """A GPU count cell: a whole number in [1, MAX_COUNT], or None."""
    try:
        value = number_from_text(text, minimum=1, maximum=MAX_COUNT)
    except NumberProblem:
        return None
    return int(value) if float(value).is_integer() else None


def _host_ram_bytes(text: str) -> int | None:
    """``MemoryGiB`` as whole bytes (finite, 0 ≤ bytes ≤ MAX_BYTES), or None."""
    try:
        exact = Decimal(text) * GiB
    except InvalidOperation:
        return None
    if not exact.is_finite() or not 0 <= exact <= MAX_BYTES:
        return None
    return int(exact) if exact == exact.to_integral_value() else None


class _Reader:
    """State of one file's reading: offers, ids, discrepancies, skipped rows."""

    def __init__(self, file: str, sha256: str, days: float | None, provider: str) -> None:
        self.file, self.days, self.provider = file, days, provider
        self.document = f"SkyPilot catalog {Path(file).name}"
        self.version = f"sha256:{sha256[:12]}"
        self.offers: list[Offer] = []
        self.ids: set[str] = set()
        self.discrepancies: list[CatalogDiscrepancy] = []
        self.skipped: list[SkippedRow] = []

    def _unique_id(self, base: str, row: int) -> str:
        offer_id = base if base not in self.ids else f"{base}#row{row}"
        self.ids.add(offer_id)
        return offer_id

    def row(self, number: int, cells: dict[str, str]) -> None:
        instance_type = cells.get("InstanceType", "")
        unsafe = first_unsafe_text(cells)
        if unsafe is not None:  # an ANSI escape or a bidi override: never shown (bounds)
            self.skipped.append(SkippedRow(number, f"{unsafe[0]}: {unsafe[1]} (text may not "
                                           "hold control or bidi characters)",
                                           ascii(instance_type)[1:-1][:60]))
            return
        accelerator = cells.get("AcceleratorName", "")
        if not accelerator:
            self.skipped.append(SkippedRow(number, "no accelerator (CPU-only instance)",
                                           instance_type))
            return
        price_text = cells.get("Price", "")
        price = _price(price_text) if price_text else None
        if price is None:
            reason = ("no Price (the on-demand price is not listed)" if not price_text
                      else f"Price {price_text!r} is not a price >= 0")
            self.skipped.append(SkippedRow(number, reason, instance_type))
            return
        count_value = _count(cells.get("AcceleratorCount", ""))
        if count_value is None:
            self.skipped.append(SkippedRow(
                number, f"AcceleratorCount {cells.get('AcceleratorCount', '')!r} is not a whole "
                        "number >= 1", instance_type))
            return
        notes = [f"Price is USD per hour for the whole instance ({self.document})"]
        memory_mib = None
        if cells.get("GpuInfo"):
            memory_mib, how = _gpu_info_memory(cells["GpuInfo"], accelerator, instance_type,
                                               self.provider in SIZE_IS_TOTAL_PROVIDERS)
            notes.append(how)
        memory_bytes = memory_mib * MiB if memory_mib is not None else None
        canonical, how_card = _card_of(accelerator, instance_type, memory_bytes)
        notes.append(how_card)
        host_ram = _host_ram_bytes(cells["MemoryGiB"]) if cells.get("MemoryGiB") else None
        if cells.get("MemoryGiB") and host_ram is None:
            notes.append(f"MemoryGiB {cells['MemoryGiB'][:40]!r} is not a whole number of bytes "
                         "between 0 and 2**128: host RAM unknown")
        region = cells.get("Region") or None
        base_id = f"{self.provider}/{instance_type}/{region or 'no-region'}"
        interconnect = "nvlink" if "nvlink" in accelerator.lower() else None
        common = dict(provider=self.provider, card=accelerator, cards=int(count_value),
                      days=self.days, host_ram_bytes=host_ram, interconnect=interconnect,
                      document=self.document, version=self.version,
                      catalog_memory_bytes=memory_bytes, region=region,
                      canonical_card=canonical, cloud=self.provider,
                      instance_type=instance_type)
        offer_id = self._unique_id(base_id, number)
        self.offers.append(Offer(id=offer_id, usd_per_hour=price, total_usd=self._total(price),
                        notes=tuple(notes + [self._price_note(price)]), **common))
        self._discrepancy(offer_id, canonical, memory_bytes)
        spot_text = cells.get("SpotPrice", "")
        spot = _price(spot_text) if spot_text else None
        if spot_text and spot is None:
            self.skipped.append(SkippedRow(number, f"SpotPrice {spot_text[:40]!r} is not a finite "
                                                   "price >= 0 USD/h; no spot offer",
                                           instance_type))
        elif spot is not None and spot > 0:
            spot_id = self._unique_id(f"{base_id}-spot", number)
            self.offers.append(Offer(id=spot_id, usd_per_hour=spot, total_usd=self._total(spot), spot=True,
                            notes=tuple(notes + [self._price_note(spot),
                                                 "spot: the lot can be interrupted"]), **common))
            self._discrepancy(spot_id, canonical, memory_bytes)

    def _total(self, usd_per_hour: float) -> float | None:
        return None if self.days is None else usd_per_hour * HOURS_PER_DAY * self.days

    def _price_note(self, usd_per_hour: float) -> str:
        if self.days is None:
            return f"{usd_per_hour} USD/h; no days given, total left to budget.days"
        return f"total_usd = {usd_per_hour} USD/h × 24 × {self.days} days"

    def _discrepancy(self, offer_id: str, canonical: str | None, memory_bytes: int | None) -> None:
        if canonical is None or memory_bytes is None:
            return
        device_bytes = bundled_card_table().by_name(canonical).device_bytes.value
        if not isinstance(device_bytes, int):
            return
        gap = (memory_bytes - device_bytes) / device_bytes
        if abs(gap) > DISCREPANCY_THRESHOLD:
            self.discrepancies.append(CatalogDiscrepancy(
                offer_id=offer_id, card=canonical, catalog_bytes=memory_bytes,
                card_bytes=device_bytes, relative_difference=gap))


def read_skypilot_text(text: str, *, file: str, sha256: str, days: float | None = None,
                       provider: str | None = None) -> tuple[list[Offer], CatalogFile]:
    """Read a vms.csv already decoded (see :func:`read_skypilot_csv`)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [name.strip() for name in next(reader, [])]
    missing = [name for name in _REQUIRED if name not in header]
    if missing:
        raise CatalogError(f"SkyPilot vms.csv without column(s) {missing}; header is {header}",
                           field="header", file=file)
    if days is not None and days <= 0:
        raise CatalogError(f"days must be > 0, got {days}", field="days", value=days, file=file)
    state = _Reader(file, sha256, days, provider or provider_from_path(file))
    for number, cells in enumerate(reader, start=1):
        if not any(cell.strip() for cell in cells):
            continue
        state.row(number, {name: cell.strip() for name, cell in zip(header, cells)})
    record = CatalogFile(path=file, sha256=sha256, kind="skypilot-vms", offers=len(state.offers),
                         discrepancies=tuple(state.discrepancies), skipped=tuple(state.skipped))
    return state.offers, record


def read_skypilot_csv(path: Path, *, days: float | None = None, provider: str | None = None
                      ) -> tuple[list[Offer], CatalogFile]:
    """Read a SkyPilot ``vms.csv``.

    Args:
        path: the file.
        days: rental days (``budget.days``) to total the hourly prices; None keeps them hourly.
        provider: the cloud's name; default from the file name (:func:`provider_from_path`).

    Returns:
        The offers (on-demand, then spot when SpotPrice > 0, row by row) and the file's record,
        whose ``discrepancies`` lists memory claims off the card table and ``skipped`` the rows
        that gave no offer.

    Raises:
        CatalogError: unreadable file, not a regular file, over 64 MiB, or a header without the
            required columns.
    """
    data = read_input(path, "catalog", CatalogError)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CatalogError(f"not UTF-8 text ({exc})", file=str(path)) from exc
    return read_skypilot_text(text, file=str(path), sha256=sha256_hex(data), days=days,
                              provider=provider)


def describe_discrepancy(item: CatalogDiscrepancy) -> str:
    """One line for the report: ``offer: catalog 141.00 GiB vs card table 140.40 GiB (+0.43 %)``."""
    return (f"{item.offer_id}: catalog {fmt_bytes(item.catalog_bytes)} vs card table "
            f"{fmt_bytes(item.card_bytes)} for {item.card} ({item.relative_difference:+.2%})")
