"""The card table against its source, shared/data/gpu_specs/gpu_memory_reported.csv."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from gpusizer.catalog import card_table
from gpusizer.catalog.card_table import (
    bundled_card_table, normalize_card_name, parse_card_table,
)
from gpusizer.catalog.cards import lookup_card
from gpusizer.errors import CatalogError
from gpusizer.units import GiB, MiB


def _csv_rows(shared_data: Path) -> list[dict[str, str]]:
    path = shared_data / "gpu_specs" / "gpu_memory_reported.csv"
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_all_names_exported():
    for name in card_table.__all__:
        assert hasattr(card_table, name)


def test_every_csv_card_is_in_the_table_with_its_reported_mib(shared_data):
    rows = _csv_rows(shared_data)
    assert len(rows) == 21
    for row in rows:
        card = lookup_card(row["card"])
        assert card is not None, row["card"]
        assert card.device_bytes.value == int(row["reported_total_mib"]) * MiB, row["card"]
        assert card.nominal_gb == int(row["nominal_gb_marketing"])
        major, minor = row["compute_capability"].split(".")
        assert card.compute_capability.value == (int(major), int(minor))
        assert card.arch == row["arch"]
        assert card.memory_type == row["memory_type"]


def test_csv_statuses_are_preserved(shared_data):
    for row in _csv_rows(shared_data):
        card = lookup_card(row["card"])
        device_status = "to_confirm" if row["status"].startswith("to confirm") else "confirmed"
        assert card.device_bytes.status == device_status, row["card"]
        if "to confirm" in row["bandwidth_gb_s"]:
            assert card.bandwidth_gb_s.status == "to_confirm", row["card"]
        if "to confirm" in row["nvlink"]:
            assert card.nvlink.status == "to_confirm", row["card"]
        if row["nvlink"] == "no":
            assert card.nvlink.value is False


def test_rtx_3090_device_memory_stays_to_confirm():
    card = lookup_card("RTX 3090")
    assert card.device_bytes.value == 24576 * MiB
    assert card.device_bytes.status == "to_confirm"


def test_rtx_4090_nominal_24_gb_vs_24564_mib_device():
    # csv row RTX 4090: nominal 24 GB, nvidia-smi 24564 MiB = 25 757 220 864 B (25.76 GB decimal)
    card = lookup_card("RTX 4090")
    assert card.nominal_gb == 24
    assert card.device_bytes.value == 25_757_220_864
    assert card.device_bytes.value == 24564 * 2**20


def test_cuda_total_rtx_3090_from_vllm_10517_log():
    # vllm-project/vllm#10517: "total_gpu_memory=23.58GiB", rounded to 0.01 GiB by the log
    card = lookup_card("RTX 3090")
    assert card.cuda_total_bytes.value == round(23.58 * 2**30)
    assert "10517" in card.cuda_total_bytes.source
    assert "rounded" in card.cuda_total_bytes.source
    assert card.cuda_total_bytes.status == "to_confirm"


def test_cuda_total_is_below_the_device_total_where_known():
    for card in bundled_card_table().cards:
        cuda_total = card.cuda_total_bytes.value
        if cuda_total is None:
            assert card.cuda_total_bytes.source.startswith("unknown"), card.name
            continue
        assert 0.9 * card.device_bytes.value < cuda_total < card.device_bytes.value, card.name


def test_every_fact_has_a_source_and_status():
    for card in bundled_card_table().cards:
        for fact in (card.device_bytes, card.cuda_total_bytes, card.bandwidth_gb_s,
                     card.compute_capability, card.nvlink):
            assert fact.source
            assert fact.status in ("confirmed", "to_confirm")


def test_bf16_and_fp8_follow_compute_capability():
    from gpusizer.formats import FORMATS

    def runs(fmt, card):
        return FORMATS[fmt].runs_natively(lookup_card(card).compute_capability.value)
    assert not runs("bf16", "T4")
    assert runs("bf16", "A100 80GB") and not runs("fp8", "A100 80GB")
    assert runs("fp8", "RTX 4090")


def test_normalize_card_name():
    assert normalize_card_name("NVIDIA GeForce RTX 4090") == "nvidiageforcertx4090"
    assert (normalize_card_name("RTX-A6000") == normalize_card_name("rtx_a6000")
            == normalize_card_name("RTX A6000") == "rtxa6000")
    assert normalize_card_name("A100 (80 GB)") == normalize_card_name("A100 80GB")


def _one_card(**overrides) -> dict:
    card = {
        "name": "Test GPU", "aliases": ["TG"], "nominal_gb": 8, "arch": "Ada",
        "memory_type": "GDDR6",
        "device_mib": {"value": 8192, "source": "test", "status": "confirmed"},
        "cuda_total_gib_logged": {"value": None, "source": "unknown", "status": "to_confirm"},
        "bandwidth_gb_s": {"value": 100, "source": "test", "status": "confirmed"},
        "compute_capability": {"value": "8.9", "source": "test", "status": "confirmed"},
        "nvlink": {"value": False, "source": "test", "status": "confirmed"},
    }
    card.update(overrides)
    return card


def test_parse_builds_bytes_from_mib_and_gib():
    table = parse_card_table({"cards": [_one_card(
        cuda_total_gib_logged={"value": 7.5, "source": "log", "status": "to_confirm"})]},
        file="t.yaml")
    card = table.by_name("Test GPU")
    assert card.device_bytes.value == 8192 * MiB
    assert card.cuda_total_bytes.value == int(7.5 * GiB)
    assert table.by_key["tg"] is card


def test_unknown_key_in_a_card_names_file_card_and_key():
    with pytest.raises(CatalogError) as info:
        parse_card_table({"cards": [_one_card(vram_gb=8)]}, file="t.yaml")
    message = str(info.value)
    assert "t.yaml" in message and "'Test GPU'" in message and "vram_gb" in message


def test_bad_status_is_refused():
    bad = _one_card(device_mib={"value": 8192, "source": "x", "status": "maybe"})
    with pytest.raises(CatalogError, match="device_mib.status"):
        parse_card_table({"cards": [bad]}, file="t.yaml")


def test_a_name_given_to_two_cards_is_refused():
    with pytest.raises(CatalogError, match="both"):
        parse_card_table({"cards": [_one_card(), _one_card(name="Other", aliases=["T-G"])]},
                         file="t.yaml")


def test_ambiguous_entry_must_name_known_cards():
    with pytest.raises(CatalogError, match="lacks"):
        parse_card_table({"cards": [_one_card()], "ambiguous": [
            {"names": ["X"], "reason": "r", "cards": ["Nope"]}]}, file="t.yaml")


def test_bundled_table_is_parsed_once():
    assert bundled_card_table() is bundled_card_table()
