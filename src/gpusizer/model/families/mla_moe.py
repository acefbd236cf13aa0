"""The DeepSeek decoder shared by DeepSeek-V2 and V3: MLA attention, dense then MoE layers.

Sources: transformers ``models/deepseek_v3/modeling_deepseek_v3.py`` and
``models/deepseek_v2/modular_deepseek_v2.py``; DeepSeek-V2 paper (arXiv 2405.04434) §2.1 for MLA.

- Attention: ``q_proj`` (hidden → heads·(nope + rope)) when ``q_lora_rank`` is null, else
  ``q_a_proj`` (hidden → q_lora_rank, bias = attention_bias) + ``q_a_layernorm`` + ``q_b_proj``
  (q_lora_rank → heads·(nope + rope)); ``kv_a_proj_with_mqa`` (hidden → kv_lora_rank + rope,
  bias = attention_bias) + ``kv_a_layernorm`` (kv_lora_rank) + ``kv_b_proj`` (kv_lora_rank →
  heads·(nope + v)); ``o_proj`` (heads·v → hidden, bias = attention_bias).
- Layer ``i`` is MoE when ``n_routed_experts`` is set and ``i >= first_k_dense_replace``
  (transformers ignores ``moe_layer_freq``; gpusizer refuses a value other than 1, where the
  original remote code would differ). A MoE layer: router (hidden → n_routed_experts, no bias),
  ``n_routed_experts`` gated experts of ``moe_intermediate_size``, one shared MLP of
  ``moe_intermediate_size · n_shared_experts``. Dense layers: gated MLP of intermediate_size.
- The KV cache transformers keeps holds per-head keys of nope + rope and values of v_head_dim,
  so ``head_dim`` is nope + rope and ``num_key_value_heads`` the config's value; the MLA latent
  widths are in ``mla``.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from ..facts import MlaDims, MoeDims, PersistentBuffer
from .decoder import DecoderShapes, Experts, Linear, linear_modules, mlp, param_groups
from .layer_pattern import full_only

__all__ = ["ROUTING_KEYS", "describe_mla_moe"]

ROUTING_KEYS: frozenset[str] = frozenset({
    "ep_size", "n_group", "topk_group", "topk_method", "scoring_func", "routed_scaling_factor",
    "norm_topk_prob", "aux_loss_alpha", "seq_aux", "rope_interleave"})
"""Routing and kernel switches that change no tensor shape."""


def _attention(cfg: ConfigReader, hidden: int,
               heads: int) -> tuple[tuple[Linear, ...], int, MlaDims]:
    """MLA matrices, the elements of its latent norms per layer, and its dims."""
    q_lora = cfg.nullable_int("q_lora_rank")
    mla = MlaDims(kv_lora_rank=cfg.require_int("kv_lora_rank"),
                  qk_rope_head_dim=cfg.require_int("qk_rope_head_dim"),
                  qk_nope_head_dim=cfg.require_int("qk_nope_head_dim"),
                  v_head_dim=cfg.require_int("v_head_dim"), q_lora_rank=q_lora)
    bias = cfg.flag("attention_bias", False)
    qk = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    # the down-projections read the attention norm's output, the up-projections a latent norm's
    q = ((Linear(heads * qk, hidden, name="q_proj", role="attention_in"),) if q_lora is None
         else (Linear(q_lora, hidden, bias, "q_a_proj", role="attention_in"),
               Linear(heads * qk, q_lora, name="q_b_proj", role="attention_latent")))
    kv = (Linear(mla.kv_lora_rank + mla.qk_rope_head_dim, hidden, bias, "kv_a_proj_with_mqa",
                 role="attention_in"),
          Linear(heads * (mla.qk_nope_head_dim + mla.v_head_dim), mla.kv_lora_rank,
                 name="kv_b_proj", role="attention_latent"))
    norms = mla.kv_lora_rank + (q_lora or 0)
    o = Linear(hidden, heads * mla.v_head_dim, bias, "o_proj", role="attention_out")
    return q + kv + (o,), norms, mla


def describe_mla_moe(cfg: ConfigReader, *, notes: tuple[str, ...] = (),
                     correction_bias: bool = False) -> Architecture:
    """Architecture of a DeepSeek-V2/V3 config (see module docstring).

    ``correction_bias``: the router registers a persistent fp32 ``e_score_correction_bias`` of
    one value per routed expert (V3's ``DeepseekV3TopkRouter``). Positions are rotary (the
    decoupled RoPE key). PEFT 0.21 has no default LoRA targets for either version.

    Raises:
        ModelError: a required key is missing, or ``moe_layer_freq`` is not 1.
    """
    hidden, heads = cfg.require_int("hidden_size"), cfg.require_int("num_attention_heads")
    layers, vocab = cfg.require_int("num_hidden_layers"), cfg.require_int("vocab_size")
    attention, attention_norms, mla = _attention(cfg, hidden, heads)
    intermediate = cfg.require_int("intermediate_size")
    routed = cfg.nullable_int("n_routed_experts")
    first_dense = cfg.optional_int("first_k_dense_replace", 0, minimum=0)
    if cfg.optional_int("moe_layer_freq", 1) != 1:
        raise cfg.error("moe_layer_freq", "only 1 is supported: transformers ignores it, the "
                        "original remote code does not, so the layer count is ambiguous")
    moe_layers = max(layers - first_dense, 0) if routed else 0
    experts, moe = None, None
    if routed:
        width = cfg.require_int("moe_intermediate_size")
        shared = cfg.nullable_int("n_shared_experts", minimum=0) or 0
        experts = Experts(count=routed, expert=mlp(hidden, width, gated=True),
                          router=Linear(routed, hidden, role="router"),
                          shared=mlp(hidden, width * shared, gated=True) if shared else ())
        moe = MoeDims(num_experts=routed, experts_per_token=cfg.require_int("num_experts_per_tok"),
                      expert_intermediate_size=width, num_shared_experts=shared,
                      moe_layers=moe_layers)
    mtp = cfg.optional_int("num_nextn_predict_layers", 0, minimum=0)
    if mtp:
        notes += (f"num_nextn_predict_layers={mtp}: the checkpoint's multi-token-prediction "
                  "layer(s) are not loaded by transformers and not counted",)
    tie = cfg.flag("tie_word_embeddings", False)
    buffers = ((PersistentBuffer("mlp.gate.e_score_correction_bias", routed * moe_layers,
                                 "float32"),) if correction_bias and routed and moe_layers else ())
    shapes = DecoderShapes(
        hidden_size=hidden, vocab_size=vocab, num_layers=layers, attention=attention,
        attention_norm_elements=attention_norms, layer_norm_elements=2 * hidden,
        final_norm_elements=hidden, tie_word_embeddings=tie,
        dense_mlp=mlp(hidden, intermediate, gated=True), experts=experts, moe_layers=moe_layers)
    layer_types, window = full_only(layers)
    return Architecture(
        hidden_size=hidden, num_layers=layers, num_attention_heads=heads,
        num_key_value_heads=cfg.optional_int("num_key_value_heads", heads),
        head_dim=mla.qk_nope_head_dim + mla.qk_rope_head_dim, vocab_size=vocab,
        intermediate_size=intermediate if moe_layers < layers else 0, gated_mlp=True,
        tie_word_embeddings=tie, layer_types=layer_types, sliding_window=window,
        context_window_tokens=cfg.optional_nullable_int("max_position_embeddings", None),
        params=param_groups(shapes), positions="rope", peft_default_targets=None,
        persistent_buffers=buffers, mla=mla, moe=moe, notes=notes,
        unloaded_checkpoint_layers=mtp, modules=linear_modules(shapes))
