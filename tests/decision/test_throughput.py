"""``decision.throughput``: the bounds against published figures and arithmetic shown here."""

from __future__ import annotations

import pytest

from gpusizer.catalog.card_table import bundled_card_table
from gpusizer.decision.throughput import (active_parameters, offer_throughput,
                                          training_days_bound)
from gpusizer.memory.estimate import estimate_memory
from gpusizer.model.resolve import facts_for_sheet
from gpusizer.sheet import load_sheet, parse_sheet_text

from ..conftest import EXAMPLES

CARDS = bundled_card_table()


def test_moe_active_parameters_are_the_model_cards():
    # Qwen/Qwen3-30B-A3B model card: "Number of Parameters: 30.5B; Activated: 3.3B"
    # (128 experts, 8 activated per token)
    sheet = load_sheet(EXAMPLES / "qwen3-30b-a3b-moe.yaml")
    facts = facts_for_sheet(sheet)
    total = sum(g.count for g in facts.architecture.params)
    matmul, active = active_parameters(facts, sheet)
    assert round(total / 1e9, 1) == 30.5
    assert round(active / 1e9, 1) in (3.3, 3.4) and active == 3_353_032_704
    assert matmul < active  # the untied embedding is a lookup, not read whole per step


def test_decode_and_prefill_bounds_by_arithmetic():
    # Llama-3.1-8B bf16, 8 sequences of 7168 + 1024 tokens on one RTX 4090
    sheet = load_sheet(EXAMPLES / "llama-3.1-8b-serving.yaml")
    facts = facts_for_sheet(sheet)
    card = CARDS.by_name("RTX 4090")
    est = estimate_memory(sheet, facts, card=card)
    t = offer_throughput(sheet, facts, card, est, total_usd=47.14, days=3)
    # bytes per step: weights less the untied embedding, 2 B × 7 504 924 672 = 15 009 849 344 B,
    # plus the KV cache, 131 072 B per token × 8192 tokens × 8 sequences = 8 589 934 592 B
    step = 15_009_849_344 + 8_589_934_592
    assert t.decode_tokens_per_s_bound == pytest.approx(8 * 1008e9 / step)  # 341.7 tokens/s
    assert round(t.decode_tokens_per_s_bound, 1) == 341.7
    # USD per million tokens: 47.14 USD ÷ (341.7 tokens/s × 3 days × 86 400 s) × 10**6
    assert t.usd_per_million_tokens_bound == pytest.approx(
        47.14 / (t.decode_tokens_per_s_bound * 3 * 86_400) * 1e6)
    # prefill: 8 × (2 × 7 504 924 672 × 7168 + 32 × 7168² × 4096) FLOPs ÷ 165.2 TFLOPS (Ada
    # whitepaper, RTX 4090 BF16 dense with FP32 accumulate)
    flops = 8 * (2 * 7_504_924_672 * 7168 + 32 * 7168 ** 2 * 4096)
    assert t.prefill_seconds_bound == pytest.approx(flops / 165.2e12)
    assert t.training_days_bound is None and "Kaplan" in t.source


def test_fp8_prefill_uses_the_cards_fp8_peak():
    card = CARDS.by_name("H100 SXM")
    assert card.peak_tflops("fp8").value == 1979 and card.peak_tflops("bf16").value == 989.5
    assert "nvidia.com" in card.peak_tflops("fp8").source
    assert CARDS.by_name("A100 80GB").peak_tflops("fp8") is None  # Ampere has no FP8


def test_training_days_at_the_stated_mfu():
    # 6 × 8 030 261 248 × 10**9 tokens ÷ (0.4 × 989.5e12 × 1 GPU) = 121 738 s = 1.409 days
    days = training_days_bound(parameters=8_030_261_248, tokens=1e9, peak_tflops=989.5, gpus=1,
                               mfu=0.4)
    assert days == pytest.approx(6 * 8_030_261_248 * 1e9 / (0.4 * 989.5e12) / 86_400)
    assert round(days, 3) == 1.409
    sheet = parse_sheet_text("""\
model: {id: meta-llama/Meta-Llama-3.1-8B}
task: lora
weights: bf16
training: {sequence_length: 2048, microbatch: 1, gradient_checkpointing: true,
           dataset_tokens: 1000000000, epochs: 2, mfu: 0.4}
""")
    facts = facts_for_sheet(sheet)
    card = CARDS.by_name("H100 SXM")
    t = offer_throughput(sheet, facts, card, estimate_memory(sheet, facts, card=card),
                         total_usd=None, days=None)
    assert t.training_days_bound == pytest.approx(2 * days)
    assert t.decode_tokens_per_s_bound is None


def test_no_dataset_no_duration_and_the_hash_does_not_move():
    plain = load_sheet(EXAMPLES / "llama-3.1-8b-qlora.yaml")
    from gpusizer.sheet import canonical_json
    assert "dataset_tokens" not in canonical_json(plain) and "mfu" not in canonical_json(plain)


def test_a_measured_figure_stands_beside_the_bound():
    from gpusizer.decision.throughput import measured_decode_tokens_per_s
    from gpusizer.evidence import load_evidence_docs

    from .test_criteria import SHEET, measurement
    doc = {**measurement(SHEET), "decode_tokens_per_s": 123.4}  # on an RTX 6000 Ada
    docs = load_evidence_docs([doc])
    assert measured_decode_tokens_per_s(docs, CARDS.by_name("RTX 6000 Ada")) == \
        (123.4, "runs/a.jsonl")
    assert measured_decode_tokens_per_s(docs, CARDS.by_name("RTX 4090")) is None  # another card
