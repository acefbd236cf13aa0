"""Weights by format (R5, R7): dense volume and per-format metadata, arithmetic shown."""

import pytest

from gpusizer.errors import SheetError
from gpusizer.formats import QuantParams
from gpusizer.memory.weights import dense_bytes, weight_breakdown

from .conftest import facts_of

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
# Llama-3.1-8B decoder linears: attention 32 × (4096·4096·2 + 1024·4096·2) = 1 342 177 280,
# MLP 32 × 3 × 4096·14336 = 5 637 144 576; everything else (embeddings, lm_head, norms) is kept.
QUANT = 1_342_177_280 + 5_637_144_576
TOTAL = 8_030_261_248


@pytest.mark.parametrize("fmt,expected", [("fp32", 28_000_000_000), ("fp16", 14_000_000_000),
                                          ("int8", 7_000_000_000), ("int4", 3_500_000_000)])
def test_r7_dense_volume(fmt, expected):
    assert dense_bytes(7_000_000_000, fmt) == expected


def test_bf16_equals_the_published_safetensors_total():
    bd = weight_breakdown(facts_of(LLAMA), "bf16", compute_dtype="bf16")
    assert bd.total_bytes == 16_060_522_496  # truth.json safetensors_total_size_bytes


def test_nf4_block64_absmax_and_16bit_modules():
    bd = weight_breakdown(facts_of(LLAMA), "nf4", compute_dtype="bf16")
    assert bd.packed_bytes == QUANT // 2
    assert bd.kept_bytes == (TOTAL - QUANT) * 2
    assert bd.metadata_bytes == QUANT // 64 * 4  # one fp32 absmax per 64 values


def test_nf4_double_quant_8bit_absmax_plus_fp32_per_256_blocks():
    bd = weight_breakdown(facts_of(LLAMA), "nf4", compute_dtype="bf16",
                          quant=QuantParams(double_quant=True))
    blocks = QUANT // 64
    assert bd.metadata_bytes == blocks + -(-blocks // 256) * 4
    # QLoRA §3: ≈ 0.127 bit per parameter instead of 0.5
    assert bd.metadata_bytes * 8 / QUANT == pytest.approx(0.127, abs=0.001)


def test_int8_one_fp32_scale_per_output_row():
    bd = weight_breakdown(facts_of(LLAMA), "int8", compute_dtype="bf16")
    rows = 32 * (4096 + 1024 + 1024 + 4096) + 32 * (14336 + 14336 + 4096)
    assert bd.metadata_bytes == rows * 4 and bd.packed_bytes == QUANT


def test_gptq_group_scales_zeros_and_g_idx():
    bd = weight_breakdown(facts_of(LLAMA), "gptq-int4", compute_dtype="fp16",
                          quant=QuantParams(group_size=128))
    groups = QUANT // 128
    cols = 32 * (4096 * 4 + 4096 * 2 + 14336)  # in_features of q,k,v,o,gate,up,down
    assert bd.metadata_bytes == groups * 2 + groups // 8 * 4 + cols * 4
    awq = weight_breakdown(facts_of(LLAMA), "awq-int4", compute_dtype="fp16",
                           quant=QuantParams(group_size=128))
    assert awq.metadata_bytes == groups * 2 + groups // 8 * 4


def test_mxfp4_only_for_routed_experts():
    with pytest.raises(SheetError, match="routed-expert"):
        weight_breakdown(facts_of(LLAMA), "mxfp4", compute_dtype="bf16")
    f = facts_of("openai/gpt-oss-120b")
    bd = weight_breakdown(f, "mxfp4", compute_dtype="bf16")
    experts = f.architecture.parameters_by_role("expert_linear")
    assert bd.packed_bytes == experts // 2 and bd.metadata_bytes == experts // 32
    assert bd.kept_bytes == (f.architecture.total_parameters - experts) * 2


def test_fp8_block_scales_from_quantization_config():
    f = facts_of("deepseek-ai/DeepSeek-V3")
    assert f.stored_format == "fp8"
    bd = weight_breakdown(f, "fp8", compute_dtype="bf16")
    quant = f.architecture.parameters_by_role("linear", "expert_linear")
    assert bd.packed_bytes == quant
    # one fp32 scale_inv per 128×128 block of each matrix, ceil per dimension: a 576×7168
    # kv_a_proj_with_mqa has ceil(576/128) × 56 = 5 × 56 blocks, as the checkpoint stores it
    blocks = sum(n * -(-r // 128) * -(-c // 128) for g in f.architecture.params
                 if g.role in ("linear", "expert_linear") for n, r, c in g.shapes)
    assert bd.metadata_bytes == blocks * 4
    assert blocks > quant // (128 * 128)
