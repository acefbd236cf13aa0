"""Qwen3-Next (``model_type: qwen3_next``; Qwen/Qwen3-Next-80B-A3B-Instruct and -Thinking).

Source: transformers 5.24 ``models/qwen3_next/modeling_qwen3_next.py`` and
``configuration_qwen3_next.py``:

- ``layer_types``: ``linear_attention`` (a gated delta-net, module ``linear_attn``: see
  ``state_space.gated_delta_net``) or ``full_attention``; absent, every
  ``full_attention_interval``-th layer (4) is full;
- ``Qwen3NextAttention``: a gated query (``q_proj`` hidden → 2 × heads × head_dim: query and
  its output gate), k/v (kv_heads × head_dim), ``o_proj``, bias = ``attention_bias`` (false),
  q/k RMSNorms of head_dim, partial RoPE (no parameter);
- ``Qwen3NextSparseMoeBlock`` on layers not in ``mlp_only_layers`` with ``(i + 1) %
  decoder_sparse_step == 0``: router ``gate`` (E × hidden), experts stacked by transformers v5
  from the checkpoint's per-expert ``gate_proj`` / ``up_proj`` / ``down_proj``
  (``moe_intermediate_size``), a ``shared_expert`` gated MLP of
  ``shared_expert_intermediate_size`` and its ``shared_expert_gate`` (hidden → 1); other layers
  a gated MLP of ``intermediate_size``;
- two RMSNorms per layer, a final ``norm``; ``lm_head`` untied by default.

The checkpoint's multi-token-prediction layer (``mtp.*``) is not loaded by
``Qwen3NextForCausalLM``. PEFT 0.21 has no default LoRA targets for qwen3_next.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .decoder import Experts, Linear, gqa_attention, mlp
from .layer_pattern import listed_mixers
from .llama_like import read_dims
from .state_space import HybridSpec, describe_hybrid, gated_delta_net

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({
    "partial_rotary_factor",                          # rotary width, no parameter
    "norm_topk_prob", "router_aux_loss_coef", "output_router_logits",   # routing and its loss
})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layer kinds and parameter groups of a Qwen3-Next config (see module docstring).

    Raises:
        ModelError: a required key is missing, or ``layer_types`` disagrees with the layers.
    """
    d = read_dims(cfg, head_dim_default=256)
    hidden, layers = d.hidden_size, d.num_layers
    mixers = listed_mixers(cfg, layers, names={"full_attention": "attention",
                                               "linear_attention": "mixer"},
                           interval_key="full_attention_interval")
    experts = cfg.optional_int("num_experts", 512, minimum=0)
    step = cfg.optional_int("decoder_sparse_step", 1)
    dense_only = set(cfg.int_list("mlp_only_layers"))
    ffn = tuple("moe" if i not in dense_only and experts > 0 and (i + 1) % step == 0
                else "dense" for i in range(layers))
    mixer = gated_delta_net(hidden, key_heads=cfg.optional_int("linear_num_key_heads", 16),
                            value_heads=cfg.optional_int("linear_num_value_heads", 32),
                            key_dim=cfg.optional_int("linear_key_head_dim", 128),
                            value_dim=cfg.optional_int("linear_value_head_dim", 128),
                            conv_kernel=cfg.optional_int("linear_conv_kernel_dim", 4))
    bias = cfg.flag("attention_bias", False)
    q, kv = d.num_heads * d.head_dim, d.num_kv_heads * d.head_dim
    attention = (Linear(2 * q, hidden, bias, "q_proj", role="attention_in"),
                 Linear(kv, hidden, bias, "k_proj", role="attention_in"),
                 Linear(kv, hidden, bias, "v_proj", role="attention_in"),
                 Linear(hidden, q, bias, "o_proj", role="attention_out"))
    inter = cfg.require_int("intermediate_size")
    moe = Experts(max(experts, 1), mlp(hidden, cfg.optional_int("moe_intermediate_size", 512),
                                       gated=True),
                  Linear(max(experts, 1), hidden, False, "gate", role="router"),
                  shared=mlp(hidden, cfg.optional_int("shared_expert_intermediate_size", 512),
                             gated=True))
    spec = HybridSpec(
        hidden_size=hidden, vocab_size=d.vocab_size, mixers=mixers, ffn=ffn,
        attention=attention, attention_norm_elements=2 * d.head_dim, mixer=mixer,
        final_norm_elements=hidden, tie_word_embeddings=cfg.flag("tie_word_embeddings", False),
        layer_norm_elements=2 * hidden, dense_mlp=mlp(hidden, inter, gated=True), experts=moe,
        mixer_prefix="linear_attn", shared_gate=True,
        experts_per_token=min(max(experts, 1), cfg.optional_int("num_experts_per_tok", 10)))
    return describe_hybrid(spec, num_attention_heads=d.num_heads,
                           num_key_value_heads=d.num_kv_heads, head_dim=d.head_dim,
                           intermediate_size=inter,
                           context_window_tokens=cfg.optional_nullable_int(
                               "max_position_embeddings", None),
                           peft_default_targets=None,
                           notes=("the checkpoint's MTP layer is not loaded by transformers",))
