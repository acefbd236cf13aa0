"""vLLM's pool split against two public start-up logs.

Tolerance: 5 % on the logged KV figures. The logs round to 0.01 GiB, the vLLM version is not
stated, the CUDA context is a declared 500 MiB (the logs report 0.25–0.35 GiB non-torch), and the
profile-run activation is estimated, not traced; the verdicts (starts / refuses) are exact.
"""

import pytest

from gpusizer.catalog.cards import require_card
from gpusizer.memory.estimate import estimate_memory

from .conftest import facts_of, sheet

GiB = 2**30


def test_vllm10517_llama31_8b_rtx3090_20000_tokens_fits():
    # vllm-project/vllm#10517: gpu_memory_utilization 0.90, --max-model-len 20000; V0 without
    # chunked prefill profiles max(max_model_len, 2048) = 20000 batched tokens.
    s = sheet(inference={"engine": "vllm", "prompt_tokens": 19999, "new_tokens": 1,
                         "gpu_memory_utilization": 0.9, "max_num_batched_tokens": 20000})
    est = estimate_memory(s, facts_of("meta-llama/Llama-3.1-8B-Instruct"),
                          card=require_card("NVIDIA GeForce RTX 3090"))
    v = est.vllm
    print(f"10517: KV {v.kv_cache_bytes / GiB:.2f} GiB vs 3.81 logged; blocks {v.kv_blocks} vs "
          f"1952; concurrency {v.max_concurrency} vs 1.56")
    assert v.starts is True
    assert v.kv_cache_bytes / GiB == pytest.approx(3.81, rel=0.05)
    assert v.kv_blocks == pytest.approx(1952, rel=0.05)
    assert v.max_concurrency == pytest.approx(1.56, rel=0.05)
    # weights incl. the rotary cache: 16 060 522 496 + 131072 × 128 × 2 B = 14.99 GiB, as logged
    assert v.weights_bytes / GiB == pytest.approx(14.9888, abs=0.005)
    assert est.peak_bytes == v.budget_bytes


def test_vllm13061_r1_distill_qwen14b_2x4090_131072_tokens_refuses_to_start():
    # vllm-project/vllm#13061: TP 2, gpu_memory_utilization 0.98, max_model_len 131072; the log
    # shows 81 536 KV tokens (the smaller rank) < 131 072 and 8.69 GiB of KV cache on rank 0.
    s = sheet(inference={"engine": "vllm", "prompt_tokens": 131071, "new_tokens": 1,
                         "gpu_memory_utilization": 0.98, "max_num_batched_tokens": 2048},
              placement={"gpus": 2, "strategy": "tensor-parallel"})
    est = estimate_memory(s, facts_of("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B"),
                          card=require_card("RTX4090"))
    v = est.vllm
    print(f"13061: KV {v.kv_cache_bytes / GiB:.2f} GiB vs 8.69 logged; tokens {v.kv_tokens} "
          f"(log: 81536 on the smaller rank) < 131072")
    assert v.starts is False and v.kv_tokens < 131072
    assert v.kv_cache_bytes / GiB == pytest.approx(8.69, rel=0.05)
    # per-GPU block: 16 tokens × 48 layers × 2 × 4 KV heads × 128 × 2 B
    assert v.block_bytes == 16 * 48 * 2 * 4 * 128 * 2
