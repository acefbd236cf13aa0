"""Catalog files: YAML and CSV offers, dispatch, hashes, duplicate ids, the default catalog."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from gpusizer.catalog import offers as offers_module
from gpusizer.catalog.offers import (
    load_catalogs, load_default_catalog, offer_total_usd, read_catalog,
)
from gpusizer.catalog.types import Offer
from gpusizer.errors import CatalogError
from gpusizer.units import GiB

YAML_OFFERS = """\
- id: a-4090
  provider: acme
  card: NVIDIA GeForce RTX 4090
  cards: 1
  days: 3
  total_usd: 47.14
  host_ram: 64 GiB
  available_from: 2026-12-01
- provider: acme
  card: RTX6000Ada
  cards: 2
  usd_per_hour: 1.5
"""

CSV_OFFERS = """\
id,provider,card,cards,days,usd_per_hour,host_ram,storage,spot,document,version
b-l40s,beta,L40S,4,2,3.2,256 GiB,2 TB,false,beta list,v7
,beta,A100-80GB,8,,12.0,,,true,beta list,v7
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_all_names_exported():
    for name in offers_module.__all__:
        assert hasattr(offers_module, name)


def test_yaml_offers(tmp_path):
    path = _write(tmp_path, "offers.yaml", YAML_OFFERS)
    offers, record = read_catalog(path)
    assert [offer.id for offer in offers] == ["a-4090", "acme-2"]
    assert offers[0].host_ram_bytes == 64 * GiB
    assert offers[1].total_usd is None and offers[1].usd_per_hour == 1.5
    assert record.kind == "offers-yaml" and record.offers == 2
    assert record.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_csv_offers(tmp_path):
    path = _write(tmp_path, "offers.csv", CSV_OFFERS)
    offers, record = read_catalog(path)
    assert record.kind == "offers-csv"
    first, second = offers
    assert first.total_usd == pytest.approx(3.2 * 24 * 2)  # 153.60 USD
    assert first.storage_bytes == 2 * 10**12 and first.spot is False
    assert second.id == "beta-2" and second.spot is True and second.days is None


def test_offer_total_usd_uses_budget_days_only_when_the_offer_has_none():
    hourly = Offer(id="h", provider="p", card="T4", cards=1, days=None, total_usd=None,
                   usd_per_hour=0.5)
    assert offer_total_usd(hourly, 3) == pytest.approx(36.0)
    assert offer_total_usd(hourly, None) is None
    fixed = Offer(id="f", provider="p", card="T4", cards=1, days=3, total_usd=47.14)
    assert offer_total_usd(fixed, 10) == 47.14
    unpriced = Offer(id="u", provider="p", card="T4", cards=1, days=3, total_usd=None)
    assert offer_total_usd(unpriced, 3) is None


def test_csv_bad_cell_names_file_row_and_field(tmp_path):
    path = _write(tmp_path, "bad.csv", "provider,card,cards,host_ram\nacme,T4,1,64\n")
    with pytest.raises(CatalogError) as info:
        read_catalog(path)
    message = str(info.value)
    assert str(path) in message and "row 1.host_ram" in message and "unit" in message


def test_csv_unknown_column(tmp_path):
    path = _write(tmp_path, "bad.csv", "provider,card,cards,gpu_ram\nacme,T4,1,16\n")
    with pytest.raises(CatalogError, match="unknown column 'gpu_ram'"):
        read_catalog(path)


def test_yaml_must_be_a_list(tmp_path):
    path = _write(tmp_path, "bad.yaml", "offers:\n  - provider: a\n")
    with pytest.raises(CatalogError, match="expected a YAML list"):
        read_catalog(path)


def test_yaml_bad_row_names_row(tmp_path):
    path = _write(tmp_path, "bad.yaml", "- {provider: a, card: T4, cards: 1}\n"
                                        "- {provider: a, card: T4, cards: 0}\n")
    with pytest.raises(CatalogError, match=r"row 2\.cards: expected a number >= 1, got 0"):
        read_catalog(path)


def test_unknown_suffix(tmp_path):
    with pytest.raises(CatalogError, match="unknown catalog form"):
        read_catalog(_write(tmp_path, "offers.json", "[]"))


def test_missing_file(tmp_path):
    with pytest.raises(CatalogError, match="cannot read"):
        read_catalog(tmp_path / "absent.yaml")


def test_duplicate_ids_across_files(tmp_path):
    first = _write(tmp_path, "one.yaml", "- {id: x, provider: a, card: T4, cards: 1}\n")
    second = _write(tmp_path, "two.yaml", "- {id: x, provider: b, card: L4, cards: 1}\n")
    with pytest.raises(CatalogError, match=r"'x' is used also in .*one\.yaml"):
        load_catalogs([first, second])


def test_duplicate_ids_in_one_file(tmp_path):
    path = _write(tmp_path, "one.yaml", "- {id: x, provider: a, card: T4, cards: 1}\n"
                                        "- {id: x, provider: a, card: L4, cards: 1}\n")
    with pytest.raises(CatalogError, match="twice in this file"):
        read_catalog(path)


def test_load_catalogs_combines_and_dispatches_skypilot_by_header(tmp_path, catalogs_dir):
    yaml_path = _write(tmp_path, "offers.yaml", YAML_OFFERS)
    vast = catalogs_dir / "skypilot-catalog_v8_vast_vms.csv"
    offers, files = load_catalogs([yaml_path, vast], days=3)
    assert [record.kind for record in files] == ["offers-yaml", "skypilot-vms"]
    assert len(offers) == 2 + 67
    # the hash printed in the report is the one SOURCES.md states for our copy
    sources = (catalogs_dir / "SOURCES.md").read_text(encoding="utf-8")
    stated = re.search(r"([0-9a-f]{64})  skypilot-catalog_v8_vast_vms\.csv", sources).group(1)
    assert files[1].sha256 == stated


def test_default_catalog_is_the_seeds_two_offers():
    offers, files = load_default_catalog()
    assert [(o.card, o.cards, o.days, o.total_usd) for o in offers] == [
        ("RTX 4090", 1, 3, 47.14), ("RTX 6000 Ada", 1, 3, 55.71)]
    for offer in offers:
        assert offer.provider == "seed example"
        assert offer.document == "seed worked example (shared/seed)"
        assert offer.available_from is None and offer.available_until is None
        assert offer.host_ram_bytes is None and offer.storage_bytes is None
    assert files[0].kind == "bundled-default" and len(files[0].sha256) == 64
