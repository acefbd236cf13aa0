"""KV cache = layers × 2 × kv_heads × head_dim × tokens × sequences × bytes (arithmetic shown)."""

from gpusizer.memory.engines import ENGINES
from gpusizer.memory.kv_cache import kv_bytes, kv_heads_per_rank, kv_layout

from .conftest import facts_of

GiB = 2**30


def test_llama31_8b_gqa_8k_by_8_sequences_is_8_gib():
    f = facts_of("meta-llama/Meta-Llama-3.1-8B")
    lay = kv_layout(f, dtype_bytes=2)
    assert lay.full_bytes_per_token == 32 * 2 * 8 * 128 * 2 == 131072
    assert kv_bytes(lay, tokens=8192, sequences=8) == 8192 * 8 * 131072 == 8 * GiB


def test_qwen25_14b_32k_is_6_gib():
    f = facts_of("Qwen/Qwen2.5-14B")
    lay = kv_layout(f, dtype_bytes=2)
    # use_sliding_window false: every layer is full attention
    assert lay.sliding_bytes_per_token == 0
    assert kv_bytes(lay, tokens=32768, sequences=1) == 48 * 2 * 8 * 128 * 2 * 32768 == 6 * GiB


def test_fp8_cache_halves_it():
    f = facts_of("meta-llama/Meta-Llama-3.1-8B")
    assert kv_layout(f, dtype_bytes=1).full_bytes_per_token == 65536


def test_gemma2_sliding_layers_capped_at_window():
    f = facts_of("google/gemma-2-9b")
    arch = f.architecture
    assert (arch.full_attention_layers, arch.sliding_attention_layers, arch.sliding_window) == \
        (21, 21, 4096)
    lay = kv_layout(f, dtype_bytes=2)
    per_layer = 2 * f.architecture.num_key_value_heads * f.architecture.head_dim * 2
    assert per_layer == 2 * 8 * 256 * 2
    got = kv_bytes(lay, tokens=8192, sequences=1)
    assert got == 21 * per_layer * 8192 + 21 * per_layer * 4096
    # below the window, sliding layers hold every token
    assert kv_bytes(lay, tokens=1000, sequences=2) == 2 * 42 * per_layer * 1000


def test_deepseek_v3_mla_vllm_latent_vs_transformers_per_head():
    f = facts_of("deepseek-ai/DeepSeek-V3")
    # vLLM caches the latent: (kv_lora_rank 512 + qk_rope_head_dim 64) × 2 B per layer, 61 layers
    assert ENGINES["vllm"].kv_layout(f, dtype_bytes=2, tp=8).full_bytes_per_token == 61 * 576 * 2
    # transformers caches per-head K (128 + 64) and V (128) for 128 heads
    assert kv_layout(f, dtype_bytes=2).full_bytes_per_token == 61 * 128 * (128 + 64 + 128) * 2


def test_kv_heads_split_then_replicated_across_tp_ranks():
    assert kv_heads_per_rank(8, 2) == 4
    assert kv_heads_per_rank(8, 8) == 1
    assert kv_heads_per_rank(8, 16) == 1  # replicated when ranks > kv heads
    f = facts_of("meta-llama/Meta-Llama-3.1-8B")
    assert ENGINES["vllm"].kv_layout(f, dtype_bytes=2, tp=2).full_bytes_per_token == 131072 // 2


def test_vllm_block_rounding():
    f = facts_of("meta-llama/Meta-Llama-3.1-8B")
    lay = ENGINES["vllm"].kv_layout(f, dtype_bytes=2, tp=1)
    # 20000 tokens round up to 1250 blocks of 16 exactly; 20001 needs one more block
    assert kv_bytes(lay, tokens=20000, sequences=1, round_to=16) == 20000 * 131072
    assert kv_bytes(lay, tokens=20001, sequences=1, round_to=16) == 20016 * 131072
