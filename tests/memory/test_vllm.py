"""vLLM's pool split against two public start-up logs, through the CLI and the bundled sheets.

Tolerance: 5 % on the logged KV figures. The logs round to 0.01 GiB, the vLLM version is not
stated, the CUDA context is a declared 500 MiB (the logs report 0.25–0.35 GiB non-torch), and the
profile-run activation is estimated, not traced; the verdicts (starts / refuses) are exact.
"""

import pytest

from ..conftest import cli_json

GiB = 2**30


def test_vllm10517_llama31_8b_rtx3090_20000_tokens_fits():
    doc = cli_json("estimate", "examples/validation/vllm10517-llama31-8b-rtx3090.yaml",
                   "--card", "NVIDIA GeForce RTX 3090")
    v = doc["memory"]["vllm"]
    print(f"10517: KV {v['kv_cache_bytes'] / GiB:.2f} GiB vs 3.81 logged; blocks {v['kv_blocks']} "
          f"vs 1952; concurrency {v['max_concurrency']} vs 1.56")
    assert v["starts"] is True
    assert v["kv_cache_bytes"] / GiB == pytest.approx(3.81, rel=0.05)
    assert v["kv_blocks"] == pytest.approx(1952, rel=0.05)
    assert v["kv_tokens"] == 16 * v["kv_blocks"]
    assert v["max_concurrency"] == pytest.approx(1.56, rel=0.05)
    assert v["sequences_held"] == 1  # one whole 20000-token sequence at once (1.57 rounds down)
    # weights incl. the rotary cache: 16 060 522 496 + 131072 × 128 × 2 B = 14.99 GiB, as logged
    assert v["weights_bytes"] / GiB == pytest.approx(14.9888, abs=0.005)
    assert doc["memory"]["peak_bytes"] == v["budget_bytes"]
    assert doc["fit"]["state"] == "to_confirm"


def test_vllm13061_r1_distill_qwen14b_2x4090_131072_tokens_refuses_to_start():
    doc = cli_json("estimate", "examples/validation/vllm13061-r1-distill-qwen14b-2x4090.yaml",
                   "--card", "RTX4090")
    v = doc["memory"]["vllm"]
    print(f"13061: KV {v['kv_cache_bytes'] / GiB:.2f} GiB vs 8.69 logged; tokens {v['kv_tokens']} "
          "(log: 81536 on the smaller rank) < 131072")
    assert v["starts"] is False and v["kv_tokens"] < 131072
    assert v["kv_cache_bytes"] / GiB == pytest.approx(8.69, rel=0.05)
    # per-GPU block: 16 tokens × 48 layers × 2 × 4 KV heads × 128 × 2 B
    assert v["block_bytes"] == 16 * 48 * 2 * 4 * 128 * 2
    assert doc["fit"]["state"] == "exclude" and "refuses to start" in doc["fit"]["reason"]


# the keys of the ``vllm`` block before the engines registry (CONTRACT.md + contract-extensions)
VLLM_BLOCK_KEYS = {"budget_bytes", "kv_cache_bytes", "kv_tokens", "max_concurrency", "total_bytes",
                   "total_source", "weights_bytes", "activation_bytes", "non_torch_bytes",
                   "block_bytes", "kv_blocks", "starts", "sequences_held"}


def _same_content(pool: dict, alias: dict) -> None:
    assert pool["engine"] == "vllm"
    assert set(pool) >= set(alias) >= VLLM_BLOCK_KEYS
    assert {k: pool[k] for k in alias} == alias


def test_memory_pool_is_the_vllm_block_under_its_generic_name():
    doc = cli_json("estimate", "examples/validation/vllm10517-llama31-8b-rtx3090.yaml",
                   "--card", "NVIDIA GeForce RTX 3090")
    pool = doc["memory"]["pool"]
    _same_content(pool, doc["memory"]["vllm"])
    # one sequence of 20000 tokens in blocks of 16: 1250 blocks × 16 × 131072 B per token
    assert pool["required_sequences"] == 1 and pool["tokens_per_sequence"] == 20000
    assert pool["required_kv_bytes"] == 20000 * 131072


def test_offers_pool_is_the_vllm_block_and_null_for_transformers():
    doc = cli_json("plan", "examples/validation/vllm10517-llama31-8b-rtx3090.yaml")
    assert doc["memory"]["pool"] is None and doc["memory"]["vllm"] is None  # no card: no pool
    known = [o for o in doc["offers"] if o["canonical_card"]]
    assert known
    for o in known:
        _same_content(o["pool"], o["vllm"])
    tr = cli_json("estimate", "examples/llama-3.1-8b-serving.yaml", "--card", "H100 SXM")
    assert tr["memory"]["pool"] is None and tr["memory"]["vllm"] is None


def test_rotary_cache_only_for_rotary_positions():
    from dataclasses import replace

    from gpusizer.memory.engines.vllm_pool import rotary_cache_bytes

    from .conftest import facts_of
    # Llama-3.1-8B: max_position_embeddings 131072 × head_dim 128 × 2 B (cos and sin halves)
    assert rotary_cache_bytes(facts_of("meta-llama/Meta-Llama-3.1-8B"), 2) == 131072 * 128 * 2
    assert rotary_cache_bytes(facts_of("openai-community/gpt2"), 2) == 0   # learned wpe
    falcon = facts_of("tiiuae/falcon-7b-instruct")   # states no max_position_embeddings

    def with_positions(kind):
        return replace(falcon, architecture=replace(falcon.architecture, positions=kind,
                                                    context_window_tokens=2048))
    assert rotary_cache_bytes(with_positions("rope"), 2) == 2048 * 64 * 2
    assert rotary_cache_bytes(with_positions("alibi"), 2) == 0   # vLLM Falcon: no get_rope
