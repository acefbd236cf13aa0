"""Gemma 3 text (``model_type: gemma3_text``; Gemma-3-1B and the text tower of larger Gemma 3).

Source: transformers ``models/gemma3/modeling_gemma3.py`` and ``configuration_gemma3.py``
(``Gemma3TextConfig``): Gemma 2's 4 norms per layer plus per-head q/k RMSNorms, tied by default;
every ``sliding_window_pattern``-th layer (default 6) is full, the others slide
(``sliding_window`` default 4096), unless ``layer_types`` lists them.
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

STYLE = LlamaStyle(
    layers=lambda cfg, n: periodic(cfg, n, period=6, window_default=4096,
                                   period_key="sliding_window_pattern"),
    tie_default=True, qkv_bias="attention_bias", o_bias="attention_bias", qk_norm=True,
    norms_per_layer=4, peft_default_targets=PEFT_Q_V)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a Gemma 3 text config (see module docstring)."""
    return describe_llama_like(cfg, STYLE)
