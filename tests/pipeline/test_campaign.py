"""Campaigns (CONTRACT.md ``variants`` and ``campaign``; issue 17 point 1): each variant is a whole
sheet judged by the same rules as that sheet planned alone."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from gpusizer.errors import SheetError
from gpusizer.pipeline import load_plan_inputs, plan
from gpusizer.pipeline.campaign import plan_campaign, variant_sheet
from gpusizer.decision.campaign import covers
from gpusizer.report.campaign_table import PAGE_ONE_VARIANTS
from gpusizer.report.json_report import plan_document
from gpusizer.report.markdown import render_markdown
from gpusizer.sheet import campaign_sheets, parse_sheet_text, sheet_sha256

from ..conftest import EXAMPLES, run_cli

TODAY = dt.date(2026, 12, 1)
BASE = """\
model: {id: meta-llama/Meta-Llama-3.1-8B}
task: inference
weights: bf16
inference: {prompt_tokens: 7168, new_tokens: 1024, concurrency: 8}
budget: {max_usd: 300, days: 3}
"""
VARIANTS = """\
variants:
  - name: long-context
    inference: {prompt_tokens: 30720, new_tokens: 2048}
  - name: nf4
    weights: nf4
  - name: lora
    task: lora
    inference: null
    training: {sequence_length: 4096, microbatch: 2, gradient_checkpointing: true}
"""
# the same variants written out as whole sheets by hand
ALONE = {
    "long-context": BASE.replace("prompt_tokens: 7168, new_tokens: 1024",
                                 "prompt_tokens: 30720, new_tokens: 2048"),
    "nf4": BASE.replace("weights: bf16", "weights: nf4"),
    "lora": BASE.replace("task: inference", "task: lora").replace(
        "inference: {prompt_tokens: 7168, new_tokens: 1024, concurrency: 8}",
        "training: {sequence_length: 4096, microbatch: 2, gradient_checkpointing: true}"),
}


@pytest.fixture(scope="module")
def vast(request):
    from ..conftest import SHARED
    path = SHARED / "data" / "catalogs" / "skypilot-catalog_v8_vast_vms.csv"
    if not path.is_file():
        pytest.skip(f"{path} absent (../shared)")
    return path


def test_each_variant_is_the_whole_sheet_written_alone():
    sheets = dict(campaign_sheets(parse_sheet_text(BASE + VARIANTS)))
    assert list(sheets) == ["base", "long-context", "nf4", "lora"]
    assert sheet_sha256(sheets["base"]) == sheet_sha256(parse_sheet_text(BASE))
    for name, text in ALONE.items():
        assert sheets[name] == parse_sheet_text(text), name
        assert sheet_sha256(sheets[name]) == sheet_sha256(parse_sheet_text(text)), name


def test_variants_never_move_the_base_sheets_hash():
    assert sheet_sha256(parse_sheet_text(BASE + VARIANTS)) == sheet_sha256(parse_sheet_text(BASE))


def test_mappings_merge_deeply_and_lists_are_replaced():
    text = BASE.replace("budget", "requirements: {software: [\"torch>=2.4\"]}\nbudget") + """\
variants:
  - name: c16
    inference: {concurrency: 16}
"""
    v = dict(campaign_sheets(parse_sheet_text(text)))["c16"]
    assert (v.inference.prompt_tokens, v.inference.new_tokens, v.inference.concurrency) == \
        (7168, 1024, 16)
    assert v.requirements.software == ["torch>=2.4"]


@pytest.mark.parametrize("entry, field", [
    ("  - name: x\n    model: {id: gpt2}\n", "variants.0.model"),
    ("  - name: x\n    quality: {corpus: a.jsonl}\n", "variants.0.quality"),
    ("  - name: x\n    budget: {max_usd: 1}\n", "variants.0.budget"),
    ("  - name: x\n    requirements: {host_ram: 1 GB}\n", "variants.0.requirements"),
])
def test_a_variant_may_not_override_the_campaigns_keys(entry, field):
    with pytest.raises(SheetError) as err:
        parse_sheet_text(BASE + "variants:\n" + entry)
    assert err.value.field == field
    assert "campaign's" in str(err.value) and "\n" not in str(err.value)


def test_a_variant_is_refused_with_every_rule_of_a_sheet():
    with pytest.raises(SheetError) as err:
        parse_sheet_text(BASE + "variants:\n  - name: x\n    inference: {concurrency: 0}\n")
    assert err.value.field == "variants.x.inference.concurrency"
    with pytest.raises(SheetError, match="own name"):
        parse_sheet_text(BASE + "variants:\n  - name: a\n  - name: a\n")
    with pytest.raises(SheetError, match="own name"):
        parse_sheet_text(BASE + "variants:\n  - name: base\n")


def test_unknown_variant_name_lists_the_variants():
    with pytest.raises(SheetError, match="base, long-context, nf4, lora") as err:
        variant_sheet(parse_sheet_text(BASE + VARIANTS), "long")
    assert err.value.field == "--variant"


def test_coverage_is_each_standalone_plans_own(vast):
    campaign = parse_sheet_text(BASE + VARIANTS)
    result = plan_campaign(load_plan_inputs(campaign, catalogs=[vast]), today=TODAY)
    c = result.campaign
    by_id = {o.id: set(o.covers) for o in c.offers}
    for name, text in {"base": BASE, **ALONE}.items():
        alone = plan(load_plan_inputs(parse_sheet_text(text), catalogs=[vast]), today=TODAY)
        assert [v.sheet_sha256 for v in c.variants if v.name == name] == [alone.sheet_sha256]
        expected = {d.offer.id for d in alone.decisions if covers(d)}
        assert {i for i, names in by_id.items() if name in names} == expected, name
        # SHARED_CRITERIA: the budget states of each variant alone are the base plan's
        assert {d.offer.id: d.criteria["budget"].state for d in alone.decisions} == \
            {d.offer.id: d.criteria["budget"].state for d in result.decisions}, name
    assert any(d.criteria["budget"].state == "exclude" for d in result.decisions)
    # cheapest_covering: the lowest total USD among offers covering all four, by arithmetic
    full = [o for o in c.offers if len(o.covers) == 4]
    assert full, "the vast catalog has 80 GB cards that carry every variant"
    assert c.cheapest_covering == min(full, key=lambda o: o.total_usd).id


def test_json_block_and_page_one(vast):
    text = BASE + "variants:\n" + "".join(
        f"  - name: c{n}\n    inference: {{concurrency: {n}}}\n" for n in range(1, 11))
    result = plan_campaign(load_plan_inputs(parse_sheet_text(text), catalogs=[vast]),
                           today=TODAY)
    doc = plan_document(result)
    block = doc["campaign"]
    assert [v["name"] for v in block["variants"]][:3] == ["base", "c1", "c2"]
    assert {o["id"] for o in block["offers"]} == {o["id"] for o in doc["offers"]}
    assert all(set(o) == {"id", "covers", "total_usd"} for o in block["offers"])  # no reasons
    # c8 and the base are the same workload (8 sequences): same hash, same coverage
    v = {x["name"]: x for x in block["variants"]}
    assert v["c8"]["sheet_sha256"] == v["base"]["sheet_sha256"]
    md = render_markdown(doc)
    page_one = md.split("## Details")[0]
    assert max(len(line) for line in page_one.splitlines()) <= 120
    head = next(line for line in page_one.splitlines() if line.startswith("| offer |"))
    assert head.count("| v") == PAGE_ONE_VARIANTS  # v1..v8 on page one
    assert "| v9 |" in md.split("## Details")[1] and "| v11 |" in md.split("## Details")[1]
    assert page_one.index("Campaign: offers × variants") < page_one.index("## Workload")


def test_cli_plan_variant_gives_that_variants_full_plan(tmp_path):
    sheet = EXAMPLES / "llama-3.1-8b-campaign.yaml"
    out = tmp_path / "v.json"
    run_cli("plan", str(sheet), "--variant", "busy", "--format", "json", "-o", str(out),
            "--today", "2026-12-01")
    doc = json.loads(out.read_text())
    assert "campaign" not in doc and doc["sheet"]["inference"]["concurrency"] == 32
    bad = run_cli("plan", str(sheet), "--variant", "nope", check=2)
    assert "--variant" in bad.stderr and "busy" in bad.stderr
