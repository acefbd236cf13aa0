"""gpt-oss (``model_type: gpt_oss``; gpt-oss-20b, gpt-oss-120b).

Source: transformers ``models/gpt_oss/modeling_gpt_oss.py`` and ``configuration_gpt_oss.py``:
q/k/v/o with biases (``attention_bias``, true in released configs), one learned sink logit per
query head and layer (``sinks``), explicit ``head_dim`` (64), 2 RMSNorms per layer; every layer is
MoE: a router with bias (hidden → ``num_local_experts``) and experts stored as stacked 3-D tensors
with biases: ``gate_up_proj`` (E, hidden, 2·intermediate) + ``gate_up_proj_bias`` (E,
2·intermediate), ``down_proj`` (E, intermediate, hidden) + ``down_proj_bias`` (E, hidden).
Untied. ``layer_types`` alternate sliding (window 128) / full.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from ..facts import MoeDims
from .decoder import Experts, Linear
from .layer_pattern import periodic
from .llama_like import Dims, LlamaStyle, MoeBlock, describe_llama_like

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({
    "swiglu_limit", "swiglu_alpha", "initial_context_length"})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``):
the SwiGLU clamp and gain, and the pre-extension context (as ``original_max_position_embeddings``).
"""


def _moe(cfg: ConfigReader, d: Dims) -> MoeBlock:
    experts = cfg.require_int("num_local_experts")
    width = cfg.require_int("intermediate_size")
    top_k = cfg.optional_int("num_experts_per_tok", 4)
    legacy = cfg.optional_int("experts_per_token", top_k)
    if legacy != top_k:
        raise cfg.error("experts_per_token", f"{legacy} disagrees with num_experts_per_tok "
                        f"{top_k}", legacy)
    expert = (Linear(2 * width, d.hidden_size, bias=True, role="expert"),
              Linear(d.hidden_size, width, bias=True, role="expert"))
    block = Experts(count=experts, expert=expert,
                    router=Linear(experts, d.hidden_size, True, "router", role="router"),
                    stacked=True)
    dims = MoeDims(num_experts=experts, experts_per_token=top_k, expert_intermediate_size=width,
                   num_shared_experts=0, moe_layers=d.num_layers)
    return MoeBlock(block, (True,) * d.num_layers, dims)


STYLE = LlamaStyle(layers=lambda cfg, n: periodic(cfg, n, period=2, window_default=128),
                   qkv_bias="attention_bias", o_bias="attention_bias",
                   attention_bias_default=True, sinks=True,
                   head_dim_default=64, moe=_moe,
                   peft_default_targets=None)   # none in PEFT 0.21's table


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a gpt-oss config (see module docstring)."""
    return describe_llama_like(cfg, STYLE)
