"""The assembled estimate: phases, card rules, cache kinds, placements, logits (arithmetic shown)."""

import pytest

from gpusizer.catalog.cards import require_card
from gpusizer.errors import ModelError, SheetError
from gpusizer.memory.estimate import estimate_memory

from .conftest import facts_of, sheet

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
INF = {"prompt_tokens": 3072, "new_tokens": 1024, "concurrency": 2}


def test_phase_peaks_are_what_is_live_and_reserve_is_never_added():
    s = sheet(inference=INF, reserve="6 GiB")
    est = estimate_memory(s, facts_of(LLAMA))
    kv = est.item("kv_cache")
    assert kv.bytes == 32 * 2 * 8 * 128 * 2 * 4096 * 2
    assert kv.bytes_in("prefill") == 32 * 2 * 8 * 128 * 2 * 3072 * 2  # the prompt only
    decode = {p.name: p for p in est.phases}["decode"]
    live = [est.item(n) for n in decode.items]
    assert decode.peak_bytes == sum(i.bytes_in("decode") for i in live if i.holder == "torch")
    # reserved = allocated + what the allocator holds without a tensor (never the CUDA context)
    assert decode.reserved_peak_bytes == sum(i.bytes_in("decode") for i in live
                                             if not i.non_torch)
    assert decode.peak_bytes < decode.reserved_peak_bytes < decode.device_peak_bytes
    assert decode.device_peak_bytes == sum(i.bytes_in("decode") for i in live)
    assert est.peak_bytes == max(p.peak_bytes for p in est.phases)
    assert est.reserved_peak_bytes == max(p.reserved_peak_bytes for p in est.phases)
    assert est.envelope_bytes == est.weights_bytes + 6 * 2**30
    assert est.peak_bytes < est.conservative_envelope_bytes  # items do not all peak at once
    assert est.lower_bound_bytes == est.weights_bytes + kv.bytes


def test_static_cache_is_whole_at_prefill():
    est = estimate_memory(sheet(inference={**INF, "cache": "static"}), facts_of(LLAMA))
    kv = est.item("kv_cache")
    assert kv.bytes_in("prefill") == kv.bytes


def test_logits_all_positions_vs_last():
    f = facts_of(LLAMA)
    last = estimate_memory(sheet(inference=INF), f).item("prefill_working").bytes
    every = estimate_memory(sheet(inference={**INF, "logits": "all"}), f).item("prefill_working")
    # all positions: 2 sequences × 3072 × 128256 × 2 B more logits than 2 × 1 × 128256 × 2 B
    assert every.bytes >= 2 * 3072 * 128256 * 2
    assert every.bytes > last


def test_eager_attention_adds_the_s_squared_matrix():
    f = facts_of(LLAMA)
    sdpa = estimate_memory(sheet(inference=INF), f).item("prefill_working").bytes
    eager = estimate_memory(sheet(inference=INF, attention="eager"), f).item("prefill_working")
    assert eager.bytes - sdpa >= 2 * 32 * 3072 * 3072 * (2 + 4 + 2) - 2 * 3072 * 4096 * 2 * 10
    assert "eager scores" in eager.formula


def test_card_rules_follow_what_really_runs():
    # bf16 on a T4 (CC 7.5) runs as fp16; flash falls back to SDPA
    est = estimate_memory(sheet(inference=INF, attention="flash"), facts_of(LLAMA),
                          card=require_card("T4"))
    assert est.weights_format == "fp16" and any(n.code == "card_rule" and "CC >= 8.0" in n.text
                                                 for n in est.notes)
    # DeepSeek-V3's fp8 checkpoint on an A100 (CC 8.0) is dequantized to bf16 by transformers
    ds = facts_of("deepseek-ai/DeepSeek-V3")
    s = sheet(weights="auto", inference=INF, placement={"gpus": 8, "strategy": "tensor-parallel"})
    a100 = estimate_memory(s, ds, card=require_card("A100-80GB"))
    h100 = estimate_memory(s, ds, card=require_card("H100-SXM"))
    assert a100.weights_format == "bf16" and h100.weights_format == "fp8"
    assert a100.weights_bytes > 1.9 * h100.weights_bytes
    assert a100.item("load_conversion_transient").bytes > 0
    without = estimate_memory(s, ds)
    assert any(n.code == "no_card" for n in without.notes)


def test_load_time_conversion_transient_is_the_largest_converted_tensor_in_bf16():
    est = estimate_memory(sheet(weights="nf4", inference=INF), facts_of(LLAMA))
    t = est.item("load_conversion_transient")
    assert t.phases == ("load",) and t.bytes == 14336 * 4096 * 2  # one MLP matrix in bf16


def test_gptq_cannot_be_produced_at_load():
    with pytest.raises(SheetError, match="calibration"):
        estimate_memory(sheet(weights="gptq-int4", inference=INF), facts_of(LLAMA))
    pre = sheet(weights="gptq-int4", quantization={"prequantized": True}, inference=INF)
    est = estimate_memory(pre, facts_of(LLAMA))
    assert est.weights_format == "gptq-int4"
    assert est.item("quantization_metadata").bytes > 0
    assert all(i.name != "load_conversion_transient" for i in est.items)  # read as stored


def test_unknown_stored_format_needs_explicit_weights():
    with pytest.raises(ModelError, match="stored format is unknown"):
        estimate_memory(sheet(weights="auto", inference={"prompt_tokens": 10, "new_tokens": 10}),
                        facts_of("openai-community/gpt2"))


def test_placements_per_gpu():
    f = facts_of("meta-llama/Meta-Llama-3.1-70B")
    one = estimate_memory(sheet(inference=INF), f)
    tp = estimate_memory(sheet(inference=INF, placement={"gpus": 4, "strategy": "tensor-parallel"}), f)
    dm = estimate_memory(sheet(inference=INF, placement={"gpus": 4, "strategy": "device-map"}), f)
    # transformers replicates the embedding (128256 × 8192) on every rank; vLLM splits it
    embed = 128256 * 8192
    assert tp.weights_bytes == (f.architecture.total_parameters - embed) * 2 // 4 + embed * 2
    vllm = estimate_memory(sheet(inference={**INF, "engine": "vllm"},
                                 placement={"gpus": 4, "strategy": "tensor-parallel"}), f)
    assert vllm.weights_bytes == one.weights_bytes // 4
    # device-map: 20 of 80 layers + the (untied) lm_head or embedding on the heaviest GPU
    assert one.weights_bytes // 4 < dm.weights_bytes < one.weights_bytes // 3
    # NCCL buffers without a card: the stated default NVLink + NVLS (memory.nccl): all-reduce
    # ring + tree = 32 channels × 2 peers × 12 MiB, + NVLS 16 channels × 2 × 1 MiB × 4 heads
    assert tp.item("nccl_buffers").bytes == (32 * 2 * 12 + 16 * 2 * 1 * 4) * 2**20
    assert tp.device_peak_bytes is not None
    with pytest.raises(SheetError, match="training state"):
        estimate_memory(sheet(inference=INF, placement={"gpus": 2, "strategy": "fsdp"}), f)


def test_bare_count_with_inference_block_keeps_unknowns_unknown():
    from gpusizer.sheet import parse_sheet
    s = parse_sheet({"model": {"parameters": 7_000_000_000}, "task": "inference",
                     "weights": "fp16", "inference": INF})
    est = estimate_memory(s, None)
    assert est.item("kv_cache").bytes is None and est.peak_bytes is None
    assert "architecture" in est.item("kv_cache").unknown_reason


def test_sliding_layers_hold_the_whole_prompt_at_prefill():
    # transformers keeps a view of the full prompt K/V in sliding layers until the first decode
    f = facts_of("google/gemma-2-9b")
    est = estimate_memory(sheet(inference={"prompt_tokens": 7168, "new_tokens": 1024,
                                           "concurrency": 8}), f)
    per_layer_token = 2 * 8 * 256 * 2
    kv = est.item("kv_cache")
    assert kv.bytes_in("prefill") == 8 * 7168 * 42 * per_layer_token
    assert kv.bytes_in("decode") == 8 * (21 * 8192 + 21 * 4096) * per_layer_token
    assert est.lower_bound_bytes == est.weights_bytes + kv.bytes_in("decode")


def test_bitsandbytes_leaves_moe_experts_in_16_bit_under_transformers():
    f = facts_of("Qwen/Qwen3-30B-A3B")
    nf4 = estimate_memory(sheet(weights="nf4", inference=INF), f)
    experts = f.architecture.parameters_by_role("expert_linear")
    assert nf4.weights_bytes > experts * 2  # experts stay bf16 (bitsandbytes#1849)
    assert any(n.code == "format_kept_dense" and "bitsandbytes#1849" in n.text
               for n in nf4.notes)
    vllm = estimate_memory(sheet(weights="nf4", inference={**INF, "engine": "vllm"}), f)
    assert vllm.weights_bytes < experts  # vLLM's fused MoE takes 4-bit experts


def test_bitsandbytes_matmul_transients_in_prefill():
    f = facts_of(LLAMA)
    bf16 = estimate_memory(sheet(inference=INF), f).item("prefill_working").bytes
    nf4 = estimate_memory(sheet(weights="nf4", inference=INF), f).item("prefill_working").bytes
    int8 = estimate_memory(sheet(weights="int8", inference=INF), f).item("prefill_working").bytes
    assert nf4 - bf16 == 14336 * 4096 * 2  # one MLP matrix dequantized to bf16
    t = 2 * 3072
    assert int8 - bf16 == t * 14336 * (4 + 2) + t * 14336 + 4 * t  # int32 + fp16 outputs, int8 input


def _prequantized(fmt, qc):
    from dataclasses import replace
    return replace(facts_of(LLAMA), stored_format=fmt, quantization_config=qc)


def test_checkpoint_group_size_and_double_quant_win_over_sheet_defaults():
    inf = {"inference": INF, "weights": "auto"}
    g32 = estimate_memory(sheet(**inf), _prequantized("gptq-int4", {"quant_method": "gptq",
                                                                     "bits": 4, "group_size": 32}))
    g128 = estimate_memory(sheet(**inf), _prequantized("gptq-int4", {"quant_method": "gptq",
                                                                      "bits": 4,
                                                                      "group_size": 128}))
    meta = lambda e: e.item("quantization_metadata").bytes  # noqa: E731
    quant = 1_342_177_280 + 5_637_144_576
    g_idx = 32 * (4096 * 4 + 4096 * 2 + 14336) * 4
    assert meta(g32) == quant // 32 * 2 + quant // 32 // 8 * 4 + g_idx
    assert meta(g128) == quant // 128 * 2 + quant // 128 // 8 * 4 + g_idx
    per_channel = estimate_memory(sheet(**inf), _prequantized(
        "gptq-int4", {"quant_method": "gptq", "bits": 4, "group_size": -1}))
    rows = 32 * (4096 + 1024 + 1024 + 4096 + 14336 + 14336 + 4096)
    assert meta(per_channel) == rows * 2 + rows // 8 * 4 + g_idx
    with pytest.raises(SheetError, match="group_size 32"):
        estimate_memory(sheet(**inf, quantization={"group_size": 128}),
                        _prequantized("gptq-int4", {"quant_method": "gptq", "group_size": 32}))
    dq = estimate_memory(sheet(**inf), _prequantized("nf4", {"load_in_4bit": True,
                                                             "bnb_4bit_use_double_quant": True}))
    blocks = quant // 64
    assert meta(dq) == blocks + -(-blocks // 256) * 4


def test_a_packed_checkpoint_is_not_reconverted_at_load():
    f = _prequantized("gptq-int4", {"quant_method": "gptq", "bits": 4, "group_size": 128})
    with pytest.raises(SheetError, match="cannot be converted to nf4"):
        estimate_memory(sheet(weights="nf4", inference=INF), f)
    odd = _prequantized(None, {"quant_method": "gptq", "bits": 8})
    with pytest.raises(ModelError, match="'bits': 8"):
        estimate_memory(sheet(weights="auto", inference=INF), odd)
