"""Falcon (``model_type: falcon``; Falcon-7B/40B/180B, in-library since transformers 4.33).

Source: transformers ``models/falcon/modeling_falcon.py`` and ``configuration_falcon.py``:

- ``query_key_value`` (fused, bias = ``bias``): new_decoder_architecture →
  (heads + 2·num_kv_heads)·head_dim rows; else multi_query → hidden + 2·head_dim (one KV head);
  else 3·hidden.
- ``dense`` (hidden → hidden), MLP ``dense_h_to_4h`` / ``dense_4h_to_h`` of ``ffn_hidden_size``
  (default 4·hidden), all with bias = ``bias``; not gated.
- LayerNorms (weight + bias): ``ln_attn`` + ``ln_mlp`` when parallel_attn and
  ``num_ln_in_parallel_attn`` is 2 (default 2 with new_decoder_architecture); one
  ``input_layernorm`` when parallel_attn otherwise; input + post-attention without parallel_attn.
- ``alibi`` adds no parameter; lm_head tied by default (``PretrainedConfig.tie_word_embeddings``).
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .decoder import DecoderShapes, gqa_attention, linear_modules, mlp, param_groups
from .layer_pattern import full_only

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({"apply_residual_connection_post_layernorm",
                                          "activation"})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a Falcon config (see module docstring).

    Raises:
        ModelError: a required key is missing, or hidden_size is not a multiple of the heads.
    """
    hidden = cfg.require_int("hidden_size")
    heads = cfg.require_int("num_attention_heads")
    if hidden % heads:
        raise cfg.error("num_attention_heads", f"{heads} does not divide hidden_size {hidden}")
    head_dim = hidden // heads
    layers, vocab = cfg.require_int("num_hidden_layers"), cfg.require_int("vocab_size")
    new_arch = cfg.flag("new_decoder_architecture", False)
    multi_query = cfg.flag("multi_query", True)
    parallel = cfg.flag("parallel_attn", True)
    bias = cfg.flag("bias", False)
    alibi = cfg.flag("alibi", False)
    kv_heads = cfg.optional_int("num_kv_heads", heads)
    if not new_arch:
        kv_heads = 1 if multi_query else heads
    ffn = cfg.optional_int("ffn_hidden_size", 4 * hidden)
    ln_parallel = cfg.optional_nullable_int("num_ln_in_parallel_attn", None)
    if ln_parallel is None and new_arch:
        ln_parallel = 2
    norms = 2 if (not parallel or ln_parallel == 2) else 1
    tie = cfg.flag("tie_word_embeddings", True)
    shapes = DecoderShapes(
        hidden_size=hidden, vocab_size=vocab, num_layers=layers,
        attention=gqa_attention(hidden, heads, kv_heads, head_dim, qkv_bias=bias, o_bias=bias,
                                fused_qkv=True, names=("query_key_value", "dense")),
        layer_norm_elements=norms * 2 * hidden, final_norm_elements=2 * hidden,
        tie_word_embeddings=tie, dense_mlp=mlp(hidden, ffn, gated=False, bias=bias,
                                                  names=("dense_h_to_4h", "dense_4h_to_h")),
        attention_prefix="self_attention")
    layer_types, window = full_only(layers)
    notes = ("ALiBi positions (no rotary, no position parameters)",) if alibi else ()
    # PEFT 0.21 TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING["falcon"]: query_key_value
    return Architecture(
        hidden_size=hidden, num_layers=layers, num_attention_heads=heads,
        num_key_value_heads=kv_heads, head_dim=head_dim, vocab_size=vocab,
        intermediate_size=ffn, gated_mlp=False, tie_word_embeddings=tie,
        layer_types=layer_types, sliding_window=window,
        context_window_tokens=cfg.optional_nullable_int("max_position_embeddings", None),
        params=param_groups(shapes), positions="alibi" if alibi else "rope",
        peft_default_targets=("query_key_value",), notes=notes, modules=linear_modules(shapes),
        norm="layer", norms_per_layer=norms)
