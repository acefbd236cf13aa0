"""GLM-4.5 / GLM-4.6 MoE (``model_type: glm4_moe``; zai-org/GLM-4.5, GLM-4.5-Air).

Source: transformers 5.24 ``models/glm4_moe/modeling_glm4_moe.py`` and
``configuration_glm4_moe.py``:

- ``Glm4MoeAttention``: GQA q/k/v with bias = ``attention_bias`` (default false; GLM-4.5 sets
  it true), ``o_proj`` without bias; head_dim = ``head_dim`` or hidden / heads; with
  ``use_qk_norm`` a per-head RMSNorm on q and k (head_dim each); partial rotary
  (``partial_rotary_factor`` 0.5), no parameter;
- ``Glm4MoeDecoderLayer``: 2 RMSNorms; layers ``i < first_k_dense_replace`` (default 1) carry a
  dense gated MLP of ``intermediate_size``, the others ``Glm4MoeMoE``: a router
  (``Glm4MoeTopkRouter``: ``weight`` ``n_routed_experts`` × hidden, no bias, and a persistent
  fp32 ``e_score_correction_bias`` buffer of ``n_routed_experts``), ``n_routed_experts`` experts
  stacked as ``gate_up_proj`` / ``down_proj`` from the checkpoint's per-expert ``gate_proj``,
  ``up_proj``, ``down_proj`` (``conversion_mapping.py``: glm4_moe → qwen2_moe), and one shared
  gated MLP of ``moe_intermediate_size × n_shared_experts``;
- ``_keep_in_fp32_modules_strict = ["e_score_correction_bias", "gate.weight"]``: the router weight
  stays fp32 whatever the model dtype (as in DeepSeek-V3, whose arithmetic also counts it in the
  weight dtype: 2 B per router value fewer than transformers holds in bf16);
- untied by default; every layer full attention; ``num_nextn_predict_layers`` (``num_mtp_layers``,
  default 1) MTP layers sit in the checkpoint, and transformers does not load them
  (``_keys_to_ignore_on_load_unexpected``).

PEFT 0.21 has no default LoRA targets for glm4_moe.
"""

from __future__ import annotations

from dataclasses import replace

from ..architecture import Architecture
from ..config_reader import ConfigReader
from ..facts import MoeDims, PersistentBuffer
from .decoder import Experts, Linear, mlp
from .layer_pattern import full_only
from .llama_like import Dims, LlamaStyle, MoeBlock, describe_llama_like

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({
    "routed_scaling_factor", "n_group", "topk_group", "norm_topk_prob"})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``):
the router's scaling and group-limited top-k switches."""


def _moe(cfg: ConfigReader, d: Dims) -> MoeBlock:
    routed = cfg.require_int("n_routed_experts")
    width = cfg.require_int("moe_intermediate_size")
    shared = cfg.optional_int("n_shared_experts", 1, minimum=0)
    first_dense = cfg.optional_int("first_k_dense_replace", 1, minimum=0)
    is_moe = tuple(i >= first_dense for i in range(d.num_layers))
    block = Experts(count=routed, expert=mlp(d.hidden_size, width, gated=True),
                    router=Linear(routed, d.hidden_size, role="router"),
                    shared=mlp(d.hidden_size, width * shared, gated=True) if shared else ())
    dims = MoeDims(num_experts=routed, experts_per_token=cfg.optional_int("num_experts_per_tok", 8),
                   expert_intermediate_size=width, num_shared_experts=shared,
                   moe_layers=sum(is_moe))
    return MoeBlock(block, is_moe, dims)


def _style(cfg: ConfigReader) -> LlamaStyle:
    return LlamaStyle(layers=lambda c, n: full_only(n), qkv_bias="attention_bias",
                      qk_norm=cfg.flag("use_qk_norm", False), moe=_moe,
                      peft_default_targets=None)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a GLM-4.5 MoE config (see module docstring).

    Raises:
        ModelError: a required key is missing or has the wrong type.
    """
    arch = describe_llama_like(cfg, _style(cfg))
    mtp = cfg.optional_int("num_nextn_predict_layers", 1, minimum=0)
    notes = ("the router weight is fp32 in transformers (_keep_in_fp32_modules_strict), counted "
             "here in the weight dtype",)
    if mtp:
        notes += (f"num_nextn_predict_layers={mtp}: the checkpoint's multi-token-prediction "
                  "layer(s) are not loaded by transformers and not counted",)
    moe = arch.moe
    buffers = (PersistentBuffer("mlp.gate.e_score_correction_bias",
                                moe.num_experts * moe.moe_layers, "float32"),) \
        if moe and moe.moe_layers else ()
    return replace(arch, persistent_buffers=buffers, notes=notes, unloaded_checkpoint_layers=mtp)
