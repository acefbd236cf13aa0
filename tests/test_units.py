"""Units (R6): 1 GB = 10^9 B, 1 GiB = 2^30 B; sizes need a unit; bytes stay integers."""

import pytest

from gpusizer.errors import SheetError
from gpusizer.units import GiB, fmt_bytes, fmt_gib, parse_bytes


@pytest.mark.parametrize("text,expected", [
    ("1 B", 1), ("2 KB", 2000), ("3 MB", 3_000_000), ("24 GB", 24_000_000_000),
    ("1 TB", 10**12), ("1 KiB", 1024), ("1 MiB", 2**20), ("6 GiB", 6 * 2**30),
    ("1 TiB", 2**40), ("1.5 GiB", 3 * 2**29), ("24GB", 24 * 10**9), ("0 B", 0),
])
def test_parse_bytes_all_units(text, expected):
    assert parse_bytes(text) == expected
    assert isinstance(parse_bytes(text), int)


@pytest.mark.parametrize("bad", [24, 24.0, "24", "24 gb", "24 Gb", "-1 GB", "GB", "0.3 B", None])
def test_parse_bytes_rejects(bad):
    with pytest.raises(SheetError):
        parse_bytes(bad, field="reserve")


def test_bare_number_message_names_units():
    with pytest.raises(SheetError) as e:
        parse_bytes(24, field="reserve")
    assert "reserve" in str(e.value) and "GiB" in str(e.value) and "24" in str(e.value)


def test_seed_worked_check_24e9_bytes_is_22_35_gib():
    # R6: 24 × 10^9 B / 2^30 = 22.3517... GiB
    assert fmt_gib(24 * 10**9) == "22.35"
    assert GiB == 1073741824
    assert fmt_bytes(24 * 10**9) == "22.35 GiB (24 000 000 000 B)"
