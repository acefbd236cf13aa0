"""SkyPilot vms.csv reader on the three shared copies (skypilot-org/skypilot-catalog, v8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusizer.catalog import skypilot
from gpusizer.catalog.skypilot import (
    DISCREPANCY_THRESHOLD, parse_gpu_info, per_gpu_memory_mib, provider_from_path,
    read_skypilot_csv, read_skypilot_text,
)
from gpusizer.errors import CatalogError
from gpusizer.units import GiB, MiB

HYPERSTACK = "skypilot-catalog_v8_hyperstack_vms.csv"
JARVISLABS = "skypilot-catalog_v8_jarvislabs_vms.csv"
VAST = "skypilot-catalog_v8_vast_vms.csv"


def _read(catalogs_dir: Path, name: str, days: float | None = 3):
    offers, record = read_skypilot_csv(catalogs_dir / name, days=days)
    return {offer.id: offer for offer in offers}, record


def test_all_names_exported():
    for name in skypilot.__all__:
        assert hasattr(skypilot, name)


@pytest.mark.parametrize("name, offers, skipped, discrepancies", [
    (HYPERSTACK, 25, 0, 7),   # 25 rows, all priced GPU rows; H100 given as 81920 MiB nominal
    (JARVISLABS, 16, 7, 8),   # 7 CPU_* rows give no offer; L4 24576 and H200 144384 MiB claims
    (VAST, 67, 0, 1),         # SizeInMiB is the driver's figure, except the 48 GB-modded 4090
])
def test_counts_on_the_shared_files(catalogs_dir, name, offers, skipped, discrepancies):
    by_id, record = _read(catalogs_dir, name)
    assert len(by_id) == record.offers == offers
    assert len(record.skipped) == skipped
    assert len(record.discrepancies) == discrepancies
    assert record.kind == "skypilot-vms"


def test_cpu_rows_are_skipped_with_a_reason(catalogs_dir):
    _, record = _read(catalogs_dir, JARVISLABS)
    assert {row.reason for row in record.skipped} == {"no accelerator (CPU-only instance)"}
    assert record.skipped[0].label == "CPU_2V_8G"


def test_hourly_price_times_24_times_3_days_jarvislabs_l4(catalogs_dir):
    # jarvislabs row: 1x_L4_28V_124G,L4,1,28.0,124,"{...'SizeInMiB': 24576...}",IN2,,0.44
    by_id, _ = _read(catalogs_dir, JARVISLABS)
    offer = by_id["jarvislabs/1x_L4_28V_124G/IN2"]
    assert offer.usd_per_hour == 0.44
    assert offer.total_usd == pytest.approx(0.44 * 24 * 3)  # 31.68 USD
    assert offer.days == 3 and offer.cards == 1 and offer.spot is False
    assert offer.host_ram_bytes == 124 * GiB
    assert offer.provider == "jarvislabs" and offer.region == "IN2"
    assert offer.canonical_card == "L4"


def test_hourly_price_whole_instance_hyperstack_8x_a100(catalogs_dir):
    # hyperstack row: n3-A100x8,A100-80G-PCIe,8,252,1440.0,"{...}",10.8,CANADA-1,
    by_id, _ = _read(catalogs_dir, HYPERSTACK)
    offer = by_id["hyperstack/n3-A100x8/CANADA-1"]
    assert offer.cards == 8
    assert offer.total_usd == pytest.approx(10.8 * 24 * 3)  # 777.60 USD for the 8-GPU lot
    assert offer.host_ram_bytes == 1440 * GiB
    assert offer.catalog_memory_bytes == 81920 * MiB  # per GPU (Total = 8 × 81920)
    assert offer.canonical_card == "A100 80GB"


def test_without_days_the_price_stays_hourly(catalogs_dir):
    by_id, _ = _read(catalogs_dir, JARVISLABS, days=None)
    offer = by_id["jarvislabs/1x_L4_28V_124G/IN2"]
    assert offer.total_usd is None and offer.usd_per_hour == 0.44 and offer.days is None


def test_nvlink_in_the_accelerator_name_sets_the_interconnect(catalogs_dir):
    by_id, _ = _read(catalogs_dir, HYPERSTACK)
    assert by_id["hyperstack/n3-A100x8-NVLink/CANADA-1"].interconnect == "nvlink"
    assert by_id["hyperstack/n3-A100x8/CANADA-1"].interconnect is None


def test_vast_size_is_the_row_total_and_is_divided(catalogs_dir):
    # vast row: 2x-H200-32-65536,H200,2,...,"{...'Count': 2, 'MemoryInfo': {'SizeInMiB': 287542}}],
    # 'TotalGpuMemoryInMiB': 287542}",5.18,0.00,"Michigan, US, NA"
    by_id, record = _read(catalogs_dir, VAST)
    offer = by_id["vast/2x-H200-32-65536/Michigan, US, NA"]
    assert offer.catalog_memory_bytes == 143771 * MiB
    assert offer.canonical_card == "H200"
    assert not [d for d in record.discrepancies if d.offer_id == offer.id]


def test_vast_instance_type_decides_the_h100_variant(catalogs_dir):
    by_id, _ = _read(catalogs_dir, VAST)
    assert by_id["vast/1x-H100_SXM-32-65536/Texas, US, NA"].canonical_card == "H100 SXM"
    assert by_id["vast/1x-H100_NVL-32-65536/Bulgaria, BG, EU"].canonical_card == "H100 NVL"


def test_undecidable_card_stays_unknown_with_the_reason(catalogs_dir):
    by_id, _ = _read(catalogs_dir, JARVISLABS)
    h100 = by_id["jarvislabs/1x_H100_24V_200G/IN2"]  # SXM or PCIe: the row does not say
    assert h100.canonical_card is None
    assert any("ambiguous" in note for note in h100.notes)


def test_discrepancies_jarvislabs_h200_and_l4(catalogs_dir):
    _, record = _read(catalogs_dir, JARVISLABS)
    by_offer = {item.offer_id: item for item in record.discrepancies}
    h200 = by_offer["jarvislabs/1x_H200_28V_300G/IN2"]
    assert (h200.catalog_bytes, h200.card_bytes) == (144384 * MiB, 143771 * MiB)
    assert h200.relative_difference == pytest.approx((144384 - 143771) / 143771)  # +0.43 %
    assert h200.relative_difference > DISCREPANCY_THRESHOLD
    l4 = by_offer["jarvislabs/1x_L4_28V_124G/IN2"]
    assert (l4.catalog_bytes, l4.card_bytes) == (24576 * MiB, 23034 * MiB)


def test_discrepancy_vast_48gb_rtx_4090(catalogs_dir):
    _, record = _read(catalogs_dir, VAST)
    (item,) = record.discrepancies
    assert item.offer_id == "vast/1x-RTX_4090-32-65536/Hong Kong, HK, AS"
    assert (item.catalog_bytes, item.card_bytes) == (49140 * MiB, 24564 * MiB)


def test_no_spot_offers_in_the_shared_files(catalogs_dir):
    # SpotPrice is empty (hyperstack, jarvislabs) or 0.00 (vast): no interruptible lot is listed
    for name in (HYPERSTACK, JARVISLABS, VAST):
        by_id, _ = _read(catalogs_dir, name)
        assert not any(offer.spot for offer in by_id.values())


# A real jarvislabs row with a SpotPrice filled in (0.20): synthetic, for the spot path only.
SPOT_FIXTURE = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Region,SpotPrice,"
    "Price\n"
    "1x_L4_28V_124G,L4,1,28.0,124,\"{'Gpus': [{'Name': 'L4', 'Manufacturer': 'Nvidia', "
    "'Count': 1, 'MemoryInfo': {'SizeInMiB': 24576}}], 'TotalGpuMemoryInMiB': 24576}\",IN2,"
    "0.20,0.44\n"
    "1x_L4_28V_124G,L4,1,28.0,124,,IN3,,\n"
)


def test_spot_price_gives_a_separate_marked_offer():
    offers, record = read_skypilot_text(SPOT_FIXTURE, file="jarvislabs_vms.csv", sha256="0" * 64,
                                        days=3)
    on_demand, spot = offers
    assert on_demand.spot is False and on_demand.total_usd == pytest.approx(0.44 * 72)
    assert spot.spot is True and spot.id == on_demand.id + "-spot"
    assert spot.usd_per_hour == 0.20 and spot.total_usd == pytest.approx(0.20 * 24 * 3)
    assert len(record.discrepancies) == 2  # the L4 claim, once per offer
    (skipped,) = record.skipped
    assert skipped.row == 2 and "no Price" in skipped.reason


def test_missing_required_column():
    with pytest.raises(CatalogError, match="Price"):
        read_skypilot_text("InstanceType,AcceleratorName,AcceleratorCount\n", file="x.csv",
                           sha256="0" * 64)


def test_gpu_info_with_json_null_parses():
    info = parse_gpu_info("{'Gpus': [{'Name': 'L40', 'Manufacturer': null, 'Count': 2, "
                          "'MemoryInfo': {'SizeInMiB': 49152}}], 'TotalGpuMemoryInMiB': 98304}")
    assert info["Gpus"][0]["Manufacturer"] is None
    assert per_gpu_memory_mib(info) == (49152, "GpuInfo SizeInMiB is per GPU")


def test_gpu_info_is_never_evaluated():
    with pytest.raises(ValueError):
        parse_gpu_info("__import__('os').system('echo pwned')")
    with pytest.raises(ValueError):
        parse_gpu_info("{'a': (lambda: 1)()}")


def test_inconsistent_gpu_info_gives_no_memory():
    info = {"Gpus": [{"Count": 2, "MemoryInfo": {"SizeInMiB": 1000}}],
            "TotalGpuMemoryInMiB": 1500}
    mib, how = per_gpu_memory_mib(info)
    assert mib is None and "disagree" in how


def test_provider_from_path():
    assert provider_from_path("data/skypilot-catalog_v8_vast_vms.csv") == "vast"
    assert provider_from_path("catalogs/v8/lambda/vms.csv") == "lambda"


def test_size_in_mib_per_gpu_wins_when_the_total_repeats_it():
    # issue 12: some providers write the per-GPU figure as TotalGpuMemoryInMiB on an 8-GPU row
    info = {"Gpus": [{"Name": "A100", "Count": 8, "MemoryInfo": {"SizeInMiB": 81920}}],
            "TotalGpuMemoryInMiB": 81920}
    mib, how = per_gpu_memory_mib(info)
    assert mib == 81920 and "taken per GPU" in how
    # vast writes the row's total in both: the card table (143771 MiB per H200) decides
    vast = {"Gpus": [{"Name": "H200", "Count": 2, "MemoryInfo": {"SizeInMiB": 287542}}],
            "TotalGpuMemoryInMiB": 287542}
    mib, how = per_gpu_memory_mib(vast, lambda m: m == 143771)
    assert mib == 287542 // 2 == 143771 and "divided" in how


def test_an_8_gpu_row_repeating_the_per_gpu_figure_claims_80_gib_per_gpu():
    text = ("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price\n"
            "8x-a100,A100-80GB,8,96,1024,\"{'Gpus': [{'Name': 'A100-80GB', 'Count': 8, "
            "'MemoryInfo': {'SizeInMiB': 81920}}], 'TotalGpuMemoryInMiB': 81920}\",14.0\n")
    (offer,), record = read_skypilot_text(text, file="p_vms.csv", sha256="0" * 64, days=3)
    assert offer.catalog_memory_bytes == 81920 * MiB  # not 81920 / 8 = 10240 MiB
    assert offer.canonical_card == "A100 80GB"
    # 81920 MiB claimed, 81920 MiB in the card table (nvidia-smi): no discrepancy
    assert record.discrepancies == ()
