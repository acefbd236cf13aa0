"""Gemma 3 with its vision tower (``model_type: gemma3``; google/gemma-3-4b-it, -12b-it, -27b-it).

Source: transformers 5.24 ``models/gemma3/modeling_gemma3.py`` and ``configuration_gemma3.py``:
``Gemma3ForConditionalGeneration`` holds a Gemma 3 text model on ``text_config`` (see
``gemma3_text.py``), a SigLIP ``vision_tower`` on ``vision_config`` (``vision.py``; Gemma 3's
configs set ``vision_use_head: false``, ``SiglipVisionConfig`` defaults to true) and a
``multi_modal_projector`` (``mm_input_projection_weight`` vision h × text h and
``mm_soft_emb_norm`` of vision h); ``lm_head`` is tied to the text embeddings
(``tie_word_embeddings`` true).

Image tokens: ``Gemma3Processor`` expands each image to ``image_seq_length`` =
``mm_tokens_per_image`` (256) soft tokens (``processing_gemma3.py`` ``full_image_sequence``,
``_get_num_multimodal_tokens``: 256 per image); pan & scan crops are off by default
(``do_pan_and_scan: False``). PEFT 0.21's default LoRA targets for gemma3 are q_proj, v_proj; the
vision tower's linears are not listed as LoRA modules here.
"""

from __future__ import annotations

from dataclasses import replace

from ..architecture import Architecture
from ..config_reader import ConfigReader
from ..facts import ParamGroup, VisionTower
from . import gemma3_text
from .vision import siglip_vision_tower

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({
    "boi_token_index", "eoi_token_index", "image_token_index",     # token ids
})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a Gemma 3 vision-language config.

    Raises:
        ModelError: a required key of ``text_config`` is missing, or a sub-config is not an
            object.
    """
    tie = cfg.flag("tie_word_embeddings", True)
    text = gemma3_text.describe(cfg.sub("text_config", tie_word_embeddings=tie))
    vision_h, tower = siglip_vision_tower(cfg.sub("vision_config"), use_head_default=True)
    projector = ParamGroup("multi_modal_projector", vision_h * text.hidden_size + vision_h,
                           "other")
    tokens = cfg.optional_int("mm_tokens_per_image", 256)
    vision = VisionTower(tower.count + projector.count, "fixed", tokens_per_image=tokens)
    return replace(text, params=text.params + (tower, projector), vision=vision,
                   notes=text.notes + (f"vision tower {vision.parameters:,} parameters; "
                                       f"{tokens} tokens per image",))
