"""Catalogs from bytes, text and rows read as their files are (the Python API and web front end
give catalogs that were never files)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import pytest
import yaml

from gpusizer.catalog.offers import (
    catalog_text_form, load_catalogs, read_catalog, read_catalog_bytes, read_catalog_rows,
    read_catalog_text,
)
from gpusizer.errors import CatalogError

from .test_offers import CSV_OFFERS, YAML_OFFERS, _write


def test_bytes_read_as_the_file_of_that_name(tmp_path):
    path = _write(tmp_path, "offers.yaml", YAML_OFFERS)
    from_file = read_catalog(path)
    from_bytes = read_catalog_bytes(path.read_bytes(), str(path))
    assert from_bytes == from_file
    offers, record = read_catalog_bytes(CSV_OFFERS.encode(), "beta.csv")
    assert [o.id for o in offers] == ["b-l40s", "beta-2"] and record.kind == "offers-csv"
    assert record.path == "beta.csv"


def test_bytes_form_given_overrides_the_suffix_and_an_unknown_suffix_is_refused():
    offers, record = read_catalog_bytes(CSV_OFFERS.encode(), "upload", form="csv")
    assert record.kind == "offers-csv" and len(offers) == 2
    with pytest.raises(CatalogError, match=r"upload\.json: unknown catalog form '\.json'"):
        read_catalog_bytes(b"[]", "upload.json")


def test_skypilot_bytes_take_the_cloud_from_the_name(catalogs_dir):
    vast = catalogs_dir / "skypilot-catalog_v8_vast_vms.csv"
    offers, record = read_catalog_bytes(vast.read_bytes(), "v8/vast/vms.csv", days=3)
    assert record.kind == "skypilot-vms" and len(offers) == 67
    assert {o.provider for o in offers} == {"vast"}
    assert record.sha256 == hashlib.sha256(vast.read_bytes()).hexdigest()


@pytest.mark.parametrize("text, form", [
    (YAML_OFFERS, "yaml"), ("# offers\n\n- {id: a}\n", "yaml"), ("---\n- {id: a}\n", "yaml"),
    ("[{id: a}]", "yaml"), ("", "yaml"), (CSV_OFFERS, "csv"),
    ("InstanceType,AcceleratorName,AcceleratorCount\n", "csv"),
])
def test_text_form_is_told_by_its_first_line(text, form):
    assert catalog_text_form(text) == form


def test_text_reads_yaml_and_csv_and_hashes_its_utf8_bytes():
    offers, record = read_catalog_text(YAML_OFFERS, "catalogs[0]")
    assert [o.id for o in offers] == ["a-4090", "acme-2"] and record.kind == "offers-yaml"
    assert record.sha256 == hashlib.sha256(YAML_OFFERS.encode()).hexdigest()
    offers, record = read_catalog_text(CSV_OFFERS, "catalogs[1]")
    assert record.kind == "offers-csv" and offers[0].cards == 4


def test_rows_are_the_yaml_rows_and_hash_their_canonical_json(tmp_path):
    rows = yaml.safe_load(YAML_OFFERS)  # PyYAML reads available_from as a datetime.date
    assert rows[0]["available_from"] == dt.date(2026, 12, 1)
    offers, record = read_catalog_rows(rows)
    assert offers == read_catalog(_write(tmp_path, "o.yaml", YAML_OFFERS))[0]
    canonical = json.dumps(rows, sort_keys=True, separators=(",", ":"), default=str)
    assert record.sha256 == hashlib.sha256(canonical.encode()).hexdigest()
    assert (record.kind, record.path, record.offers) == ("offers-rows", "catalogs", 2)


def test_a_bad_row_names_the_catalog_the_row_and_the_field():
    rows = [{"id": "a", "provider": "p", "card": "T4", "cards": 1},
            {"id": "b", "provider": "p", "card": "T4", "cards": 0}]
    with pytest.raises(CatalogError, match=r"^catalogs: row 2\.cards: ") as info:
        read_catalog_rows(rows)
    assert info.value.file == "catalogs" and info.value.field == "row 2.cards"
    with pytest.raises(CatalogError, match=r"catalogs: row 1: expected a mapping"):
        read_catalog_rows(["T4"])


def test_load_catalogs_mixes_paths_texts_and_rows_in_order(tmp_path):
    path = _write(tmp_path, "one.yaml", "- {id: x, provider: a, card: T4, cards: 1}\n")
    offers, files = load_catalogs([path, "- {id: y, provider: b, card: L4, cards: 1}\n",
                                   [{"id": "z", "provider": "c", "card": "L4", "cards": 2}]])
    assert [o.id for o in offers] == ["x", "y", "z"]
    assert [(f.path, f.kind) for f in files] == [
        (str(path), "offers-yaml"), ("catalogs[1]", "offers-yaml"), ("catalogs[2]", "offers-rows")]
    offers, files = load_catalogs([{"id": "z", "provider": "c", "card": "L4", "cards": 2}])
    assert [f.path for f in files] == ["catalogs"] and offers[0].cards == 2
    offers, files = load_catalogs("- {id: y, provider: b, card: L4, cards: 1}\n")
    assert [f.path for f in files] == ["catalogs[0]"]


def test_load_catalogs_refuses_a_duplicate_id_across_kinds_and_an_unknown_source(tmp_path):
    path = _write(tmp_path, "one.yaml", "- {id: x, provider: a, card: T4, cards: 1}\n")
    with pytest.raises(CatalogError, match=r"catalogs\[1\]: id: offer id 'x' is used also in"):
        load_catalogs([path, [{"id": "x", "provider": "b", "card": "L4", "cards": 1}]])
    with pytest.raises(CatalogError, match=r"^catalogs\[1\]: expected a catalog file") as info:
        load_catalogs([path, 42])
    assert info.value.field == "catalogs[1]"
    with pytest.raises(CatalogError, match=r"got dict"):
        load_catalogs([path, {"id": "y", "provider": "b", "card": "L4", "cards": 1}])
