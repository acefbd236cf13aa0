"""Llama (``model_type: llama``; Llama 2, Llama 3.x, TinyLlama).

Source: transformers ``models/llama/modeling_llama.py`` and ``configuration_llama.py``:
q/k/v/o biases only with ``attention_bias`` (default false), MLP biases only with ``mlp_bias``
(default false), 2 RMSNorms per layer, explicit ``head_dim`` when given, untied by default, every
layer full attention. ``pretraining_tp`` only splits the matmuls, not the weights.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .layer_pattern import full_only
from .llama_like import PEFT_Q_V, LlamaStyle, describe_llama_like

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset()
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""

STYLE = LlamaStyle(layers=lambda cfg, n: full_only(n), qkv_bias="attention_bias",
                   o_bias="attention_bias", mlp_bias=True, peft_default_targets=PEFT_Q_V)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a Llama config (see module docstring)."""
    return describe_llama_like(cfg, STYLE)
