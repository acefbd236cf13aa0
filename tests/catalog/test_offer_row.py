"""One contract catalog row → Offer; bad rows name file, row, field, value and what was expected."""

from __future__ import annotations

import datetime as dt

import pytest

from gpusizer.catalog import offer_row
from gpusizer.catalog.offer_row import offer_from_mapping
from gpusizer.errors import CatalogError
from gpusizer.units import GB, TiB

ROW = {"provider": "acme", "card": "RTX 4090", "cards": 2, "days": 3, "total_usd": 90.0}


def _offer(**changes):
    return offer_from_mapping({**ROW, **changes}, file="offers.yaml", row_number=4)


def _error(**changes) -> CatalogError:
    with pytest.raises(CatalogError) as info:
        _offer(**changes)
    return info.value


def test_all_names_exported():
    for name in offer_row.__all__:
        assert hasattr(offer_row, name)


def test_every_contract_key():
    offer = _offer(id="acme-4090-x2", usd_per_hour=None, available_from=dt.date(2026, 12, 1),
                   available_until="2026-12-20", host_ram="64 GB", storage="1 TiB",
                   interconnect="PCIe", environment="torch 2.4 / CUDA 12.4", spot=True,
                   document="acme price sheet", version="2026-11")
    assert offer.id == "acme-4090-x2"
    assert (offer.cards, offer.days, offer.total_usd) == (2, 3, 90.0)
    assert offer.available_from == dt.date(2026, 12, 1)
    assert offer.available_until == dt.date(2026, 12, 20)
    assert offer.host_ram_bytes == 64 * GB
    assert offer.storage_bytes == 1 * TiB
    assert offer.interconnect == "pcie"
    assert offer.spot is True
    assert (offer.document, offer.version) == ("acme price sheet", "2026-11")


def test_default_id_is_provider_and_row_number():
    assert _offer().id == "acme-4"


def test_hourly_price_times_24_times_days():
    offer = _offer(total_usd=None, usd_per_hour=0.5)
    assert offer.total_usd == pytest.approx(0.5 * 24 * 3)  # 36.00 USD
    assert offer.usd_per_hour == 0.5


def test_hourly_price_without_days_leaves_the_total_unknown():
    row = {key: value for key, value in ROW.items() if key not in ("days", "total_usd")}
    offer = offer_from_mapping({**row, "usd_per_hour": 0.5}, file="f.yaml", row_number=1)
    assert offer.total_usd is None and offer.days is None
    assert any("budget.days" in note for note in offer.notes)


def test_unknown_key_names_file_row_and_key():
    error = _error(pricee=3)
    message = str(error)
    assert "offers.yaml" in message and "row 4" in message and "pricee" in message
    assert "accepted keys" in message
    assert error.file == "offers.yaml" and error.field == "row 4.pricee"


@pytest.mark.parametrize("changes, field, expected", [
    ({"cards": 0}, "row 4.cards", ">= 1"),
    ({"cards": 1.5}, "row 4.cards", "whole number"),
    ({"cards": True}, "row 4.cards", "not true/false"),
    ({"days": 0}, "row 4.days", "> 0"),
    ({"days": -2}, "row 4.days", "> 0"),
    ({"total_usd": -1}, "row 4.total_usd", ">= 0"),
    ({"total_usd": None, "usd_per_hour": -0.1}, "row 4.usd_per_hour", ">= 0"),
    ({"available_from": "next week"}, "row 4.available_from", "ISO date"),
    ({"host_ram": 64}, "row 4.host_ram", "unit"),
    ({"host_ram": "64"}, "row 4.host_ram", "unit"),
    ({"storage": "2 gigs"}, "row 4.storage", "unit"),
    ({"version": 1.1}, "row 4.version", "quote it"),
    ({"card": ""}, "row 4.card", "at least 1"),
])
def test_bad_values_name_field_value_and_expectation(changes, field, expected):
    error = _error(**changes)
    assert error.field == field
    assert expected in str(error)
    assert "offers.yaml" in str(error)


def test_missing_required_key():
    with pytest.raises(CatalogError, match="row 2.cards: required key is missing"):
        offer_from_mapping({"provider": "a", "card": "T4"}, file="f.csv", row_number=2)


def test_both_prices_is_an_error():
    with pytest.raises(CatalogError, match="not both"):
        _offer(usd_per_hour=1.0)


def test_window_end_before_start_is_an_error():
    with pytest.raises(CatalogError, match="before"):
        _offer(available_from="2026-12-20", available_until="2026-12-01")


def test_a_row_that_is_not_a_mapping():
    with pytest.raises(CatalogError, match="row 1: expected a mapping"):
        offer_from_mapping(["RTX 4090", 1], file="f.yaml", row_number=1)
