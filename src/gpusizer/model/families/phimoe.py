"""PhiMoE (``model_type: phimoe``; microsoft/Phi-3.5-MoE-instruct).

Source: transformers 5.24 ``models/phimoe/modeling_phimoe.py`` and ``configuration_phimoe.py``:

- ``PhimoeAttention``: q/k/v/o with bias = ``attention_bias`` (default false; Phi-3.5-MoE sets
  it true), GQA, head_dim = hidden / heads;
- ``PhimoeSparseMoeBlock`` in every layer: ``router`` (``PhimoeTopKRouter``, an ``nn.Linear``
  hidden → ``num_local_experts``, no bias) and ``PhimoeExperts`` stored stacked as
  ``gate_up_proj`` (E, 2·intermediate, hidden) and ``down_proj`` (E, hidden, intermediate), which
  transformers concatenates at load from the checkpoint's per-expert ``w1``, ``w3``, ``w2``
  (``conversion_mapping.py`` ``"phimoe"``); top-``num_experts_per_tok`` (default 2) sparsemixer
  routing; no dense MLP, no shared expert;
- ``PhimoeDecoderLayer``: ``input_layernorm`` and ``post_attention_layernorm`` are
  ``nn.LayerNorm`` (weight and bias), as is the final ``norm``;
- ``lm_head`` with bias = ``lm_head_bias`` (default false; Phi-3.5-MoE sets it true), untied by
  default; a non-null ``sliding_window`` applies to every layer.

PEFT 0.21 has no default LoRA targets for phimoe.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from ..facts import MoeDims
from .decoder import Experts, Linear, mlp
from .layer_pattern import uniform_window
from .llama_like import Dims, LlamaStyle, MoeBlock, describe_llama_like

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({"router_jitter_noise", "input_jitter_noise"})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``):
training-time routing noise."""


def _moe(cfg: ConfigReader, d: Dims) -> MoeBlock:
    experts = cfg.require_int("num_local_experts")
    width = cfg.require_int("intermediate_size")
    block = Experts(count=experts,
                    expert=mlp(d.hidden_size, width, gated=True, names=("w1", "w3", "w2")),
                    router=Linear(experts, d.hidden_size, name="router", role="router"))
    dims = MoeDims(num_experts=experts,
                   experts_per_token=cfg.optional_int("num_experts_per_tok", 2),
                   expert_intermediate_size=width, num_shared_experts=0,
                   moe_layers=d.num_layers)
    return MoeBlock(block, (True,) * d.num_layers, dims)


STYLE = LlamaStyle(layers=uniform_window, qkv_bias="attention_bias", o_bias="attention_bias",
                   norm="layer", moe=_moe, lm_head_bias=True, peft_default_targets=None)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a PhiMoE config (see module docstring)."""
    return describe_llama_like(cfg, STYLE)
