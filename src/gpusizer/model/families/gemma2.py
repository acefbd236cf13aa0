"""Gemma 2 (``model_type: gemma2``).

Source: transformers ``models/gemma2/modeling_gemma2.py`` and ``configuration_gemma2.py``:
4 RMSNorms per layer (input, post-attention, pre- and post-feedforward), tied by default,
``layer_types`` alternating sliding / full from layer 0 (layer 0 slides) with ``sliding_window``
default 4096. Logit soft-capping and ``query_pre_attn_scalar`` change no shape.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .layer_pattern import periodic
from .llama_like import PEFT_Q_V, LlamaStyle, describe_llama_like

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({
    "attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar"})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""

STYLE = LlamaStyle(layers=lambda cfg, n: periodic(cfg, n, period=2, window_default=4096),
                   tie_default=True, qkv_bias="attention_bias", o_bias="attention_bias",
                   norms_per_layer=4, peft_default_targets=PEFT_Q_V)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a Gemma 2 config (see module docstring)."""
    return describe_llama_like(cfg, STYLE)
