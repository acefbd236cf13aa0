"""GPT-2 (``model_type: gpt2``).

Source: transformers ``models/gpt2/modeling_gpt2.py`` and ``configuration_gpt2.py``: learned
token (``wte``) and position (``wpe``: ``n_positions`` × ``n_embd``) embeddings; per layer
``ln_1``, ``ln_2`` (LayerNorm weight + bias), ``Conv1D`` ``c_attn`` (n_embd → 3·n_embd, bias),
``c_proj`` (bias), MLP ``c_fc`` (n_embd → ``n_inner``, default 4·n_embd, bias) and ``c_proj``
(bias); final ``ln_f``; lm_head tied to ``wte`` by default. ``Conv1D`` stores the transpose of an
``nn.Linear`` weight: same element count. The causal-mask buffer ``attn.bias`` is not a
parameter (some checkpoints store it; see ``stored_elements``).
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .decoder import DecoderShapes, gqa_attention, linear_modules, mlp, param_groups
from .layer_pattern import full_only

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({
    # Used only by GPT2DoubleHeadsModel's multiple-choice head, not by GPT2LMHeadModel:
    "summary_type", "summary_use_proj", "summary_activation", "summary_proj_to_labels",
    "summary_first_dropout",
    # Attention scaling switches (no shape):
    "scale_attn_weights", "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
    # Legacy duplicate of n_positions that GPT2Config no longer reads:
    "n_ctx",
})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a GPT-2 config (see module docstring).

    Raises:
        ModelError: a required key is missing, ``n_head`` does not divide ``n_embd``, or
            ``add_cross_attention`` is set (an encoder-decoder use gpusizer does not size).
    """
    hidden = cfg.require_int("n_embd")
    heads = cfg.require_int("n_head")
    if hidden % heads:
        raise cfg.error("n_head", f"{heads} does not divide n_embd {hidden}")
    layers, vocab = cfg.require_int("n_layer"), cfg.require_int("vocab_size")
    if cfg.flag("add_cross_attention", False):
        raise cfg.error("add_cross_attention", "cross-attention GPT-2 is not sized by gpusizer",
                        True)
    positions = cfg.optional_int("n_positions", 1024)
    inner = cfg.optional_nullable_int("n_inner", None) or 4 * hidden
    tie = cfg.flag("tie_word_embeddings", True)
    shapes = DecoderShapes(
        hidden_size=hidden, vocab_size=vocab, num_layers=layers,
        attention=gqa_attention(hidden, heads, heads, hidden // heads, qkv_bias=True,
                                o_bias=True, fused_qkv=True, names=("c_attn", "c_proj")),
        layer_norm_elements=2 * 2 * hidden, final_norm_elements=2 * hidden,
        tie_word_embeddings=tie, dense_mlp=mlp(hidden, inner, gated=False, bias=True,
                                                  names=("c_fc", "c_proj")),
        position_embeddings=positions * hidden, attention_prefix="attn")
    layer_types, window = full_only(layers)
    # positions: the learned wpe table; PEFT 0.21's default LoRA target for gpt2 is c_attn
    return Architecture(
        hidden_size=hidden, num_layers=layers, num_attention_heads=heads,
        num_key_value_heads=heads, head_dim=hidden // heads, vocab_size=vocab,
        intermediate_size=inner, gated_mlp=False, tie_word_embeddings=tie,
        layer_types=layer_types, sliding_window=window, context_window_tokens=positions,
        params=param_groups(shapes), positions="learned",
        peft_default_targets=("c_attn",), modules=linear_modules(shapes), norm="layer")
