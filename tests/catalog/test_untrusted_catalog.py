"""Issue 11 (reliability findings F3, F23): catalog numbers pass ``gpusizer.bounds`` — contract
YAML and CSV rows refuse NaN, infinity and true/false with the row and field named; a SkyPilot row
whose number is not finite gives no offer and says why in ``skipped_rows``."""

from __future__ import annotations

import pytest

from gpusizer.catalog.offers import read_catalog_text
from gpusizer.errors import CatalogError

HEADER = ("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,"
          "SpotPrice\n")


@pytest.mark.parametrize("field, value", [
    ("days", ".inf"), ("total_usd", ".inf"), ("usd_per_hour", ".inf"), ("total_usd", ".nan"),
    ("days", "true"), ("cards", "true"), ("total_usd", "1e13"),
])
def test_f3_yaml_row_refuses_non_finite_and_bool_numbers(field, value):
    row = {"id": "a", "provider": "p", "card": "RTX 4090", "cards": "1"}
    row[field] = value
    text = "- {" + ", ".join(f"{k}: {v}" for k, v in row.items()) + "}\n"
    with pytest.raises(CatalogError) as info:
        read_catalog_text(text, "c.yaml")
    assert info.value.field == f"row 1.{field}", str(info.value)


@pytest.mark.parametrize("cell", ["inf", "nan", "-inf", "Infinity", "1e400"])
def test_f3_csv_row_refuses_non_finite_prices(cell):
    text = f"id,provider,card,cards,total_usd\na,p,RTX 4090,1,{cell}\n"
    with pytest.raises(CatalogError) as info:
        read_catalog_text(text, "c.csv")
    assert info.value.field == "row 1.total_usd", str(info.value)
    assert ("expected a finite number" in str(info.value)
            or "expected a number <= 1000000000000" in str(info.value)), str(info.value)


def test_f3_csv_spot_is_true_or_false_not_one():
    text = "id,provider,card,cards,total_usd,spot\na,p,RTX 4090,1,10,1\n"
    with pytest.raises(CatalogError, match="row 1.spot: expected true or false"):
        read_catalog_text(text, "c.csv")
    offers, _ = read_catalog_text(text.replace(",1\n", ",true\n"), "c.csv")
    assert offers[0].spot is True


def test_f3_good_rows_are_unchanged():
    offers, _ = read_catalog_text("- {id: a, provider: p, card: RTX 4090, cards: 2, "
                                  "usd_per_hour: 0.5, days: 3}\n", "c.yaml")
    assert offers[0].cards == 2 and offers[0].total_usd == 0.5 * 24 * 3


@pytest.mark.parametrize("price", ["nan", "inf", "-1", "1e400"])
def test_f3_skypilot_non_finite_price_is_a_skipped_row(price):
    text = HEADER + f"gpu_1x_h100,H100-SXM,1,26,200,{price},us-east-1,,\n"
    offers, record = read_catalog_text(text, "x_vms.csv", days=3)
    assert offers == []
    assert [(s.row, s.label) for s in record.skipped] == [(1, "gpu_1x_h100")]
    assert "is not a price >= 0" in record.skipped[0].reason


@pytest.mark.parametrize("memory", ["inf", "nan", "1e400"])
def test_f3_skypilot_non_finite_memory_leaves_host_ram_unknown_and_says_so(memory):
    text = HEADER + f"gpu_1x_h100,H100-SXM,1,26,{memory},2.49,us-east-1,,\n"
    offers, _ = read_catalog_text(text, "x_vms.csv", days=3)
    assert len(offers) == 1 and offers[0].host_ram_bytes is None
    assert offers[0].total_usd == pytest.approx(2.49 * 24 * 3)
    assert any("MemoryGiB" in n and "host RAM unknown" in n for n in offers[0].notes)


def test_f3_skypilot_non_finite_count_is_a_skipped_row():
    text = HEADER + "gpu_1x_h100,H100-SXM,inf,26,200,2.49,us-east-1,,\n"
    offers, record = read_catalog_text(text, "x_vms.csv", days=3)
    assert offers == [] and "AcceleratorCount 'inf'" in record.skipped[0].reason


def test_f23_nan_or_negative_spot_price_gives_a_skipped_row_reason():
    text = HEADER + ("gpu_1x_h100,H100-SXM,1,26,200,2.49,us-east-1,,-1\n"
                     "gpu_2x_h100,H100-SXM,2,52,400,4.98,us-east-1,,nan\n"
                     "gpu_4x_h100,H100-SXM,4,104,800,9.96,us-east-1,,-inf\n")
    offers, record = read_catalog_text(text, "x_vms.csv", days=3)
    assert [o.spot for o in offers] == [False, False, False]
    assert [(s.row, s.reason) for s in record.skipped] == [
        (1, "SpotPrice '-1' is not a finite price >= 0 USD/h; no spot offer"),
        (2, "SpotPrice 'nan' is not a finite price >= 0 USD/h; no spot offer"),
        (3, "SpotPrice '-inf' is not a finite price >= 0 USD/h; no spot offer"),
    ]


def test_f23_a_good_spot_price_still_gives_a_spot_offer():
    text = HEADER + "gpu_1x_h100,H100-SXM,1,26,200,2.49,us-east-1,,1.25\n"
    offers, record = read_catalog_text(text, "x_vms.csv", days=3)
    assert [(o.spot, o.usd_per_hour) for o in offers] == [(False, 2.49), (True, 1.25)]
    assert record.skipped == ()


def test_f3_plan_refuses_an_infinite_days_row_with_exit_2(tmp_path):
    from ..conftest import run_cli
    (tmp_path / "s.yaml").write_text("model: {parameters: 7000000000}\ntask: inference\n"
                                     "weights: fp16\nbudget: {max_usd: 100, days: 3}\n")
    (tmp_path / "c.yaml").write_text("- {id: a, provider: p, card: RTX 4090, cards: 1, days: .inf,"
                                     " usd_per_hour: 0, available_from: '2025-01-01',"
                                     " available_until: '2099-12-31'}\n")
    p = run_cli("plan", str(tmp_path / "s.yaml"), "--catalog", str(tmp_path / "c.yaml"),
                "--format", "json", check=2)
    assert "row 1.days: expected a finite number" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize(("field", "value", "what"), [
    ("id", '"a\\x1b[31mred"', "control character U+001B"),
    ("provider", '"p\\u202eq"', "bidi control U+202E"),
    ("card", '"T4\\u2066"', "bidi control U+2066"),
    ("id", '"x|y\\nz"', "control character U+000A"),
    ("id", '"c1\\x9b"', "control character U+009B"),
])
def test_f9_text_with_control_or_bidi_characters_is_refused(field, value, what):
    row = {"id": "a", "provider": "p", "card": "T4", "cards": "1", "total_usd": "1"}
    row[field] = value
    text = "- {" + ", ".join(f"{k}: {v}" for k, v in row.items()) + "}\n"
    with pytest.raises(CatalogError) as info:
        read_catalog_text(text, "c.yaml")
    assert info.value.field == f"row 1.{field}"
    assert f"{what} in " in str(info.value)
    assert ": text may not hold control or bidi characters" in str(info.value)
    assert "\n" not in str(info.value) and "\x1b" not in str(info.value)


def test_f9_csv_and_skypilot_text_is_checked_too():
    with pytest.raises(CatalogError) as info:
        read_catalog_text("id,provider,card,cards,total_usd\nok\x1b[2J,p,T4,1,1\n", "c.csv")
    assert info.value.field == "row 1.id"
    offers, file = read_catalog_text(HEADER + 'g4dn\x1b[31m,T4,1,4,16,0.5,us-east-1,,\n',
                                     "aws/vms.csv")
    assert offers == []
    assert "InstanceType: control character U+001B" in file.skipped[0].reason


def test_f9_the_cli_refuses_with_one_line_and_exit_2(tmp_path):
    from ..conftest import EXAMPLES, run_cli
    catalog = tmp_path / "c.yaml"
    catalog.write_text('- {id: "a\\x1b[31mred", provider: p, card: T4, cards: 1, total_usd: 1}\n')
    proc = run_cli("plan", str(EXAMPLES / "llama-3.1-8b-serving.yaml"), "--catalog",
                   str(catalog), check=2)
    assert proc.stderr.count("\n") == 1 and "\x1b" not in proc.stderr
    assert "row 1.id: control character U+001B" in proc.stderr
