"""Qwen3 dense (``model_type: qwen3``).

Source: transformers ``models/qwen3/modeling_qwen3.py`` and ``configuration_qwen3.py``:
per-head RMSNorm on q and k (``q_norm``, ``k_norm``: head_dim each), q/k/v/o biases only with
``attention_bias``, ``head_dim`` default 128 (not hidden / heads: ``Qwen3Config.head_dim``),
untied by default, Qwen2's sliding-window rule.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .layer_pattern import qwen_window
from .llama_like import PEFT_Q_V, LlamaStyle, describe_llama_like

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset()
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""

STYLE = LlamaStyle(layers=qwen_window, qkv_bias="attention_bias", o_bias="attention_bias",
                   qk_norm=True, head_dim_default=128,
                   peft_default_targets=PEFT_Q_V)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a Qwen3 config (see module docstring)."""
    return describe_llama_like(cfg, STYLE)
