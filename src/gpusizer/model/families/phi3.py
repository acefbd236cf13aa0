"""Phi-3 / Phi-4 (``model_type: phi3``).

Source: transformers ``models/phi3/modeling_phi3.py`` and ``configuration_phi3.py``: fused
``qkv_proj`` (hidden → (heads + 2·kv_heads)·head_dim) and ``gate_up_proj`` (hidden →
2·intermediate), no biases, 2 RMSNorms per layer, untied by default; a non-null
``sliding_window`` applies to every layer. Dropouts and ``partial_rotary_factor`` change no shape.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .layer_pattern import uniform_window
from .llama_like import LlamaStyle, describe_llama_like

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset()
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""

# PEFT 0.21 has no default LoRA targets for phi3 (peft/utils/constants.py)
STYLE = LlamaStyle(layers=uniform_window, fused=True, peft_default_targets=None)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a Phi-3 config (see module docstring)."""
    return describe_llama_like(cfg, STYLE)
