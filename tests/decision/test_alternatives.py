"""One change at a time (R13) on real registry models and the seed's two offers: each change's
peak is the estimate of the one-change sheet; nothing is applied."""

from __future__ import annotations

import pytest

import datetime as dt
import json

import yaml

from gpusizer.catalog.cards import all_cards, require_card
from gpusizer.decision.alternatives import check_fit
from gpusizer.pipeline import run_alternatives
from gpusizer.memory.estimate import estimate_memory
from gpusizer.pipeline import resolve_facts
from gpusizer.sheet import parse_sheet, quality_sha256, sheet_sha256
from tests.conftest import run_cli


@pytest.fixture(autouse=True)
def _point_estimates_only(monkeypatch):
    """These tests pin the rule on point figures; its error intervals (``borderline``) are
    tested in tests/memory/test_intervals.py, apart from the shipped calibration."""
    from gpusizer.memory import intervals
    monkeypatch.setattr(intervals, "load_calibration", lambda: None)

TODAY = dt.date(2026, 11, 30)
LLAMA = {"model": {"id": "meta-llama/Meta-Llama-3.1-8B"}, "task": "inference",
         "weights": "bf16",
         "inference": {"prompt_tokens": 7168, "new_tokens": 1024, "concurrency": 16}}
QWEN14 = {"model": {"id": "Qwen/Qwen2.5-14B"}, "task": "inference", "weights": "bf16",
          "inference": {"prompt_tokens": 1024, "new_tokens": 256},
          "quality": {"corpus": "eval/frozen.jsonl"}}


def alts(sheet, evidence_dir=None):
    r = run_alternatives(parse_sheet(sheet), evidence_dir=evidence_dir, today=TODAY)
    return {o.offer_id: o for o in r.offers}, r


def test_bigger_card_is_the_smallest_that_fits(tmp_path):
    offers, r = alts(LLAMA)
    assert list(offers) == ["seed-rtx-4090"]  # the RTX 6000 Ada is not excluded
    o = offers["seed-rtx-4090"]
    assert "a certain lower bound" in o.memory_reason
    card = next(a for a in o.alternatives if a.change == "bigger_card")
    sheet = parse_sheet(LLAMA)
    facts = resolve_facts(sheet)
    est = estimate_memory(sheet, facts, card=require_card(card.card))
    assert card.device_peak_bytes == est.device_peak_bytes and card.peak_bytes == est.peak_bytes
    assert card.fits is True and card.sheet_changes == {}
    here = require_card("RTX 4090").device_bytes.value
    smaller = [c for c in all_cards() if here < c.device_bytes.value < card.device_bytes]
    assert smaller and all(check_fit(sheet, facts, c).fits is False for c in smaller)
    assert "seed-rtx-6000-ada" in card.risks["budget"]
    # nothing applied: the plan is of the user's sheet
    assert r.plan.sheet_sha256 == sheet_sha256(sheet)


def test_shorter_cache_only_when_the_length_is_negotiable():
    o = alts(LLAMA)[0]["seed-rtx-4090"]
    assert "shorter_cache" not in {a.change for a in o.alternatives}
    assert ("shorter_cache", "inference.length_negotiable is false: the required length 8192 "
            "tokens stays (R1, R10)") in o.not_offered
    neg = {**LLAMA, "inference": {**LLAMA["inference"], "length_negotiable": True}}
    o = alts(neg)[0]["seed-rtx-4090"]
    a = next(a for a in o.alternatives if a.change == "shorter_cache")
    p, n = a.sheet_changes["inference.prompt_tokens"], a.sheet_changes["inference.new_tokens"]
    assert p + n < 8192 and a.fits is True and "prompts over" in a.risks["coverage"]
    sheet = parse_sheet(neg)
    facts = resolve_facts(sheet)
    card = require_card("RTX 4090")
    one = sheet.model_copy(update={"inference": sheet.inference.model_copy(
        update={"prompt_tokens": p, "new_tokens": n})})
    assert estimate_memory(one, facts, card=card).device_peak_bytes == a.device_peak_bytes
    longer = sheet.model_copy(update={"inference": sheet.inference.model_copy(
        update={"prompt_tokens": p + 1, "new_tokens": n})})
    assert check_fit(longer, facts, card).fits is False  # the largest length that fits


def test_lower_precision_risks_quality_until_evidence(tmp_path):
    o = alts(QWEN14)[0]["seed-rtx-4090"]
    lower = {a.sheet_changes["weights"]: a for a in o.alternatives
             if a.change == "lower_precision"}
    assert set(lower) == {"int8", "nf4"}
    sheet = parse_sheet(QWEN14)
    facts = resolve_facts(sheet)
    for fmt, a in lower.items():
        one = sheet.model_copy(update={"weights": fmt})
        est = estimate_memory(one, facts, card=require_card("RTX 4090"))
        assert a.device_peak_bytes == est.device_peak_bytes < a.device_bytes
        assert a.quality_state == "to_confirm"
        assert f"format {fmt} not yet evaluated against the reference bf16" in a.risks["quality"]
    # with quality evidence for nf4 (judged on these criteria), the risk follows it
    ev = tmp_path / "ev"
    ev.mkdir()
    reg = 0.01
    (ev / "q.json").write_text(json.dumps({
        "kind": "quality", "document": "nf4.samples.jsonl", "version": "gpusizer 0.1.0",
        "criteria_sha256": quality_sha256(sheet), "metric": "perplexity", "direction": "lower",
        "reference_format": "bf16", "candidate_format": "nf4", "candidate_implementation": "t",
        "reference_value": 8.0, "candidate_value": 8.0 * (1 + reg), "regression": reg,
        "max_regression": 0.02, "passed": True}))
    o = alts(QWEN14, evidence_dir=ev)[0]["seed-rtx-4090"]
    lower = {a.sheet_changes["weights"]: a for a in o.alternatives
             if a.change == "lower_precision"}
    assert lower["nf4"].quality_state == "acceptable"
    assert lower["int8"].quality_state == "to_confirm"


def test_training_changes_are_tried_and_their_limits_named():
    full70 = {"model": {"id": "meta-llama/Llama-2-70b-hf"}, "task": "full", "weights": "bf16",
              "training": {"sequence_length": 2048, "microbatch": 4,
                           "gradient_accumulation": 2}}
    o = alts(full70)[0]["seed-rtx-4090"]
    why = dict(o.not_offered)
    assert "a lower-precision base is another task" in why["lower_precision"]
    assert "shorter_cache" in why
    for a in o.alternatives:  # every listed change carries its peak or says it is unknown
        assert a.fits is True or (a.fits is None and "unknown" in a.reason)
        assert a.device_peak_bytes is not None or a.fits is None


def test_alternatives_cli_json_and_markdown(tmp_path):
    sheet = tmp_path / "s.yaml"
    sheet.write_text(yaml.safe_dump(QWEN14))
    doc = json.loads(run_cli("alternatives", str(sheet), "--format", "json").stdout)
    assert doc["excluded_on_memory"] == 1
    o = doc["offers"][0]
    assert o["offer_id"] == "seed-rtx-4090"
    assert all(isinstance(a["device_peak_bytes"], int) for a in o["alternatives"])
    md = run_cli("alternatives", str(sheet)).stdout
    assert "## seed-rtx-4090 (RTX 4090)" in md and "weights nf4 instead of bf16" in md


LORA8B = {"model": {"id": "meta-llama/Meta-Llama-3.1-8B"}, "task": "lora", "weights": "bf16",
          "training": {"sequence_length": 2048, "microbatch": 4, "gradient_accumulation": 2}}


def test_training_overload_smaller_microbatch_and_checkpointing():
    offers, _ = alts(LORA8B)
    sheet = parse_sheet(LORA8B)
    facts = resolve_facts(sheet)
    ada = offers["seed-rtx-6000-ada"]
    assert ada.memory_state == "to_confirm"  # estimated overload, not a certain lower bound
    assert check_fit(sheet, facts, require_card("RTX 6000 Ada")).fits is False
    by = {a.change: a for a in ada.alternatives}
    mb = by["smaller_microbatch"]
    assert mb.sheet_changes == {"training.microbatch": 2, "training.gradient_accumulation": 4}
    assert "effective batch 8 kept" in mb.summary and "micro-steps" in mb.risks["throughput"]
    one = sheet.model_copy(update={"training": sheet.training.model_copy(
        update={"microbatch": 2, "gradient_accumulation": 4})})
    card = require_card("RTX 6000 Ada")
    assert mb.device_peak_bytes == estimate_memory(one, facts, card=card).device_peak_bytes
    gc = by["gradient_checkpointing"]
    one = sheet.model_copy(update={"training": sheet.training.model_copy(
        update={"gradient_checkpointing": True})})
    assert gc.device_peak_bytes == estimate_memory(one, facts, card=card).device_peak_bytes
    assert gc.device_peak_bytes < mb.device_peak_bytes < estimate_memory(
        sheet, facts, card=card).device_peak_bytes
    assert "forward" in gc.risks["throughput"]
    # on the 24 GB card neither helps alone: each is named with its peak
    why = dict(offers["seed-rtx-4090"].not_offered)
    assert why["smaller_microbatch"].startswith("even microbatch 1 does not fit: estimated")
    assert why["gradient_checkpointing"].startswith("estimated device peak")
    assert [a.change for a in offers["seed-rtx-4090"].alternatives] == ["bigger_card"]


def test_a_bigger_card_is_named_with_its_article():
    from gpusizer.decision.alternatives import _article
    for name, article in (("RTX 5090", "an"), ("H200", "an"), ("A100 80GB", "an"), ("L4", "an"),
                          ("T4", "a"), ("V100", "a"), ("Radeon Pro", "a"), ("Instinct", "an")):
        assert _article(name) == article, name
