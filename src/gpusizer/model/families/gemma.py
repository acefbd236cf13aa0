"""Gemma (``model_type: gemma``; Gemma 1).

Source: transformers ``models/gemma/modeling_gemma.py`` and ``configuration_gemma.py``:
Llama's shape with ``head_dim`` explicit (256), q/k/v/o biases only with ``attention_bias``,
2 RMSNorms per layer, the embedding scaled by sqrt(hidden) (no extra parameter), lm_head tied by
default, every layer full attention.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .layer_pattern import full_only
from .llama_like import PEFT_Q_V, LlamaStyle, describe_llama_like

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset()
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""

STYLE = LlamaStyle(layers=lambda cfg, n: full_only(n), tie_default=True,
                   qkv_bias="attention_bias", o_bias="attention_bias",
                   peft_default_targets=PEFT_Q_V)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a Gemma config (see module docstring)."""
    return describe_llama_like(cfg, STYLE)
