"""Nemotron-H (``model_type: nemotron_h``; nvidia/NVIDIA-Nemotron-Nano-9B-v2,
nvidia/Nemotron-H-8B-Base-8K, nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B).

Source: transformers 5.24 ``models/nemotron_h/modeling_nemotron_h.py`` and
``configuration_nemotron_h.py``:

- each layer is one RMSNorm and one ``mixer`` of the kind ``layers_block_type`` names
  (``layer_types``; the older ``hybrid_override_pattern`` string: ``M`` Mamba-2, ``*``
  attention, ``-`` MLP, ``E`` MoE; ``_pattern_to_list``; legacy ``mamba`` / ``attention``
  names are remapped, ``configuration_utils._LEGACY_LAYER_TYPE_REMAP``); the number of layers
  is that list's length;
- Mamba-2 mixer (``NemotronHMamba2Mixer``): I = ``mamba_num_heads × mamba_head_dim``,
  ``n_groups``, ``ssm_state_size``, ``conv_kernel``, ``use_bias`` / ``use_conv_bias``;
- attention: q/k/v/o without bias, ``head_dim`` (128), no RoPE;
- MLP (``NemotronHMLP``): ``up_proj`` and ``down_proj`` (relu², not gated), bias
  ``mlp_bias``;
- MoE (``NemotronHMoE``): experts stacked as ``up_proj`` (E × I × in) and ``down_proj``, ``in``
  = ``moe_latent_size`` when set (with ``fc1_latent_proj`` / ``fc2_latent_proj`` around them),
  else hidden; a ``shared_experts`` MLP of ``moe_shared_expert_intermediate_size``; the router
  ``gate`` (E × hidden, fp32: ``_keep_in_fp32_modules_strict``) and its persistent fp32
  ``e_score_correction_bias`` buffer;
- ``norm_f``; ``lm_head`` untied by default. The MTP layers (``num_nextn_predict_layers``) are
  not loaded by ``NemotronHForCausalLM``.

PEFT 0.21's default LoRA targets for nemotron_h: q_proj, k_proj, v_proj, o_proj.
"""

from __future__ import annotations

from dataclasses import replace

from ..architecture import Architecture
from ..config_reader import MAX_LAYERS, ConfigReader
from ..facts import PersistentBuffer
from .decoder import Experts, Linear, gqa_attention, mlp
from .state_space import HybridSpec, describe_hybrid, mamba2_mixer

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({
    "time_step_min", "time_step_max", "time_step_limit", "time_step_floor",
    "use_mamba_kernels", "mamba_hidden_act", "mlp_hidden_act", "residual_in_fp32",
    "rescale_prenorm_residual", "layer_norm_epsilon", "routed_scaling_factor", "n_group",
    "topk_group", "norm_topk_prob", "moe_shared_expert_overlap", "output_router_logits",
    "num_logits_to_keep", "hidden_dropout", "mtp_layers_block_type", "expand",
    # read by no 5.24 module of this model: one shared-expert MLP whatever n_shared_experts,
    # the mixer's bias is use_bias, no sliding window in NemotronHAttention
    "mamba_proj_bias", "n_shared_experts", "sliding_window",
})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``):
initialisation, activations, routing switches; ``expand`` is implied by the Mamba heads."""

_KINDS = {"linear_attention": "mixer", "mamba": "mixer", "full_attention": "attention",
          "attention": "attention", "mlp": "", "moe": ""}
_PATTERN = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}


def _block_types(cfg: ConfigReader) -> tuple[str, ...]:
    blocks = _listed_blocks(cfg)
    if len(blocks) > MAX_LAYERS:
        raise cfg.error("layers_block_type", f"lists {len(blocks)} layers, more than "
                        f"{MAX_LAYERS}", len(blocks))
    return blocks


def _listed_blocks(cfg: ConfigReader) -> tuple[str, ...]:
    for key in ("layers_block_type", "layer_types"):
        listed = cfg.str_list(key)
        if listed is not None:
            unknown = sorted(set(listed) - set(_KINDS))
            if unknown:
                raise cfg.error(key, f"unsupported layer type(s) {unknown}", list(listed))
            return listed
    pattern = cfg.optional_str("hybrid_override_pattern")
    if pattern:
        unknown = sorted(set(pattern) - set(_PATTERN))
        if unknown:
            raise cfg.error("hybrid_override_pattern", f"unknown letter(s) {unknown}", pattern)
        return tuple(_PATTERN[c] for c in pattern)
    return ("linear_attention", "moe", "full_attention", "mlp")


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layer kinds and parameter groups of a Nemotron-H config (see module docstring).

    Raises:
        ModelError: a required key is missing, or the layer list names an unknown kind.
    """
    blocks = _block_types(cfg)
    cfg.mark_used("num_hidden_layers", "num_nextn_predict_layers")
    mixers = tuple(_KINDS[b] for b in blocks)
    ffn = tuple("dense" if b == "mlp" else "moe" if b == "moe" else "" for b in blocks)
    hidden, vocab = cfg.require_int("hidden_size"), cfg.require_int("vocab_size")
    heads = cfg.optional_int("num_attention_heads", 32)
    kv_heads = cfg.optional_int("num_key_value_heads", 8)
    head_dim = cfg.optional_int("head_dim", 128)
    # vLLM keeps the SSM state in this dtype (NemotronHConfig default float32); transformers
    # keeps the scan's own fp32 state whatever it says
    served = cfg.optional_str("mamba_ssm_cache_dtype") or "float32"
    mixer = mamba2_mixer(hidden, heads=cfg.optional_int("mamba_num_heads", 128),
                         head_dim=cfg.optional_int("mamba_head_dim", 64),
                         groups=cfg.optional_int("n_groups", 8),
                         d_state=cfg.optional_int("ssm_state_size", 128),
                         conv_kernel=cfg.optional_int("conv_kernel", 4),
                         bias=cfg.flag("use_bias", False),
                         conv_bias=cfg.flag("use_conv_bias", True),
                         chunk=cfg.optional_int("chunk_size", 128))
    bias = cfg.flag("mlp_bias", False)
    inter = cfg.optional_int("intermediate_size", 21504)
    experts = cfg.optional_int("n_routed_experts", 8)
    latent = cfg.optional_nullable_int("moe_latent_size", None)
    width = latent or hidden
    moe_inter = cfg.optional_int("moe_intermediate_size", 7688)
    moe = Experts(experts, mlp(width, moe_inter, gated=False),
                  Linear(experts, hidden, False, "gate", role="router"),
                  shared=mlp(hidden, cfg.optional_int("moe_shared_expert_intermediate_size",
                                                      7688), gated=False, bias=bias))
    extra = ((Linear(latent, hidden, bias, "fc1_latent_proj", role="mlp_in"),
              Linear(hidden, latent, bias, "fc2_latent_proj", role="mlp_out"))
             if latent else ())
    spec = HybridSpec(
        hidden_size=hidden, vocab_size=vocab, mixers=mixers, ffn=ffn,
        attention=gqa_attention(hidden, heads, kv_heads, head_dim,
                                qkv_bias=cfg.flag("attention_bias", False), o_bias=False),
        mixer=mixer, final_norm_elements=hidden,
        tie_word_embeddings=cfg.flag("tie_word_embeddings", False),
        layer_norm_elements=hidden, dense_mlp=mlp(hidden, inter, gated=False, bias=bias),
        experts=moe, attention_prefix="mixer", mixer_prefix="mixer", mlp_prefix="mixer",
        shared_name="shared_experts", gated_mlp=False, moe_extra=extra,
        experts_per_token=min(experts, cfg.optional_int("num_experts_per_tok", 2)))
    spec = replace(spec, mixer=replace(mixer, state=replace(
        mixer.state, served_state_dtype="float32" if served == "float32" else "compute")))
    arch = describe_hybrid(spec, num_attention_heads=heads, num_key_value_heads=kv_heads,
                           head_dim=head_dim, intermediate_size=inter,
                           context_window_tokens=cfg.optional_nullable_int(
                               "max_position_embeddings", None),
                           peft_default_targets=("q_proj", "k_proj", "v_proj", "o_proj"),
                           positions="none")
    n_moe = ffn.count("moe")
    if not n_moe:
        return arch
    return replace(arch, persistent_buffers=(PersistentBuffer(
        "mixer.gate.e_score_correction_bias", experts * n_moe, "float32"),))
