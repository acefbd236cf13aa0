"""Qwen2.5-VL (``model_type: qwen2_5_vl``; Qwen/Qwen2.5-VL-3B-Instruct, -7B-Instruct, -72B).

Source: transformers 5.24 ``models/qwen2_5_vl/modeling_qwen2_5_vl.py`` and
``configuration_qwen2_5_vl.py``: ``Qwen2_5_VLForConditionalGeneration`` holds a Qwen2-shaped
text model (q/k/v with bias, o without, RMSNorms; see ``qwen2.py``) on ``text_config`` — the
Hub's config.json states those keys at its top level, which the config class moves there — and
the ``visual`` tower on ``vision_config`` (``vision.py``, whose merger projects to the text
width); ``lm_head`` untied by default; M-RoPE has no parameter.

Image tokens: ``Qwen2VLImageProcessor`` resizes each image by ``smart_resize`` (factor
``patch_size × spatial_merge_size`` = 28, ``min_pixels`` 56·56, ``max_pixels`` 28·28·1280) and
the processor puts ``grid_t·grid_h·grid_w / merge²`` = (h/28)·(w/28) tokens per image
(``processing_qwen2_5_vl.py``). PEFT 0.21's default LoRA targets for qwen2_5_vl are q_proj,
v_proj; the vision tower's linears are not listed as LoRA modules here.
"""

from __future__ import annotations

from dataclasses import replace

from ..architecture import Architecture
from ..config_reader import ConfigReader
from ..facts import VisionTower
from . import qwen2
from .vision import qwen2_5_vision_tower

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({
    "image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id",
    "vision_token_id",
})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``):
token ids."""


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a Qwen2.5-VL config (see module docstring).

    Raises:
        ModelError: a required text key is missing, or a sub-config is not an object.
    """
    tie = cfg.flag("tie_word_embeddings", False)
    text_cfg = (cfg.sub("text_config", tie_word_embeddings=tie) if cfg.has("text_config")
                else cfg)
    text = qwen2.describe(text_cfg)
    vcfg = cfg.sub("vision_config")
    tower = qwen2_5_vision_tower(vcfg)
    vision = VisionTower(tower.count, "grid", patch_size=vcfg.optional_int("patch_size", 14),
                         merge_size=vcfg.optional_int("spatial_merge_size", 2))
    return replace(text, params=text.params + (tower,), vision=vision,
                   notes=text.notes + (f"vision tower {tower.count:,} parameters; "
                                       "(h/28)·(w/28) tokens per image after smart_resize",))
