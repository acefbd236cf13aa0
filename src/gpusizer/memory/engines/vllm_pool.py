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

__all__ = ["rotary_cache_bytes", "profile_activation_bytes", "vllm_split"]


def rotary_cache_bytes(facts: ModelFacts, dtype_bytes: int) -> int:
    """vLLM's cos/sin cache: ``max_position_embeddings × rotary_dim × dtype`` bytes per GPU
    (rotary_dim = head_dim, or qk_rope_head_dim for MLA); 0 without RoPE (learned positions: gpt2;
    ALiBi: Falcon with alibi, whose vLLM model builds no rotary embedding)."""
    arch = facts.architecture
    if arch.positions != "rope" or arch.context_window_tokens is None:
        return 0
    rotary_dim = arch.mla.qk_rope_head_dim if arch.mla else arch.head_dim
    return arch.context_window_tokens * rotary_dim * dtype_bytes


def profile_activation_bytes(facts: ModelFacts, *, max_num_batched_tokens: int,
                             max_num_seqs: int, dtype_bytes: int, tp: int,
                             weights_format: str = "bf16") -> tuple[int, str]:
    """Torch activation peak of vLLM's profile run on one GPU, bytes, with the formula text.

    One forward of ``max_num_batched_tokens`` tokens through FlashAttention (no S × S matrix), then
    logits for ``min(max_num_seqs, tokens)`` sequences cast to fp32 with one fp32 probability copy.
    """
    arch = facts.architecture
    seqs = min(max_num_seqs, max_num_batched_tokens)
    wm = forward_working_bytes(facts, batch=1, q_tokens=max_num_batched_tokens,
                               kv_tokens=max_num_batched_tokens, dtype_bytes=dtype_bytes,
                               kernel="flash", logits_positions=0, logits_fp32_copies=0, tp=tp,
                               fused_moe=True, keeps_inputs_embeds=False,  # VllmEngine's
                               weights_format=weights_format)
    sampler = seqs * arch.vocab_size * (dtype_bytes + 4 + 4)
    tail = max_num_batched_tokens * 2 * arch.hidden_size * dtype_bytes + sampler
    total = max(wm.layer_bytes, tail)
    text = (f"max(layer working {wm.layer_bytes} B, final hidden + sampler {seqs} seqs × "
            f"{arch.vocab_size} × ({dtype_bytes}+4+4) B = {tail} B) for "
            f"{max_num_batched_tokens} batched tokens")
    return total, text


def vllm_split(*, total_bytes: int, total_source: str, utilization: float, weights_bytes: int,
               activation_bytes: int, non_torch_bytes: int | None, layout: KvLayout,
               block_size: int, tokens_per_sequence: int, sequences: int = 1) -> PoolSplit:
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
    tokens = blocks * block_size
    per_seq_full = -(-tokens_per_sequence // block_size) * block_size
    if layout.sliding_window is not None and layout.full_bytes_per_token:
        sliding_tokens_bytes = layout.tokens_bytes(tokens_per_sequence, round_to=block_size) - \
            per_seq_full * layout.full_bytes_per_token
        per_seq_bytes = per_seq_full * layout.full_bytes_per_token + sliding_tokens_bytes
        concurrency = kv / per_seq_bytes if per_seq_bytes else None
        starts = kv >= per_seq_bytes
        held = max(0, kv // per_seq_bytes) if per_seq_bytes else None
    else:
        concurrency = tokens / tokens_per_sequence
        starts = tokens >= tokens_per_sequence
        held = blocks // (per_seq_full // block_size)
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
                                                sequences=sequences, round_to=block_size))

