"""DeepSeek-V2 / V2-Lite (``model_type: deepseek_v2``).

Source: transformers ``models/deepseek_v2/modular_deepseek_v2.py``; shapes in :mod:`.mla_moe`.
V2's router is a plain ``nn.Linear`` without bias or correction buffer; ``q_lora_rank`` is null
in V2-Lite (direct ``q_proj``); the shared expert exists only when ``n_shared_experts`` is set.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .mla_moe import ROUTING_KEYS, describe_mla_moe

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = ROUTING_KEYS
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a DeepSeek-V2 config (see module docstring)."""
    return describe_mla_moe(cfg)
