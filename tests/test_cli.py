"""The CLI as a user runs it: the seed's worked example (R7) and short choice (R11), exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import REPO_ROOT, cli_json, run_cli

R7 = [("fp32", 28_000_000_000, "26.08", "32.08"), ("fp16", 14_000_000_000, "13.04", "19.04"),
      ("int8", 7_000_000_000, "6.52", "12.52"), ("int4", 3_500_000_000, "3.26", "9.26")]


@pytest.mark.parametrize("fmt,dense,weights_gib,envelope_gib", R7)
def test_r7_worked_example_every_row(tmp_path, fmt, dense, weights_gib, envelope_gib):
    sheet = tmp_path / f"{fmt}.yaml"
    sheet.write_text(f"model: {{parameters: 7000000000}}\ntask: inference\nweights: {fmt}\n"
                     "reserve: 6 GiB\n")
    doc = cli_json("estimate", str(sheet))
    mem = doc["memory"]
    assert mem["weights_bytes"] == dense
    assert mem["envelope_bytes"] == dense + 6 * 2**30
    assert f"{mem['weights_bytes'] / 2**30:.2f}" == weights_gib
    assert f"{mem['envelope_bytes'] / 2**30:.2f}" == envelope_gib
    assert mem["peak_bytes"] is None  # no inference block: no peak is claimed
    md = run_cli("estimate", str(sheet)).stdout
    assert f"| weights only | {weights_gib} |" in md
    assert f"| indicative envelope (weights + reserve) | {envelope_gib} |" in md


def test_r11_short_choice_two_conditional_candidates():
    doc = cli_json("plan", "examples/seed-7b-fp16.yaml")
    assert f"{doc['memory']['envelope_bytes'] / 2**30:.2f}" == "19.04"
    offers = {o["canonical_card"]: o for o in doc["offers"]}
    assert set(offers) == {"RTX 4090", "RTX 6000 Ada"}
    assert (offers["RTX 4090"]["cards"], offers["RTX 4090"]["days"],
            offers["RTX 4090"]["total_usd"]) == (1, 3, 47.14)
    assert offers["RTX 6000 Ada"]["total_usd"] == 55.71
    for o in offers.values():
        assert o["verdict"] == "conditional" and o["rank"] is None
        # a bare parameter count: the fit is unknown, so no provisional rank (CONTRACT.md)
        assert o["estimated_fit"] == "unknown" and o["provisional_rank"] is None
        assert "19.04 GiB" in o["criteria"]["memory"]["reason"]
    assert [o["total_usd"] for o in doc["offers"]] == [47.14, 55.71]  # unranked: by cost
    assert doc["gpusizer"]["catalogs"][0]["sha256"]


def test_invalid_sheet_exits_2_naming_field_and_value(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {parameters: 7000000000}\ntask: inference\nweights: fp16\nreserve: 6\n")
    p = run_cli("estimate", str(bad), check=2)
    assert "reserve" in p.stderr and "bare number 6" in p.stderr
    missing = run_cli("plan", str(tmp_path / "nope.yaml"), check=2)
    assert "cannot read the sheet" in missing.stderr


def test_length_beyond_context_window_is_an_error_naming_both_numbers(tmp_path):
    s = tmp_path / "long.yaml"
    s.write_text("model: {id: meta-llama/Llama-2-7b-hf}\ntask: inference\nweights: fp16\n"
                 "inference: {prompt_tokens: 4000, new_tokens: 200}\n")
    p = run_cli("estimate", str(s), check=2)
    assert "4200" in p.stderr and "4096" in p.stderr and "max_position_embeddings" in p.stderr


def test_unknown_card_exits_2_with_close_matches():
    p = run_cli("estimate", "examples/llama-3.1-8b-serving.yaml", "--card", "RTX 4900", check=2)
    assert "RTX 4090" in p.stderr


def test_schema_is_json_schema_of_the_sheet():
    schema = json.loads(run_cli("schema").stdout)
    assert schema["title"] == "Sheet" and "model" in schema["required"]
    assert schema["additionalProperties"] is False


def test_plan_and_estimate_import_no_torch():
    code = ("import sys\nfrom gpusizer.cli import app\n"
            "from typer.testing import CliRunner\nr = CliRunner()\n"
            "for args in (['estimate', 'examples/llama-3.1-8b-serving.yaml', '--card', 'H100-SXM'],"
            " ['plan', 'examples/llama-3.1-8b-serving.yaml', '--format', 'json']):\n"
            "    res = r.invoke(app, args)\n    assert res.exit_code == 0, res.output\n"
            "bad = [m for m in ('torch', 'transformers', 'peft') if m in sys.modules]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=True)


def test_html_contains_every_json_figure(tmp_path):
    from html.parser import HTMLParser
    out = tmp_path / "sheet.html"
    run_cli("plan", "examples/llama-3.1-8b-serving.yaml", "--format", "html", "-o", str(out))
    doc = cli_json("plan", "examples/llama-3.1-8b-serving.yaml")

    class Text(HTMLParser):
        def __init__(self):
            super().__init__()
            self.cells, self.script = [], False

        def handle_starttag(self, tag, attrs):
            self.script = tag == "script"

        def handle_data(self, data):
            if not self.script:
                self.cells.append(data)

    p = Text()
    p.feed(out.read_text())
    text = "\n".join(p.cells)
    mem = doc["memory"]
    figures = [mem[k] for k in ("weights_bytes", "envelope_bytes", "peak_bytes",
                                "device_peak_bytes", "conservative_envelope_bytes")]
    figures += [i["bytes"] for i in mem["items"] if i["bytes"]]
    for f in figures:
        assert str(f) in text, f
    for o in doc["offers"]:
        assert o["id"] in text and f"{o['total_usd']:.2f}" in text
        for c in o["criteria"].values():
            assert c["reason"] in text


def test_fit_answers_largest_concurrency():
    p = run_cli("fit", "examples/llama-3.1-8b-serving.yaml", "--card", "H100-SXM", "--format",
                "json")
    ans = json.loads(p.stdout)["answers"]
    conc = ans["largest concurrency at the required length"]
    assert isinstance(conc, int) and conc >= 8


def test_fit_training_answers_are_the_boundary():
    """The largest microbatch fits with the margin and one more does not (estimate itself)."""
    p = run_cli("fit", "examples/llama-3.1-8b-qlora.yaml", "--card", "RTX 6000 Ada", "--format",
                "json")
    doc = json.loads(p.stdout)
    mb = doc["answers"]["largest microbatch at the required sequence_length"]
    seq = doc["answers"]["longest sequence_length at the required microbatch"]
    assert isinstance(mb, int) and mb >= 1 and isinstance(seq, int)
    device, margin = doc["device_bytes"], round(doc["device_bytes"] * 0.05)
    from gpusizer.catalog.cards import require_card
    from gpusizer.memory.estimate import estimate_memory
    from gpusizer.pipeline import resolve_facts
    from gpusizer.sheet import load_sheet
    sheet = load_sheet(REPO_ROOT / "examples" / "llama-3.1-8b-qlora.yaml")
    facts, card = resolve_facts(sheet), require_card("RTX 6000 Ada")

    def peak(**kw):
        s = sheet.model_copy(update={"training": sheet.training.model_copy(update=kw)})
        return estimate_memory(s, facts, card=card).device_peak_bytes

    assert peak(microbatch=mb) + margin <= device < peak(microbatch=mb + 1) + margin
    assert peak(sequence_length=seq) + margin <= device < peak(sequence_length=seq + 1) + margin


def test_today_pins_the_budget_date_and_a_bad_date_exits_2():
    proc = run_cli("plan", "examples/seed-7b-fp16.yaml", "--today", "2026-13-01", check=2)
    assert proc.stderr.strip() == ("error: --today: '2026-13-01' is not a date; expected "
                                   "YYYY-MM-DD")
    a = cli_json("plan", "examples/seed-7b-fp16.yaml", "--today", "2026-12-01")
    b = cli_json("plan", "examples/seed-7b-fp16.yaml", "--today", "2026-12-01")
    assert a == b


@pytest.mark.parametrize("text", ["20261201", "2026-W49-2", "2026-12-1"])
def test_today_is_only_the_iso_calendar_form(text):
    proc = run_cli("plan", "examples/seed-7b-fp16.yaml", "--today", text, check=2)
    assert proc.stderr.strip() == f"error: --today: {text!r} is not a date; expected YYYY-MM-DD"
