"""vLLM's memory pool on one GPU: budget, weights, profile-run activations, non-torch, KV blocks.

vLLM takes its whole pool at start (``Worker.determine_num_available_blocks`` in V0,
``Worker.determine_available_memory`` in V1)::

    kv_cache_bytes = total × gpu_memory_utilization − weights − activation_peak − non_torch
    kv_blocks      = floor(kv_cache_bytes / block_bytes)
    block_bytes    = block_size × Σ_layers (per-layer bytes per token)    (Kwon et al. 2023, §4.2)

``activation_peak`` is the torch peak of a profile forward of ``max_num_batched_tokens`` tokens
plus a sampler run over ``max_num_seqs`` sequences; weights include the rotary cos/sin cache
(``RotaryEmbedding._compute_cos_sin_cache``: ``max_position_embeddings × rotary_dim`` values in the
model dtype). vLLM refuses to start when ``kv_blocks × block_size`` is below one sequence of the
required length (``max_model_len``).
"""

from __future__ import annotations

import math

from ...model.facts import ModelFacts
from ..kv_cache import KvLayout, kv_bytes
from ..working_memory import forward_working_bytes
from .base import PoolSplit

__all__ = ["rotary_cache_bytes", "profile_activation_bytes", "vllm_split", "kv_cache_groups",
           "custom_all_reduce_bytes", "CUSTOM_ALL_REDUCE_SOURCE"]

# vLLM's custom all-reduce (distributed/device_communicators/custom_all_reduce.py, 0.4–0.11):
# CustomAllreduce(max_size=8192 * 1024) cudaMallocs (outside PyTorch's allocator) one IPC
# buffer of max_size and one of meta_size() + max_size per rank; the peers' buffers it maps
# are the peers' memory. meta_size() (a few KiB of signal flags) is left out.
_CUSTOM_AR_MAX_SIZE = 8192 * 1024
CUSTOM_ALL_REDUCE_SOURCE = ("vLLM custom_all_reduce.py CustomAllreduce: two cudaMalloc'ed IPC "
                            "buffers of max_size 8 MiB per rank (world size 2, 4, 6 or 8; "
                            "more than 2 GPUs need NVLink)")


def rotary_cache_bytes(facts: ModelFacts, dtype_bytes: int) -> int:
    """vLLM's cos/sin cache: ``max_position_embeddings × rotary_dim × dtype`` bytes per GPU
    (rotary_dim = head_dim, or qk_rope_head_dim for MLA); 0 without RoPE (learned positions: gpt2;
    ALiBi: Falcon with alibi, whose vLLM model builds no rotary embedding)."""
    arch = facts.architecture
    if arch.positions != "rope" or arch.context_window_tokens is None:
        return 0
    rotary_dim = arch.mla.qk_rope_head_dim if arch.mla else arch.head_dim
    return arch.context_window_tokens * rotary_dim * dtype_bytes


def custom_all_reduce_bytes(tp: int, *, nvlink: bool) -> int:
    """vLLM's own custom all-reduce buffers per GPU (:data:`CUSTOM_ALL_REDUCE_SOURCE`), bytes:
    ``2 × 8 MiB`` for world sizes 2, 4, 6, 8 (more than 2 only over NVLink), else 0 (vLLM
    falls back to NCCL, whose buffers are ``memory.nccl``'s)."""
    if tp not in (2, 4, 6, 8) or (tp > 2 and not nvlink):
        return 0
    return 2 * _CUSTOM_AR_MAX_SIZE


def kv_cache_groups(facts: ModelFacts) -> int:
    """KV-cache groups of vLLM V1's hybrid allocator (``kv_cache_utils``
    ``_get_kv_cache_groups_uniform_page_size``): layers of each attention kind are cut into
    groups of ``min(layers per kind)`` layers sharing one block table; 1 for one kind."""
    arch = facts.architecture
    sliding = arch.sliding_attention_layers if arch.sliding_window else 0
    if not sliding:
        return 1
    full = arch.full_attention_layers
    size = min(full, sliding)
    return -(-full // size) + -(-sliding // size)


def profile_activation_bytes(facts: ModelFacts, *, max_num_batched_tokens: int,
                             max_num_seqs: int, dtype_bytes: int, tp: int,
                             weights_format: str = "bf16",
                             sampler_bytes_per_logit: int = 0) -> tuple[int, str]:
    """Torch activation peak of vLLM's profile run on one GPU, bytes, with the formula text.

    One forward of ``max_num_batched_tokens`` tokens through FlashAttention (no S × S matrix), then
    the sampler over ``min(max_num_seqs, tokens)`` sequences: ``sampler_bytes_per_logit`` per
    logit (V1, ``versions.VllmRules``: every rank holds the whole vocabulary's logits), or, with
    0, V0's fp32 cast plus one fp32 probability copy (``dtype + 4 + 4`` bytes per logit).
    """
    arch = facts.architecture
    seqs = min(max_num_seqs, max_num_batched_tokens)
    wm = forward_working_bytes(facts, batch=1, q_tokens=max_num_batched_tokens,
                               kv_tokens=max_num_batched_tokens, dtype_bytes=dtype_bytes,
                               kernel="flash", logits_positions=0, logits_fp32_copies=0, tp=tp,
                               fused_moe=True, keeps_inputs_embeds=False,  # VllmEngine's
                               weights_format=weights_format)
    per_logit = sampler_bytes_per_logit or dtype_bytes + 4 + 4
    words = (f"{per_logit} B (V1 top-k/top-p sort)" if sampler_bytes_per_logit
             else f"({dtype_bytes}+4+4) B")
    sampler = seqs * arch.vocab_size * per_logit
    tail = max_num_batched_tokens * 2 * arch.hidden_size * dtype_bytes + sampler
    total = max(wm.layer_bytes, tail)
    text = (f"max(layer working {wm.layer_bytes} B, final hidden + sampler {seqs} seqs × "
            f"{arch.vocab_size} × {words} = {tail} B) for "
            f"{max_num_batched_tokens} batched tokens")
    return total, text


def vllm_split(*, total_bytes: int, total_source: str, utilization: float, weights_bytes: int,
               activation_bytes: int, non_torch_bytes: int | None, layout: KvLayout,
               block_size: int, tokens_per_sequence: int, sequences: int = 1,
               groups: int = 1, command: str = "",
               sliding_schedule_tokens: int | None = None) -> PoolSplit:
    """Split one GPU's vLLM pool.

    Args:
        total_bytes: device total as CUDA reports it (or nvidia-smi's when unknown).
        total_source: which total and where it came from.
        utilization: ``gpu_memory_utilization``.
        weights_bytes: weights per GPU incl. the rotary cache.
        activation_bytes: profile-run activation peak per GPU.
        non_torch_bytes: known non-torch memory per GPU (None: unknown → KV is an upper bound).
        layout: KV bytes per token on this GPU.
        block_size: tokens per block.
        tokens_per_sequence: ``max_model_len`` the workload needs (prompt + new tokens).
        sequences: sequences of that length this GPU must hold at once.
        groups: V1's KV-cache groups (:func:`kv_cache_groups`): the tokens vLLM logs are
            ``blocks // groups × block_size`` (``_report_kv_cache_config``).
        command: the engine's command line the split holds under.
        sliding_schedule_tokens: V1 only (``max_num_batched_tokens``): a sliding-window layer
            needs ``cdiv(min(window − 1 + this, max_model_len), block_size) + 1`` blocks per
            request (``kv_cache_interface.SlidingWindowSpec.max_memory_usage_bytes``); None: the
            window, in whole blocks (V0).

    Returns:
        A :class:`~gpusizer.memory.engines.base.PoolSplit` of engine ``vllm``.
    """
    budget = int(total_bytes * utilization)
    block_bytes = layout.tokens_bytes(block_size, round_to=block_size)
    if layout.sliding_window is not None:
        # Hybrid models: sliding layers hold at most window (+ one block) tokens per sequence; the
        # block pool is sized on the full-attention layers (vLLM V1 hybrid KV cache manager).
        block_bytes = block_size * (layout.full_bytes_per_token or layout.sliding_bytes_per_token)
    kv = budget - weights_bytes - activation_bytes - (non_torch_bytes or 0)
    blocks = max(0, kv // block_bytes) if block_bytes else 0
    tokens = blocks // groups * block_size
    per_seq_full = -(-tokens_per_sequence // block_size) * block_size
    if layout.sliding_window is not None and layout.full_bytes_per_token:
        sliding_tokens_bytes = layout.tokens_bytes(tokens_per_sequence, round_to=block_size) - \
            per_seq_full * layout.full_bytes_per_token
        if sliding_schedule_tokens is not None:
            need = min(layout.sliding_window - 1 + sliding_schedule_tokens, tokens_per_sequence)
            sliding_tokens_bytes = ((-(-need // block_size) + 1) * block_size
                                    * layout.sliding_bytes_per_token)
        per_seq_bytes = per_seq_full * layout.full_bytes_per_token + sliding_tokens_bytes
        concurrency = kv / per_seq_bytes if per_seq_bytes else None
        starts = kv >= per_seq_bytes
        held = max(0, kv // per_seq_bytes) if per_seq_bytes else None
    else:
        concurrency = tokens / tokens_per_sequence
        starts = tokens >= tokens_per_sequence
        held = blocks // (per_seq_full // block_size) if per_seq_full else None
    return PoolSplit(engine="vllm", total_bytes=total_bytes, total_source=total_source,
                     budget_bytes=budget,
                     weights_bytes=weights_bytes, activation_bytes=activation_bytes,
                     non_torch_bytes=non_torch_bytes, kv_cache_bytes=kv, block_bytes=block_bytes,
                     kv_blocks=blocks, kv_tokens=tokens,
                     # floored to 0.01 so 7.995 never reads as 8.0
                     max_concurrency=None if concurrency is None else
                     math.floor(max(0.0, concurrency) * 100) / 100,
                     starts=starts, sequences_held=held,
                     tokens_per_sequence=tokens_per_sequence, required_sequences=sequences,
                     required_kv_bytes=kv_bytes(layout, tokens=tokens_per_sequence,
                                                sequences=sequences, round_to=block_size),
                     command=command)

