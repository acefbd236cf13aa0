"""Mixtral (``model_type: mixtral``).

Source: transformers ``models/mixtral/modeling_mixtral.py`` and ``configuration_mixtral.py``:
Mistral's attention (no bias) and window rule; every layer is a sparse MoE block with a router
(``gate``: hidden → ``num_local_experts``, no bias) and ``num_local_experts`` gated experts
(w1, w3: hidden → intermediate_size; w2 back), top-``num_experts_per_tok`` (default 2); no dense
MLP and no shared expert. Untied by default.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from ..facts import MoeDims
from .decoder import Experts, Linear, mlp
from .layer_pattern import uniform_window
from .llama_like import Dims, LlamaStyle, MoeBlock, describe_llama_like

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({"router_jitter_noise"})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""


def _moe(cfg: ConfigReader, d: Dims) -> MoeBlock:
    experts = cfg.require_int("num_local_experts")
    width = cfg.require_int("intermediate_size")
    # the checkpoint's per-expert names (w1 gate, w3 up, w2 down), which v5 stacks at load
    block = Experts(count=experts,
                    expert=mlp(d.hidden_size, width, gated=True, names=("w1", "w3", "w2")),
                    router=Linear(experts, d.hidden_size, role="router"))
    dims = MoeDims(num_experts=experts,
                   experts_per_token=cfg.optional_int("num_experts_per_tok", 2),
                   expert_intermediate_size=width, num_shared_experts=0,
                   moe_layers=d.num_layers)
    return MoeBlock(block, (True,) * d.num_layers, dims)


# PEFT's table lists mixtral (q_proj, v_proj), but get_peft_model then raises
# NoMatchingPeftModuleError on transformers v5's Mixtral (tests/memory/test_lora.py): no default
STYLE = LlamaStyle(layers=uniform_window, moe=_moe, peft_default_targets=None)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a Mixtral config (see module docstring)."""
    return describe_llama_like(cfg, STYLE)
