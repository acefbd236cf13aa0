"""Qwen2 / Qwen2.5 (``model_type: qwen2``; also DeepSeek-R1-Distill-Qwen).

Source: transformers ``models/qwen2/modeling_qwen2.py`` and ``configuration_qwen2.py``:
q, k and v projections always carry a bias, o does not; no MLP bias; untied by default; layers
``i >= max_window_layers`` slide only when ``use_sliding_window`` is true.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .layer_pattern import qwen_window
from .llama_like import PEFT_Q_V, LlamaStyle, describe_llama_like

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset()
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""

STYLE = LlamaStyle(layers=qwen_window, qkv_bias="always", peft_default_targets=PEFT_Q_V)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a Qwen2 config (see module docstring)."""
    return describe_llama_like(cfg, STYLE)
