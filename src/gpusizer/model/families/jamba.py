"""Jamba (``model_type: jamba``; ai21labs/AI21-Jamba-Mini-1.5, AI21-Jamba-Large-1.5).

Source: transformers 5.24 ``models/jamba/modeling_jamba.py`` and ``configuration_jamba.py``:

- layer ``i`` is attention when ``i % attn_layer_period == attn_layer_offset`` (8, 4), else a
  Mamba-1 mixer (``JambaMambaMixer``, module ``mamba``: see ``state_space.mamba1_mixer``, with
  its dt / B / C RMSNorms; I = ``mamba_expand`` × hidden, ``mamba_dt_rank`` "auto" =
  ⌈hidden / 16⌉);
- ``JambaAttention``: q/k/v/o without bias, GQA, head_dim = hidden / heads, no RoPE;
- ``feed_forward``: a MoE block (``router`` E × hidden, no bias; experts stacked by transformers
  v5 from the checkpoint's per-expert ``gate_proj`` / ``up_proj`` / ``down_proj``) on layers
  ``i % expert_layer_period == expert_layer_offset`` (2, 1) when ``num_experts`` > 1, else a
  gated MLP (``JambaMLP``) of ``intermediate_size``;
- two RMSNorms per layer (``input_layernorm``, ``pre_ff_layernorm``), ``final_layernorm``;
  ``lm_head`` untied by default.

The cache: the attention layers' K and V; the Mamba layers' conv and SSM states per sequence.
PEFT 0.21 has no default LoRA targets for jamba.
"""

from __future__ import annotations

import math

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .decoder import Experts, Linear, gqa_attention, mlp
from .layer_pattern import attention_every
from .llama_like import read_dims
from .state_space import HybridSpec, describe_hybrid, mamba1_mixer

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({
    "use_mamba_kernels", "use_mambapy", "use_associative_scan",   # which scan runs
    "router_aux_loss_coef", "output_router_logits",               # the loss only
})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``):
which scan implementation runs (the state it keeps is the same) and the router's loss."""


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layer kinds and parameter groups of a Jamba config (see module docstring).

    Raises:
        ModelError: a required key is missing, hidden_size is not a multiple of the heads, or an
            offset is not below its period.
    """
    d = read_dims(cfg)
    hidden, layers = d.hidden_size, d.num_layers
    mixers = attention_every(cfg, layers, period_key="attn_layer_period",
                             offset_key="attn_layer_offset", period=8, offset=4)
    experts = cfg.optional_int("num_experts", 16)
    period = cfg.optional_int("expert_layer_period", 2)
    offset = cfg.optional_int("expert_layer_offset", 1, minimum=0)
    if offset >= period:
        raise cfg.error("expert_layer_offset", f"must be below expert_layer_period ({period})",
                        offset)
    ffn = tuple("moe" if experts > 1 and i % period == offset else "dense"
                for i in range(layers))
    inter = cfg.require_int("intermediate_size")
    mixer = mamba1_mixer(hidden, inner=cfg.optional_int("mamba_expand", 2) * hidden,
                         d_state=cfg.optional_int("mamba_d_state", 16),
                         dt_rank=cfg.optional_int_or_auto("mamba_dt_rank",
                                                          math.ceil(hidden / 16)),
                         conv_kernel=cfg.optional_int("mamba_d_conv", 4),
                         bias=cfg.flag("mamba_proj_bias", False),
                         conv_bias=cfg.flag("mamba_conv_bias", True), bc_norms=True)
    moe = Experts(experts, mlp(hidden, inter, gated=True),
                  Linear(experts, hidden, False, "router", role="router"))
    spec = HybridSpec(
        hidden_size=hidden, vocab_size=d.vocab_size, mixers=mixers, ffn=ffn,
        attention=gqa_attention(hidden, d.num_heads, d.num_kv_heads, d.head_dim, qkv_bias=False,
                                o_bias=False),
        mixer=mixer, final_norm_elements=hidden,
        tie_word_embeddings=cfg.flag("tie_word_embeddings", False),
        layer_norm_elements=2 * hidden, dense_mlp=mlp(hidden, inter, gated=True),
        experts=moe, mixer_prefix="mamba", mlp_prefix="feed_forward",
        experts_per_token=min(experts, cfg.optional_int("num_experts_per_tok", 2)),
        peft_converts_experts=False)
    return describe_hybrid(spec, num_attention_heads=d.num_heads,
                           num_key_value_heads=d.num_kv_heads, head_dim=d.head_dim,
                           intermediate_size=inter,
                           context_window_tokens=cfg.optional_nullable_int(
                               "max_position_embeddings", None),
                           peft_default_targets=None, positions="none")
