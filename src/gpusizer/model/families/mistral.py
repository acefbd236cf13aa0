"""Mistral (``model_type: mistral``).

Source: transformers ``models/mistral/modeling_mistral.py`` and ``configuration_mistral.py``:
Llama's shape without any bias, explicit ``head_dim`` when given (Mistral-Nemo), untied by
default; a non-null ``sliding_window`` applies to every layer (Mistral-7B-v0.1: 4096;
v0.3: null).
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .layer_pattern import uniform_window
from .llama_like import PEFT_Q_V, LlamaStyle, describe_llama_like

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset()
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""

STYLE = LlamaStyle(layers=uniform_window, peft_default_targets=PEFT_Q_V)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a Mistral config (see module docstring)."""
    return describe_llama_like(cfg, STYLE)
