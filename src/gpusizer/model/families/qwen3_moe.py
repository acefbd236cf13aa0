"""Qwen3-MoE (``model_type: qwen3_moe``; Qwen3-30B-A3B, Qwen3-235B-A22B).

Source: transformers ``models/qwen3_moe/modeling_qwen3_moe.py`` and
``configuration_qwen3_moe.py``: Qwen3 attention (q/k norms); layer ``i`` is MoE when it is not in
``mlp_only_layers`` and ``(i + 1) % decoder_sparse_step == 0`` (default step 1), else a dense MLP
of ``intermediate_size``. A MoE layer has a router (hidden → ``num_experts``, no bias) and
``num_experts`` gated experts of ``moe_intermediate_size``; no shared expert. Untied by default.
``Qwen3MoeConfig`` has no ``head_dim`` default: absent, it is hidden / heads (released configs give
it: Qwen3-30B-A3B's 128 ≠ 2048 / 32). Sliding windows follow Qwen2's rule; no released Qwen3-MoE
config enables them.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from ..facts import MoeDims
from .decoder import Experts, Linear, mlp
from .layer_pattern import qwen_window
from .llama_like import Dims, LlamaStyle, MoeBlock, describe_llama_like

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({"norm_topk_prob"})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""


def _moe(cfg: ConfigReader, d: Dims) -> MoeBlock:
    # Hub checkpoints write num_experts; transformers 5.x saves it as num_local_experts
    # (Qwen3MoeConfig.attribute_map = {"num_experts": "num_local_experts"})
    experts = cfg.require_int("num_local_experts" if cfg.has("num_local_experts")
                              and not cfg.has("num_experts") else "num_experts")
    width = cfg.require_int("moe_intermediate_size")
    step = cfg.optional_int("decoder_sparse_step", 1)
    dense_only = set(cfg.int_list("mlp_only_layers"))
    is_moe = tuple(i not in dense_only and (i + 1) % step == 0 for i in range(d.num_layers))
    block = Experts(count=experts, expert=mlp(d.hidden_size, width, gated=True),
                    router=Linear(experts, d.hidden_size, role="router"))
    dims = MoeDims(num_experts=experts,
                   experts_per_token=cfg.optional_int("num_experts_per_tok", 8),
                   expert_intermediate_size=width, num_shared_experts=0,
                   moe_layers=sum(is_moe))
    return MoeBlock(block, is_moe, dims)


# PEFT 0.21 has no default LoRA targets for qwen3_moe (peft/utils/constants.py)
STYLE = LlamaStyle(layers=qwen_window, qkv_bias="attention_bias", o_bias="attention_bias",
                   qk_norm=True, moe=_moe, peft_default_targets=None)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a Qwen3-MoE config (see module docstring)."""
    return describe_llama_like(cfg, STYLE)
