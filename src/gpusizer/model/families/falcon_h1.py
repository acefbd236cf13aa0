"""Falcon-H1 (``model_type: falcon_h1``; tiiuae/Falcon-H1-0.5B … Falcon-H1-34B, -Instruct).

Source: transformers 5.24 ``models/falcon_h1/modeling_falcon_h1.py`` and
``configuration_falcon_h1.py``:

- every layer is ``hybrid`` (``layers_block_type``): attention (``self_attn``: q/k/v/o with
  bias = ``attention_bias``, GQA, ``head_dim`` or hidden / heads, RoPE) and a Mamba-2 mixer
  (``mamba``: I = ``mamba_d_ssm``, or ``mamba_expand`` × hidden when null; ``mamba_n_heads``,
  ``mamba_d_head`` "auto" = I / heads, ``mamba_n_groups``, ``mamba_d_state``, ``mamba_d_conv``;
  ``in_proj`` bias ``mamba_proj_bias``, ``out_proj`` bias ``projectors_bias``, the gated RMSNorm
  only when ``mamba_rms_norm``) read the same norm output side by side, then a gated MLP
  (``feed_forward``, bias ``mlp_bias``);
- two RMSNorms per layer (``input_layernorm``, ``pre_ff_layernorm``), ``final_layernorm``;
  ``lm_head`` untied by default;
- each mixer registers a non-persistent fp32 ``mup_vector`` (1 × 1 × in_proj width): a buffer
  made at init, not a parameter, not loaded.

The cache of every layer holds keys and values and the mixer's conv and SSM states
(``cache_utils.LinearAttentionAndFullAttentionLayer``). PEFT 0.21 has no default LoRA targets
for falcon_h1.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .decoder import gqa_attention, mlp
from .llama_like import read_dims
from .state_space import HybridSpec, describe_hybrid, mamba2_mixer, mamba_heads

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({
    "lm_head_multiplier", "embedding_multiplier", "mlp_multipliers", "key_multiplier",
    "attention_out_multiplier", "attention_in_multiplier", "ssm_multipliers",
    "ssm_in_multiplier", "ssm_out_multiplier",          # µP scalars, no shape
    "mamba_norm_before_gate", "time_step_limit", "num_logits_to_keep",
})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``):
the µP multipliers, the gate order."""


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layer kinds and parameter groups of a Falcon-H1 config (see module docstring).

    Raises:
        ModelError: a required key is missing, or the Mamba heads do not divide its width.
    """
    d = read_dims(cfg)
    hidden, layers = d.hidden_size, d.num_layers
    inner = cfg.optional_nullable_int("mamba_d_ssm", 1024)
    if inner is None:
        inner = cfg.optional_int("mamba_expand", 2) * hidden
    heads, head_dim = mamba_heads(cfg, inner)
    cfg.mark_used("mamba_expand")
    mixer = mamba2_mixer(hidden, heads=heads, head_dim=head_dim,
                         groups=cfg.optional_int("mamba_n_groups", 1),
                         d_state=cfg.optional_int("mamba_d_state", 256),
                         conv_kernel=cfg.optional_int("mamba_d_conv", 4),
                         bias=cfg.flag("mamba_proj_bias", False),
                         conv_bias=cfg.flag("mamba_conv_bias", True),
                         out_bias=cfg.flag("projectors_bias", False),
                         gated_norm=cfg.flag("mamba_rms_norm", False),
                         chunk=cfg.optional_int("mamba_chunk_size", 256))
    bias = cfg.flag("attention_bias", False)
    inter = cfg.require_int("intermediate_size")
    spec = HybridSpec(
        hidden_size=hidden, vocab_size=d.vocab_size, mixers=("both",) * layers,
        ffn=("dense",) * layers,
        attention=gqa_attention(hidden, d.num_heads, d.num_kv_heads, d.head_dim, qkv_bias=bias,
                                o_bias=bias),
        mixer=mixer, final_norm_elements=hidden,
        tie_word_embeddings=cfg.flag("tie_word_embeddings", False),
        layer_norm_elements=2 * hidden,
        dense_mlp=mlp(hidden, inter, gated=True, bias=cfg.flag("mlp_bias", False)),
        mixer_prefix="mamba", mlp_prefix="feed_forward")
    return describe_hybrid(spec, num_attention_heads=d.num_heads,
                           num_key_value_heads=d.num_kv_heads, head_dim=d.head_dim,
                           intermediate_size=inter,
                           context_window_tokens=cfg.optional_nullable_int(
                               "max_position_embeddings", None),
                           peft_default_targets=None)
