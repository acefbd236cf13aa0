"""KV cache size: layers × 2 × kv_heads × head_dim × tokens × sequences × bytes, per GPU.

Sources:
- Standard and GQA/MQA attention: each layer caches K and V of shape
  ``[batch, num_key_value_heads, tokens, head_dim]`` (transformers ``cache_utils.DynamicLayer``;
  Ainslie et al. 2023, GQA). Explicit ``head_dim`` in config.json wins over hidden/heads.
- Sliding-window layers keep at most ``sliding_window`` tokens (transformers
  ``DynamicSlidingWindowLayer`` / ``StaticSlidingWindowLayer``; Beltagy et al. 2020), hybrid
  models list them in ``layer_types`` (Gemma-2/3, gpt-oss).
- MLA in transformers (``modeling_deepseek_v3.py``): the cache holds the up-projected per-head K
  (qk_nope + qk_rope) and V (v_head_dim) of every head. In vLLM (``MLAAttention``): only the latent
  ``kv_lora_rank + qk_rope_head_dim`` per token per layer, replicated on every tensor-parallel rank
  (DeepSeek-V2 paper §2.1.2).
- vLLM paged attention: tokens are held in blocks of ``block_size`` (default 16) tokens
  (Kwon et al. 2023, §4.2); KV heads are split across tensor-parallel ranks, and replicated when
  ranks > kv_heads (vLLM ``get_num_kv_heads``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.facts import ModelFacts

__all__ = ["KvLayout", "kv_layout", "kv_bytes", "kv_heads_per_rank", "prefill_kv_bytes"]


def kv_heads_per_rank(kv_heads: int, tp: int) -> int:
    """KV heads held per tensor-parallel rank: ``kv_heads / tp``, at least 1 (replicated when
    ``tp > kv_heads``; vLLM ``ModelConfig.get_num_kv_heads``)."""
    return max(1, kv_heads // tp)


@dataclass(frozen=True)
class KvLayout:
    """Per-token KV bytes of one GPU, split by layer kind.

    Attributes:
        full_bytes_per_token: bytes per token over all full-attention layers.
        sliding_bytes_per_token: bytes per token over all sliding-window layers.
        sliding_window: window of the sliding layers (tokens), or None.
        description: the formula in words with this model's numbers.
        full_layers: full-attention layers (``full_bytes_per_token`` is their sum; 0 when
            not given).
    """

    full_bytes_per_token: int
    sliding_bytes_per_token: int
    sliding_window: int | None
    description: str
    full_layers: int = 0

    def tokens_bytes(self, tokens: int, *, round_to: int = 1) -> int:
        """Bytes for one sequence holding ``tokens`` tokens (sliding layers capped at the window),
        with each layer group rounded up to whole blocks of ``round_to`` tokens."""
        def rnd(t: int) -> int:
            return -(-t // round_to) * round_to
        full = rnd(tokens) * self.full_bytes_per_token
        sliding_tokens = tokens if self.sliding_window is None else min(tokens, self.sliding_window)
        return full + rnd(sliding_tokens) * self.sliding_bytes_per_token


def prefill_kv_bytes(layout: KvLayout, *, tokens: int, sequences: int) -> int:
    """KV bytes held at the end of a transformers prefill of ``tokens`` prompt tokens.

    ``DynamicSlidingWindowLayer.update`` keeps ``full_states[:, :, -window + 1:]``, a view: the
    whole prompt's K and V stay allocated until the first decode step's ``torch.cat``
    (transformers ``cache_utils.py``), so sliding layers hold every prompt token here.
    """
    return sequences * tokens * (layout.full_bytes_per_token + layout.sliding_bytes_per_token)


def kv_layout(facts: ModelFacts, *, dtype_bytes: int, mla_latent: bool = False,
              tp: int = 1) -> KvLayout:
    """Bytes per cached token on one GPU.

    Args:
        facts: the model.
        dtype_bytes: bytes per cached value (2 for bf16/fp16, 1 for fp8).
        mla_latent: for MLA, cache only the latent per token (vLLM ``MLAAttention``) instead of
            the up-projected per-head K and V (transformers); the engine decides
            (``engines.Engine.kv_layout``).
        tp: tensor-parallel ranks the KV heads are split over (1 without tensor parallelism).

    Returns:
        A :class:`KvLayout`.
    """
    arch = facts.architecture
    if arch.mla is not None:
        m = arch.mla
        if mla_latent:
            per_layer = (m.kv_lora_rank + m.qk_rope_head_dim) * dtype_bytes
            desc = (f"MLA latent (kv_lora_rank {m.kv_lora_rank} + qk_rope_head_dim "
                    f"{m.qk_rope_head_dim}) × {dtype_bytes} B per layer per token, replicated on "
                    f"each of {tp} rank(s)")
        else:
            heads = max(1, arch.num_attention_heads // tp)
            per_layer = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) * dtype_bytes
            desc = (f"{heads} heads × (K {m.qk_nope_head_dim}+{m.qk_rope_head_dim} + V "
                    f"{m.v_head_dim}) × {dtype_bytes} B per layer per token (transformers caches "
                    "up-projected per-head K and V)")
    else:
        heads = kv_heads_per_rank(arch.num_key_value_heads, tp)
        per_layer = 2 * heads * arch.head_dim * dtype_bytes
        desc = (f"2 (K,V) × {heads} KV heads × head_dim {arch.head_dim} × {dtype_bytes} B per "
                "layer per token")
    full_layers = arch.full_attention_layers
    sliding_layers = arch.sliding_attention_layers if arch.sliding_window else 0
    if sliding_layers == 0:
        full_layers = arch.num_layers - arch.cacheless_layers
    desc += f"; {full_layers} full-attention layers"
    if sliding_layers:
        desc += f" + {sliding_layers} sliding-window layers capped at {arch.sliding_window} tokens"
    return KvLayout(per_layer * full_layers, per_layer * sliding_layers,
                    arch.sliding_window if sliding_layers else None, desc, full_layers)


def kv_bytes(layout: KvLayout, *, tokens: int, sequences: int, round_to: int = 1) -> int:
    """KV cache bytes for ``sequences`` sequences of ``tokens`` tokens each, on one GPU."""
    return sequences * layout.tokens_bytes(tokens, round_to=round_to)
