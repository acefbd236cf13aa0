"""Issue 11 (reliability findings F2, F16, F19, F20, F21): every number of the sheet passes one
check at the edge (``gpusizer.bounds``): the right type, finite, bounded; the margin is only the
contract's string form and keeps its exact value."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from gpusizer.bounds import NumberProblem, check_number, number_from_text
from gpusizer.errors import SheetError
from gpusizer.sheet import parse_sheet_text, sheet_sha256

from .conftest import run_cli

BARE = "model: {parameters: 7000000000}\ntask: inference\nweights: fp16\n"
LLAMA = ("model: {id: meta-llama/Meta-Llama-3.1-8B}\ntask: inference\nweights: bf16\n"
         "inference: {prompt_tokens: 100, new_tokens: 10}\n")


def _refused(text: str, fragment: str) -> SheetError:
    with pytest.raises(SheetError) as info:
        parse_sheet_text(text)
    assert fragment in str(info.value), str(info.value)
    return info.value


# --- the shared check -------------------------------------------------------------------------

@pytest.mark.parametrize("value, fragment", [
    (True, "not true/false"), (float("nan"), "finite"), (float("inf"), "finite"),
    (float("-inf"), "finite"), ("3", "expected a number, not str, got .3."), (101, "<= 100"),
])
def test_check_number_refuses_bools_non_finite_and_out_of_bounds(value, fragment):
    with pytest.raises(NumberProblem, match=fragment):
        check_number(value, minimum=0, maximum=100)


def test_check_number_keeps_a_good_value_unchanged():
    assert check_number(2.49, minimum=0, maximum=100) == 2.49
    assert check_number(8, minimum=1, maximum=8, whole=True) == 8
    with pytest.raises(NumberProblem, match="expected a whole number"):
        check_number(2.5, minimum=1, maximum=8, whole=True)


@pytest.mark.parametrize(("value", "count"), [
    (7000000000.0, 7_000_000_000), (7.0e+9, 7_000_000_000), ("7e9", 7_000_000_000),
    ("7.5e9", 7_500_000_000), ("1E3", 1000), (2.0, 2),
])
def test_f8_a_whole_float_or_exponent_string_is_that_integer(value, count):
    # YAML 1.1 (PyYAML) reads 7e9 as the string '7e9' (its float needs a dot); 7.5e9 is the
    # whole number 7 500 000 000
    got = check_number(value, minimum=1, maximum=10**15, whole=True)
    assert (got, type(got)) == (count, int)


@pytest.mark.parametrize(("value", "fragment"), [
    (7.5, "not a fraction"), ("1.25e1", "not a fraction"), ("7e-1", "not a fraction"),
    (float("nan"), "finite"), (float("inf"), "finite"), (2.0**60, "beyond 2\\*\\*53"),
    ("7 billion", "not str"), (True, "true/false"),
])
def test_f8_a_fraction_or_a_non_finite_count_is_still_refused(value, fragment):
    with pytest.raises(NumberProblem, match=fragment):
        check_number(value, minimum=0, maximum=2**64, whole=True)


def test_f8_the_sheet_reads_7e9_parameters(tmp_path):
    import yaml

    from gpusizer.sheet import parse_sheet
    data = yaml.safe_load("model: {parameters: 7e9}\ntask: inference\nweights: bf16\n"
                          "inference: {prompt_tokens: 10, new_tokens: 10}\n")
    assert data["model"]["parameters"] == "7e9"  # the cause: YAML 1.1 leaves it text
    assert parse_sheet(data).model.parameters == 7_000_000_000
    data["model"]["parameters"] = 7000000000.0
    assert parse_sheet(data).model.parameters == 7_000_000_000


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "Infinity", "1e400", "true", "", "0x10"])
def test_number_from_text_refuses_non_numbers_and_non_finite(text):
    with pytest.raises(NumberProblem):
        number_from_text(text, minimum=0, maximum=10**12)


def test_number_from_text_reads_decimals():
    assert number_from_text("2.49", minimum=0, maximum=100) == 2.49
    assert number_from_text("8", minimum=1, maximum=8, whole=True) == 8


# --- F2: margin ---------------------------------------------------------------------------------

@pytest.mark.parametrize("margin", ["{}", "{percent: .nan}", "{percent: .inf}",
                                    "{bytes: -107374182400}", "{percent: -50}", "{percent: 5}"])
def test_f2_a_margin_mapping_is_refused(margin):
    _refused(BARE + f"margin: {margin}\n", "margin: expected a percentage of the card's device "
             "bytes ('5%') or a memory size with a unit ('2 GiB'), got dict")


@pytest.mark.parametrize("margin", ["-50%", "nan%", "inf%", "100%", "1e1%", "+5%", "5"])
def test_f2_a_bad_margin_string_is_refused(margin):
    _refused(BARE + f"margin: '{margin}'\n", "margin: expected")


def test_f2_margin_mapping_exits_2_on_plan_not_a_traceback(tmp_path):
    sheet = tmp_path / "s.yaml"
    sheet.write_text(BARE + "margin: {percent: .nan}\n")
    p = run_cli("plan", str(sheet), check=2)
    assert "margin: expected" in p.stderr and "Traceback" not in p.stderr


# --- F21: a percentage keeps its exact value ------------------------------------------------------

def test_f21_percent_margin_is_exact_in_echo_hash_and_bytes():
    a = parse_sheet_text(LLAMA + "margin: 12.3456789%\n")
    b = parse_sheet_text(LLAMA + "margin: 12.34567%\n")
    assert a.margin.percent == Decimal("12.3456789")
    assert str(a.margin) == "12.3456789%" and str(b.margin) == "12.34567%"
    assert a.model_dump(mode="json")["margin"] == "12.3456789%"
    assert sheet_sha256(a) != sheet_sha256(b)
    rtx_4090 = 25_757_220_864   # RTX 4090 device bytes (card table)
    # ⌈12.3456789 × 25 757 220 864 / 100⌉ and ⌈12.34567 × 25 757 220 864 / 100⌉, exactly (0.1.0
    # rounded the first percent to 12.345679 and gave 3 179 903 808)
    assert a.margin.of(rtx_4090) == -(-123456789 * rtx_4090 // 10**9) == 3_179_903_782
    assert b.margin.of(rtx_4090) == -(-1234567 * rtx_4090 // 10**7) == 3_179_901_490


def test_f21_usual_margins_keep_their_echo_and_hash():
    """'5%', '10%', '2.5%' echo as before (sheet hashes of existing sheets do not move)."""
    for text, echo in (("5%", "5%"), ("10%", "10%"), ("2.5%", "2.5%"), ("5.0%", "5%")):
        assert parse_sheet_text(BARE + f"margin: '{text}'\n").model_dump(mode="json")[
            "margin"] == echo
    assert parse_sheet_text(BARE).margin.of(25_757_220_864) == 1_287_861_044  # ⌈5 % of it⌉


# --- F19: no bool for a number, no 1 for true -----------------------------------------------

@pytest.mark.parametrize("block, field", [
    ("quality: {corpus: eval.jsonl, max_regression: true}\n", "quality.max_regression"),
    ("budget: {max_usd: true}\n", "budget.max_usd"),
    ("budget: {days: true}\n", "budget.days"),
])
def test_f19_a_boolean_is_not_a_number(block, field):
    _refused(LLAMA.replace("bf16", "nf4") + block, f"{field}: expected a number, not true/false")


def test_f19_gpu_memory_utilization_true_is_refused():
    _refused(LLAMA.replace("new_tokens: 10}", "new_tokens: 10, engine: vllm, "
                           "gpu_memory_utilization: true}"),
             "inference.gpu_memory_utilization: expected a number, not true/false")


def test_f19_one_is_not_true():
    err = _refused(LLAMA.replace("bf16", "nf4") + "quantization: {prequantized: 1}\n",
                   "quantization.prequantized")
    assert "1" in str(err)
    assert parse_sheet_text(LLAMA.replace("bf16", "nf4") + "quantization: {prequantized: true}\n"
                            ).quantization.prequantized is True


# --- F20: floats are finite and bounded -----------------------------------------------------

TRAIN = ("model: {id: meta-llama/Meta-Llama-3.1-8B}\ntask: lora\nweights: bf16\n"
         "training: {sequence_length: 512, microbatch: 1, lora: {alpha: ALPHA}}\n")


@pytest.mark.parametrize("alpha, fragment", [
    (".inf", "expected a finite number, got inf"),
    ("1000000000000000000000000000000", "expected a number <= 2147483647"),
])
def test_f20_lora_alpha_is_finite_and_bounded(alpha, fragment):
    _refused(TRAIN.replace("ALPHA", alpha), f"training.lora.alpha: {fragment}")


def test_f20_max_regression_is_finite_and_at_most_one():
    _refused(LLAMA + "quality: {corpus: e.jsonl, max_regression: .inf}\n",
             "quality.max_regression: expected a finite number, got inf")
    _refused(LLAMA + "quality: {corpus: e.jsonl, max_regression: 1.5}\n",
             "quality.max_regression: expected a number <= 1, got 1.5")


def test_f20_lora_alpha_keeps_a_plain_value():
    assert parse_sheet_text(TRAIN.replace("ALPHA", "32")).training.lora.alpha == 32


# --- F16: sizes and counts beyond float range ----------------------------------------------------

@pytest.mark.parametrize("text, field", [
    (BARE + "reserve: 1" + "0" * 320 + " B\n", "reserve: expected a memory size <= 2**128 B"),
    ("model: {parameters: 1" + "0" * 320 + "}\ntask: inference\nweights: fp16\n",
     "model.parameters: expected an integer <= 1000000000000000"),
    (BARE + "requirements: {host_ram: 1" + "0" * 320 + " B}\n",
     "requirements.host_ram: expected a memory size <= 2**128 B"),
])
def test_f16_sizes_beyond_float_range_are_refused(tmp_path, text, field):
    sheet = tmp_path / "s.yaml"
    sheet.write_text(text)
    p = run_cli("estimate", str(sheet), check=2)
    assert field in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr) < 400   # the value is shown shortened, not its 320 digits


def test_f16_largest_accepted_size_still_formats():
    doc = json.loads(run_cli("estimate", *_write(BARE + "reserve: 1000000000000 TiB\n"),
                             "--format", "json").stdout)
    assert doc["memory"]["reserve_bytes"] == 10**12 * 2**40


def _write(text: str) -> list[str]:
    import tempfile
    from pathlib import Path
    d = Path(tempfile.mkdtemp())
    (d / "s.yaml").write_text(text)
    return [str(d / "s.yaml")]
