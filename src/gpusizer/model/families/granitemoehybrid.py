"""Granite 4.0 hybrid (``model_type: granitemoehybrid``; ibm-granite/granite-4.0-h-tiny,
-h-small, -h-micro).

Source: transformers 5.24 ``models/granitemoehybrid/modeling_granitemoehybrid.py`` and
``configuration_granitemoehybrid.py``:

- ``layer_types`` (``layers_block_type``; legacy ``mamba`` / ``attention``): a Mamba-2 mixer
  (``mamba``: I = ``mamba_expand`` × hidden, ``mamba_n_heads``, ``mamba_d_head`` "auto" = I /
  heads, ``mamba_n_groups``, ``mamba_d_state``, ``mamba_d_conv``; ``in_proj`` and ``out_proj``
  bias ``mamba_proj_bias``; gated RMSNorm) or attention (``self_attn``: q/k/v/o, bias
  ``attention_bias``, GQA, head_dim = hidden / heads; RoPE only when ``position_embedding_type``
  is ``"rope"``); absent, every layer is Mamba;
- with ``num_local_experts`` > 0 a MoE block (``block_sparse_moe``: a ``router`` weight E ×
  hidden that is not an ``nn.Linear``; experts stored stacked, ``gate_up_proj`` E × 2I × hidden
  and ``down_proj``, I = ``intermediate_size``) beside a ``shared_mlp`` (``input_linear`` hidden
  → 2 × ``shared_intermediate_size``, ``output_linear`` back); without experts the shared MLP
  alone;
- ``input_layernorm`` and ``post_attention_layernorm`` per layer, a final ``norm``; ``lm_head``
  untied by default.

PEFT 0.21 has no default LoRA targets for granitemoehybrid and no mapping onto its stacked
experts.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .decoder import Experts, Linear, gqa_attention, mlp
from .layer_pattern import listed_mixers
from .llama_like import read_dims
from .state_space import HybridSpec, describe_hybrid, mamba2_mixer, mamba_heads

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({
    "embedding_multiplier", "logits_scaling", "residual_multiplier", "attention_multiplier",
    "router_aux_loss_coef", "output_router_logits", "time_step_limit",
})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``):
µP scalars, the router's loss."""

_KINDS = {"mamba": "mixer", "linear_attention": "mixer", "attention": "attention",
          "full_attention": "attention"}


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layer kinds and parameter groups of a Granite 4.0 hybrid config.

    Raises:
        ModelError: a required key is missing, or the Mamba heads do not divide its width.
    """
    d = read_dims(cfg)
    hidden, layers = d.hidden_size, d.num_layers
    key = "layers_block_type" if cfg.has("layers_block_type") else "layer_types"
    mixers = (listed_mixers(cfg, layers, names=_KINDS, key=key) if cfg.has(key)
              else ("mixer",) * layers)
    inner = cfg.optional_int("mamba_expand", 2) * hidden
    heads, head_dim = mamba_heads(cfg, inner)
    mixer = mamba2_mixer(hidden, heads=heads, head_dim=head_dim,
                         groups=cfg.optional_int("mamba_n_groups", 1),
                         d_state=cfg.optional_int("mamba_d_state", 256),
                         conv_kernel=cfg.optional_int("mamba_d_conv", 4),
                         bias=cfg.flag("mamba_proj_bias", False),
                         conv_bias=cfg.flag("mamba_conv_bias", True),
                         chunk=cfg.optional_int("mamba_chunk_size", 256))
    experts = cfg.optional_int("num_local_experts", 8, minimum=0)
    inter = cfg.require_int("intermediate_size")
    shared = mlp(hidden, cfg.optional_int("shared_intermediate_size", 1024), gated=True,
                 fused_gate_up=True, names=("input_linear", "output_linear"))
    moe = (Experts(experts, mlp(hidden, inter, gated=True),
                   Linear(experts, hidden, False, "router", role="router"), shared=shared,
                   stacked=True) if experts else None)
    bias = cfg.flag("attention_bias", False)
    rope = cfg.optional_str("position_embedding_type") == "rope"
    spec = HybridSpec(
        hidden_size=hidden, vocab_size=d.vocab_size, mixers=mixers,
        ffn=("moe" if experts else "dense",) * layers,
        attention=gqa_attention(hidden, d.num_heads, d.num_kv_heads, d.head_dim, qkv_bias=bias,
                                o_bias=bias),
        mixer=mixer, final_norm_elements=hidden,
        tie_word_embeddings=cfg.flag("tie_word_embeddings", False),
        layer_norm_elements=2 * hidden, dense_mlp=() if experts else shared, experts=moe,
        mixer_prefix="mamba", mlp_prefix="block_sparse_moe" if experts else "shared_mlp",
        shared_path="shared_mlp", peft_converts_experts=False,
        experts_per_token=min(max(experts, 1), cfg.optional_int("num_experts_per_tok", 2)))
    return describe_hybrid(spec, num_attention_heads=d.num_heads,
                           num_key_value_heads=d.num_kv_heads, head_dim=d.head_dim,
                           intermediate_size=inter if not experts else 0,
                           context_window_tokens=cfg.optional_nullable_int(
                               "max_position_embeddings", None),
                           peft_default_targets=None, positions="rope" if rope else "none")
