"""Typed values of the catalog stage: a card (hardware facts) and an offer (what is for sale)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Fact", "Card", "Offer", "FactStatus"]

FactStatus = Literal["confirmed", "to_confirm"]


@dataclass(frozen=True)
class Fact:
    """One card fact with its source and status.

    Attributes:
        value: the value (int bytes, float GB/s, str, bool), or None when unknown.
        source: the public source it was read from.
        status: ``confirmed`` or ``to_confirm``; a ``to_confirm`` fact can never make a criterion
            ``acceptable``.
    """

    value: object
    source: str
    status: FactStatus = "confirmed"


@dataclass(frozen=True)
class Card:
    """A GPU model as the card table knows it.

    Attributes:
        name: canonical name (``"RTX 4090"``).
        aliases: other spellings (NVML names, SkyPilot names) that map here.
        nominal_gb: the "GB" of the product name (marketing, decimal).
        device_bytes: total memory as ``nvidia-smi --query-gpu=memory.total`` reports it
            (MiB × 2**20), a Fact.
        cuda_total_bytes: ``torch.cuda.mem_get_info()[1]`` where a public log gives it, else a Fact
            with value None.
        bandwidth_gb_s: memory bandwidth in GB/s (Fact).
        compute_capability: ``(major, minor)`` (Fact); what runs at it is each weight
            format's record (``gpusizer.formats``: ``runs_natively``, ``on_card``).
        nvlink: NVLink as a Fact (value str/bool).
        arch: architecture name (``"Ada"``).
        memory_type: ``"GDDR6X"``, ``"HBM3"``…
        peak_dense_tflops: ``(dtype, Fact)`` pairs: peak dense tensor-core throughput in
            10**12 operations per second for ``bf16``, ``fp16``, ``fp8``, ``int8``, ``fp4``
            where the card has it (the vendor's datasheet in each Fact's source); empty when
            unknown. :meth:`peak_tflops` reads one.
    """

    name: str
    aliases: tuple[str, ...]
    nominal_gb: int
    device_bytes: Fact
    cuda_total_bytes: Fact
    bandwidth_gb_s: Fact
    compute_capability: Fact
    nvlink: Fact
    arch: str
    memory_type: str
    peak_dense_tflops: tuple[tuple[str, Fact], ...] = ()

    def peak_tflops(self, dtype: str) -> Fact | None:
        """The card's peak dense throughput for ``dtype`` (TFLOPS or TOPS), or None when the
        table does not give it."""
        return dict(self.peak_dense_tflops).get(dtype)


@dataclass(frozen=True)
class Offer:
    """One GPU offer: a lot of ``cards`` cards for ``days`` days at ``total_usd``.

    Attributes:
        id: unique id (default ``provider-row``).
        provider: who offers it.
        card: the card's name as the provider writes it.
        cards: cards in the lot (>= 1).
        days: rental days, or None (then ``budget.days`` is used by the decision).
        total_usd: price of the whole lot for ``days`` days, or None.
        usd_per_hour: hourly price of the lot when the catalog gives that instead, or None.
        available_from, available_until: documented availability window, or None.
        host_ram_bytes, storage_bytes: server RAM and disk, or None (undocumented).
        interconnect: ``pcie``/``nvlink``/``infiniband``… or None.
        environment: the declared software environment (a preference until checked, R4), or None.
        spot: True when the lot can be interrupted.
        document, version: the commercial sheet this row comes from.
        catalog_memory_bytes: per-card memory the catalog claims (e.g. SkyPilot GpuInfo), kept only
            to report disagreements with the card table.
        region: where the lot is, if given.
        notes: what the reader did with the row (price arithmetic, how the card was decided).
        cloud, instance_type: what ``gpusizer launch`` asks SkyPilot for (a SkyPilot catalog's
            provider and InstanceType, or the catalog's own ``cloud`` / ``instance_type`` keys),
            or None; no criterion reads them.
        canonical_card: the card table's name when the reader decided the card from more than
            ``card`` (e.g. a SkyPilot instance type ``1x-H100_SXM-…`` for ``card`` ``H100``);
            None: resolve ``card`` (with ``catalog_memory_bytes``), see
            ``gpusizer.catalog.cards.resolve_offer_card``.
    """

    id: str
    provider: str
    card: str
    cards: int
    days: float | None
    total_usd: float | None
    usd_per_hour: float | None = None
    available_from: dt.date | None = None
    available_until: dt.date | None = None
    host_ram_bytes: int | None = None
    storage_bytes: int | None = None
    interconnect: str | None = None
    environment: str | None = None
    spot: bool = False
    document: str | None = None
    version: str | None = None
    catalog_memory_bytes: int | None = None
    region: str | None = None
    notes: tuple[str, ...] = field(default=())
    canonical_card: str | None = None
    cloud: str | None = None
    instance_type: str | None = None
