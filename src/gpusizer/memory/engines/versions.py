"""The serving engines' rules that changed between releases, in one table per engine.

A sheet's ``stack.vllm`` picks the row of :data:`VLLM_RULES` whose ``since`` is the latest not
after it; ``auto`` is :data:`VLLM_AUTO`, the release the rules were checked against (the llm-d
benchmark's vLLM 0.11.0 start-up logs). ``stack.sglang`` picks SGLang's defaults the same way
(:func:`sglang_defaults`; ``auto`` is :data:`SGLANG_AUTO`). These tables can move into the stack
registry as they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...units import GiB

__all__ = ["VllmRules", "VLLM_RULES", "VLLM_AUTO", "VLLM_KV_CACHE_DTYPES", "vllm_rules",
           "batched_tokens",
           "version_tuple", "SGLANG_AUTO", "SglangDefaults", "sglang_defaults"]

VLLM_AUTO = "0.11.0"
"""The vLLM release ``stack.vllm: auto`` stands for."""


def version_tuple(version: str) -> tuple[int, ...]:
    """``"0.6.3.post1"`` → ``(0, 6, 3)``: the release numbers, suffixes dropped."""
    return tuple(int(p) for p in re.findall(r"\d+", version.split("rc")[0].split(".post")[0])
                 [:3])


@dataclass(frozen=True)
class VllmRules:
    """What one range of vLLM releases does when it sizes its pool.

    Attributes:
        since: the first release these rules apply to.
        engine_core: "V0" (``Worker.determine_num_available_blocks``) or "V1"
            (``gpu_worker.Worker.determine_available_memory``).
        sampler_bytes_per_logit: bytes the profile run's sampler holds per (sequence × vocab)
            logit at its peak (0: the V0 rule of ``vllm_pool.profile_activation_bytes``).
        non_torch_after_baseline_bytes: non-PyTorch memory that appears after vLLM's memory
            baseline on one GPU (the CUDA context is before it, outside the budget); None: the
            whole declared CUDA context is subtracted (V0's accounting, as gpusizer did).
        hybrid_groups: the KV tokens logged are blocks // KV-cache groups × block size (V1's
            hybrid allocator, ``kv_cache_utils._report_kv_cache_config``).
        source: where these rules come from.
    """

    since: str
    engine_core: str
    sampler_bytes_per_logit: int
    non_torch_after_baseline_bytes: int | None
    hybrid_groups: bool
    source: str


# V1's dummy sampler run (gpu_model_runner._dummy_sampler_run, vLLM 0.8–0.11) samples
# min(max_num_seqs, max_num_batched_tokens) rows of logits with top-k and top-p set, so
# topk_topp_sampler.apply_top_k_top_p sorts the fp32 logits. Per logit at that sort:
#   2 (compute_logits output, bf16) + 4 (the fp32 copy, Sampler.forward)
#   + 4 + 8 (sorted values fp32, sorted indices int64: torch.sort's outputs)
#   + 8 + 4 + 8 (torch.sort on CUDA: the int64 iota it sorts along, and the radix sort's
#   double buffers of keys and values, aten/src/ATen/native/cuda/Sort.cpp) = 38 B.
# Checked against the llm-d benchmark's logged activation peaks (vLLM 0.11.0, 1024 sequences):
# Qwen3-0.6B 5.56 GiB / (1024 × 151936) = 38.4 B, Llama-3.1-8B 4.76 GiB / (1024 × 128256) =
# 38.9 B, Qwen3-32B 5.64 GiB = 38.9 B, gpt-oss-120b 7.38 GiB / (1024 × 201088) = 38.5 B.
_V1_SAMPLER_BYTES = 2 + 4 + 4 + 8 + 8 + 4 + 8

# Declared from logs, not derived: vLLM V1 takes its baseline after the CUDA context, so the
# non-PyTorch memory inside its budget is what appears later on one GPU (lazily loaded kernel
# images, cuBLASLt/cuDNN handles): 0.13 GiB on H100 for Qwen3-0.6B, Llama-3.1-8B and
# gpt-oss-120b, 0.14 GiB for Qwen3-32B (llm-d-benchmark empirical-vllm-memory-results.md @
# 4f4d4494, vLLM 0.11.0). 0.13 GiB as vLLM rounds it (GiB, 2 decimals).
_V1_NON_TORCH = int(0.13 * GiB)

VLLM_RULES: tuple[VllmRules, ...] = (
    VllmRules("0.0.0", "V0", 0, None, False,
              "vLLM V0 worker.py determine_num_available_blocks (0.6.4 logs: "
              "vllm-project/vllm#10517, #13061)"),
    VllmRules("0.8.0", "V1", _V1_SAMPLER_BYTES, _V1_NON_TORCH, True,
              "vLLM V1 (the default engine from 0.8.0): v1/worker/gpu_worker.py "
              "determine_available_memory, gpu_model_runner.py profile_run / "
              "_dummy_sampler_run, v1/core/kv_cache_utils.py _report_kv_cache_config"),
)
"""vLLM's pool rules by release, oldest first."""


VLLM_KV_CACHE_DTYPES: dict[str, str] = {"fp8": "0.4.2", "fp8_e4m3": "0.5.3", "fp8_e5m2": "0.5.3"}
"""``--kv-cache-dtype`` value → the first vLLM release whose engine-arguments page lists it
(docs.vllm.ai v0.4.2 models/engine_args: ``{auto,fp8}``; v0.5.3: ``{auto,fp8,fp8_e5m2,fp8_e4m3}``;
E5M2 itself came with vllm-project/vllm#2279)."""


def batched_tokens(inference, version: str) -> tuple[int, str]:
    """The ``max_num_batched_tokens`` vLLM runs with, and why: the sheet's when set; else the
    release's default. V1 (>= 0.8): 8192 (the sheet's default). V0 (< 0.8): chunked prefill is
    on by default only above 32 768 tokens of context (``EngineArgs.create_engine_config``,
    vLLM 0.6.x: ``use_long_context``), with 512 tokens per step; otherwise
    ``SchedulerConfig`` takes max(max_model_len, 2048) (vllm/config.py 0.6.x,
    ``_DEFAULT_MAX_NUM_BATCHED_TOKENS``), so the profile run is the whole context."""
    if "max_num_batched_tokens" in inference.model_fields_set or \
            vllm_rules(version).engine_core != "V0":
        return inference.max_num_batched_tokens, "the sheet's max_num_batched_tokens"
    context = inference.tokens_per_sequence
    if context > 32768:
        return 512, "vLLM V0's default with chunked prefill (on above 32768 tokens): 512"
    return max(context, 2048), (f"vLLM V0's default without chunked prefill: max(max_model_len "
                                f"{context}, 2048)")


def vllm_rules(version: str) -> VllmRules:
    """The rules of ``stack.vllm`` (``auto``: :data:`VLLM_AUTO`)."""
    v = version_tuple(VLLM_AUTO if version == "auto" else version)
    return [r for r in VLLM_RULES if version_tuple(r.since) <= v][-1]


SGLANG_AUTO = "0.4.1"
"""The SGLang release ``stack.sglang: auto`` stands for: the release of the start-up logs the
rules were checked against (docs.sglang.ai "Quick Start: Sending Requests", 2025-01-23)."""


@dataclass(frozen=True)
class SglangDefaults:
    """SGLang's defaults for one card and TP size (``ServerArgs`` after its ``__post_init__``).

    Attributes:
        mem_fraction_static: share of the free memory at start kept for weights and KV pool.
        chunked_prefill_size: prompt tokens one prefill step takes.
        cuda_graph_max_bs: largest batch captured in a CUDA graph (0: not modelled).
        rule: which release's rule made them, with its source.
    """

    mem_fraction_static: float
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    rule: str


def _sglang_04(gpu_mib: int, tp: int) -> SglangDefaults:
    """SGLang 0.4.x ``ServerArgs.__post_init__``: mem_fraction_static by TP size (0.88 on one
    GPU, 0.87 from 2, 0.85 from 4, 0.81 from 8, 0.79 from 16), chunked_prefill_size 2048 below
    25 000 MB of GPU memory, else 8192."""
    mfs = 0.79 if tp >= 16 else 0.81 if tp >= 8 else 0.85 if tp >= 4 else 0.87 if tp >= 2 \
        else 0.88
    return SglangDefaults(mfs, 2048 if gpu_mib < 25_000 else 8192, 0,
                          "SGLang 0.4.x server_args.py __post_init__ (mem_fraction_static by "
                          "tp_size; chunked_prefill_size by GPU memory)")


# SGLang's memory buckets (GPU memory in MiB as nvidia-smi reports it, upper bound exclusive) →
# chunked_prefill_size and cuda_graph_max_bs for tp < 4 / tp >= 4 (server_args.py
# _handle_gpu_memory_settings, PR sgl-project/sglang#10975; snapshot 469c63e5).
_SGLANG_05_BUCKETS = ((20 * 1024, 2048, 8, 8), (35 * 1024, 2048, 24, 80),
                      (60 * 1024, 4096, 32, 160), (90 * 1024, 8192, 256, 512),
                      (160 * 1024, 8192, 256, 512), (None, 16384, 512, 512))


def _sglang_05(gpu_mib: int, tp: int) -> SglangDefaults:
    """SGLang >= 0.5.4 ``_handle_gpu_memory_settings``: ``mem_fraction_static = round((gpu −
    reserved) / gpu, 3)`` in MiB, ``reserved = 512 + max(chunked_prefill_size, 2048) × 1.5 +
    cuda_graph_max_bs × 2 + tp / 8 × 1024``, at least 10 GiB above 60 GiB of GPU memory
    (no DP attention, no speculative decoding, no piecewise CUDA graphs)."""
    for limit, chunk, bs_small, bs_large in _SGLANG_05_BUCKETS:
        if limit is None or gpu_mib < limit:
            break
    bs = bs_small if tp < 4 else bs_large
    reserved = 512 + max(chunk, 2048) * 1.5 + bs * 2 + tp / 8 * 1024
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return SglangDefaults(round((gpu_mib - reserved) / gpu_mib, 3), chunk, bs,
                          "SGLang >= 0.5.4 server_args.py _handle_gpu_memory_settings "
                          "(sgl-project/sglang#10975)")


_SGLANG_RULES = (("0.0.0", _sglang_04), ("0.5.4", _sglang_05))


def sglang_defaults(version: str, *, gpu_mib: int, tp: int) -> SglangDefaults:
    """SGLang's defaults under ``stack.sglang`` (``auto``: :data:`SGLANG_AUTO`) for a card of
    ``gpu_mib`` MiB (nvidia-smi total) and ``tp`` tensor-parallel ranks."""
    v = version_tuple(SGLANG_AUTO if version == "auto" else version)
    rule = [r for since, r in _SGLANG_RULES if version_tuple(since) <= v][-1]
    return rule(gpu_mib, tp)
