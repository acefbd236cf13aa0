"""DeepSeek-V3 / R1 (``model_type: deepseek_v3``).

Source: transformers ``models/deepseek_v3/modeling_deepseek_v3.py``; shapes in :mod:`.mla_moe`.
V3's router (``DeepseekV3TopkRouter``) holds ``weight`` (a parameter, counted) and
``e_score_correction_bias`` (``register_buffer``: loaded from the checkpoint but not a
parameter, so not counted; see ``stored_elements``). ``DeepseekV3Model`` ignores the
checkpoint's ``model.layers.61.*`` (``_keys_to_ignore_on_load_unexpected``): the MTP layer of
``num_nextn_predict_layers`` is not loaded and not counted.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .mla_moe import ROUTING_KEYS, describe_mla_moe

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = ROUTING_KEYS
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a DeepSeek-V3 config (see module docstring)."""
    return describe_mla_moe(cfg, correction_bias=True, notes=(
        "router e_score_correction_bias is a buffer (loaded, not a parameter)",))
