"""Llama 4's text model (``model_type: llama4_text``; the language model of Llama-4-Scout-17B-16E
and Llama-4-Maverick-17B-128E, and text-only checkpoints of it).

Source: transformers 5.24 ``models/llama4/modeling_llama4.py`` and ``configuration_llama4.py``
(``Llama4TextConfig``, ``Llama4ForCausalLM``):

- ``Llama4TextAttention``: q/k/v/o with bias = ``attention_bias`` (default false), explicit
  ``head_dim`` (default 128); ``use_qk_norm`` is an L2 norm without weights (no parameter);
- layers: ``no_rope_layers`` (default: every ``no_rope_layer_interval``-th layer, 4, uses no
  RoPE) and, when ``layer_types`` is absent, the RoPE layers are ``chunked_attention`` with
  ``attention_chunk_size`` (default 8192) and the NoPE layers ``full_attention``; transformers
  caches a chunked layer like a sliding one of ``attention_chunk_size`` tokens
  (``cache_utils.DYNAMIC_LAYER_TYPE_MAPPING["chunked_attention"]`` =
  ``DynamicSlidingWindowLayer``), so gpusizer sizes them as sliding layers of that window;
- ``Llama4TextDecoderLayer``: layers in ``moe_layers`` (default every
  ``interleave_moe_layer_step``-th, 1: all) carry ``feed_forward`` = ``Llama4TextMoe``: a
  ``router`` (``nn.Linear`` hidden → ``num_local_experts``, no bias), ``experts`` stored stacked in
  the checkpoint (``gate_up_proj`` (E, hidden, 2·intermediate), ``down_proj`` (E, intermediate,
  hidden)), and one ``shared_expert`` gated MLP of ``intermediate_size``; the other layers a dense
  gated MLP of ``intermediate_size_mlp``; 2 RMSNorms per layer, final ``norm``, untied
  ``lm_head`` by default.

PEFT 0.21's table lists ``llama4`` (the vision-language model), not ``llama4_text``: no default.
"""

from __future__ import annotations

from ..architecture import FULL, SLIDING, Architecture
from ..config_reader import ConfigReader
from ..facts import MoeDims
from .decoder import (DecoderShapes, Experts, Linear, gqa_attention, linear_modules, mlp,
                      param_groups)

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({
    "attn_temperature_tuning", "floor_scale", "attn_scale",   # attention scaling of NoPE layers
    "router_jitter_noise", "use_qk_norm",                      # no parameter either way
})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""

CHUNKED = "chunked_attention"


def _layers(cfg: ConfigReader, n: int) -> tuple[tuple[str, ...], int | None]:
    chunk = cfg.optional_nullable_int("attention_chunk_size", 8192)
    listed = cfg.str_list("layer_types")
    if listed is not None:   # what Llama4TextConfig derived them from
        cfg.mark_used("no_rope_layers", "no_rope_layer_interval")
    else:
        rope = cfg.int_list("no_rope_layers")
        if not rope:
            interval = cfg.optional_int("no_rope_layer_interval", 4)
            rope = tuple(int((i + 1) % interval != 0) for i in range(n))
        if len(rope) != n:
            raise cfg.error("no_rope_layers", f"lists {len(rope)} layers but "
                            f"num_hidden_layers is {n}", list(rope))
        listed = tuple(CHUNKED if r and chunk is not None else FULL for r in rope)
    if len(listed) != n:
        raise cfg.error("layer_types", f"lists {len(listed)} layers but num_hidden_layers is "
                        f"{n}", list(listed))
    unknown = sorted(set(listed) - {FULL, CHUNKED})
    if unknown:
        raise cfg.error("layer_types", f"unsupported layer type(s) {unknown}", list(listed))
    if CHUNKED in listed and chunk is None:
        raise cfg.error("attention_chunk_size", "null, but layer_types has chunked layers")
    types = tuple(SLIDING if t == CHUNKED else FULL for t in listed)
    return types, (chunk if SLIDING in types else None)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a Llama 4 text config (see module docstring).

    Raises:
        ModelError: a required key is missing, or the layer lists disagree with the layer count.
    """
    hidden, heads = cfg.require_int("hidden_size"), cfg.require_int("num_attention_heads")
    layers, vocab = cfg.require_int("num_hidden_layers"), cfg.require_int("vocab_size")
    kv_heads = cfg.optional_int("num_key_value_heads", heads)
    head_dim = cfg.optional_int("head_dim", 128)
    bias = cfg.flag("attention_bias", False)
    width = cfg.optional_int("intermediate_size", 8192)
    dense_width = cfg.optional_int("intermediate_size_mlp", 16384)
    experts = cfg.optional_int("num_local_experts", 16)
    listed = cfg.int_list("moe_layers")
    step = cfg.optional_int("interleave_moe_layer_step", 1)
    # an empty or null list takes the default, as Llama4TextConfig fills a null one
    moe_idx = set(listed) if listed else set(range(step - 1, layers, step))
    moe_layers = sum(1 for i in range(layers) if i in moe_idx)
    block = Experts(count=experts,
                    expert=(Linear(2 * width, hidden, role="expert"),
                            Linear(hidden, width, role="expert")),
                    router=Linear(experts, hidden, name="router", role="router"),
                    shared=mlp(hidden, width, gated=True), stacked=True)
    tie = cfg.flag("tie_word_embeddings", False)
    shapes = DecoderShapes(
        hidden_size=hidden, vocab_size=vocab, num_layers=layers,
        attention=gqa_attention(hidden, heads, kv_heads, head_dim, qkv_bias=bias, o_bias=bias),
        layer_norm_elements=2 * hidden, final_norm_elements=hidden, tie_word_embeddings=tie,
        dense_mlp=mlp(hidden, dense_width, gated=True), experts=block, moe_layers=moe_layers,
        mlp_prefix="feed_forward", shared_name="shared_expert")
    layer_types, window = _layers(cfg, layers)
    moe = MoeDims(num_experts=experts,
                  experts_per_token=cfg.optional_int("num_experts_per_tok", 1),
                  expert_intermediate_size=width, num_shared_experts=1,
                  moe_layers=moe_layers) if moe_layers else None
    return Architecture(
        hidden_size=hidden, num_layers=layers, num_attention_heads=heads,
        num_key_value_heads=kv_heads, head_dim=head_dim, vocab_size=vocab,
        intermediate_size=dense_width if moe_layers < layers else 0, gated_mlp=True,
        tie_word_embeddings=tie, layer_types=layer_types, sliding_window=window,
        context_window_tokens=cfg.optional_nullable_int("max_position_embeddings", None),
        params=param_groups(shapes), positions="rope", peft_default_targets=None, moe=moe,
        modules=linear_modules(shapes),
        notes=("chunked local attention layers are cached like sliding-window layers of "
               "attention_chunk_size tokens (transformers DynamicSlidingWindowLayer)",)
        if window else ())
