"""GPT-NeoX (``model_type: gpt_neox``; EleutherAI/gpt-neox-20b, the Pythia suite).

Source: transformers 5.24 ``models/gpt_neox/modeling_gpt_neox.py`` and
``configuration_gpt_neox.py``:

- ``GPTNeoXAttention``: one fused ``query_key_value`` (hidden → 3·hidden, multi-head: no GQA)
  and ``dense`` (hidden → hidden), both with bias = ``attention_bias`` (default true); head_dim
  = hidden / heads; partial rotary: ``rotary_pct`` (``partial_rotary_factor``, default 0.25) of
  each head is rotated, no parameter;
- ``GPTNeoXMLP``: ``dense_h_to_4h`` (hidden → intermediate) and ``dense_4h_to_h``, always with
  bias (``nn.Linear`` default), gelu, not gated;
- ``GPTNeoXLayer``: ``input_layernorm`` and ``post_attention_layernorm`` (``nn.LayerNorm``:
  weight and bias); with ``use_parallel_residual`` (default true) both read the layer input and
  ``mlp + attention + input`` is the output, else the MLP reads ``attention + input``;
- ``GPTNeoXModel``: ``embed_in``, ``final_layer_norm`` (LayerNorm); ``GPTNeoXForCausalLM``:
  ``lm_head`` (bias-free), untied by default; the module paths are ``attention.*`` and
  ``mlp.*`` inside each layer.

PEFT 0.21's default LoRA target for gpt_neox is ``query_key_value``.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .decoder import DecoderShapes, gqa_attention, linear_modules, mlp, param_groups
from .layer_pattern import full_only
from .llama_like import read_dims

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({
    "rotary_pct", "rotary_emb_base",       # rotary fraction and base (no parameter)
    "use_parallel_residual",               # where the MLP reads from, no shape
    "classifier_dropout",                  # sequence-classification head only
})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a GPT-NeoX config (see module docstring).

    Raises:
        ModelError: a required key is missing, or hidden_size is not a multiple of the heads.
    """
    d = read_dims(cfg)   # GPTNeoXConfig has neither head_dim nor num_key_value_heads: MHA
    hidden, heads, head_dim = d.hidden_size, d.num_heads, d.head_dim
    layers, vocab = d.num_layers, d.vocab_size
    intermediate = cfg.require_int("intermediate_size")
    bias = cfg.flag("attention_bias", True)
    tie = cfg.flag("tie_word_embeddings", False)
    shapes = DecoderShapes(
        hidden_size=hidden, vocab_size=vocab, num_layers=layers,
        attention=gqa_attention(hidden, heads, heads, head_dim, qkv_bias=bias, o_bias=bias,
                                fused_qkv=True, names=("query_key_value", "dense")),
        layer_norm_elements=2 * 2 * hidden, final_norm_elements=2 * hidden,
        tie_word_embeddings=tie,
        dense_mlp=mlp(hidden, intermediate, gated=False, bias=True,
                      names=("dense_h_to_4h", "dense_4h_to_h")),
        attention_prefix="attention")
    layer_types, window = full_only(layers)
    return Architecture(
        hidden_size=hidden, num_layers=layers, num_attention_heads=heads,
        num_key_value_heads=heads, head_dim=head_dim, vocab_size=vocab,
        intermediate_size=intermediate, gated_mlp=False, tie_word_embeddings=tie,
        layer_types=layer_types, sliding_window=window,
        context_window_tokens=cfg.optional_nullable_int("max_position_embeddings", None),
        params=param_groups(shapes), positions="rope",
        peft_default_targets=("query_key_value",), modules=linear_modules(shapes),
        norm="layer")
