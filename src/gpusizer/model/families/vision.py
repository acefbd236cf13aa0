"""Vision towers of vision-language models: parameter counting (pure, no config reading).

SigLIP (Gemma 3's ``vision_tower``; transformers 5.24 ``models/siglip/modeling_siglip.py``
``SiglipVisionTransformer``): ``patch_embedding`` Conv2d(3 → h, p × p) with bias, a learned
``position_embedding`` of (image_size / p)² × h, per encoder layer two LayerNorms (weight and
bias), q/k/v/out projections h × h with bias and an MLP ``fc1`` h → I, ``fc2`` I → h with bias,
a ``post_layernorm``, and, when ``vision_use_head``, the attention-pooling head (``probe`` h,
``in_proj`` 3h × h + 3h, ``out_proj``, a LayerNorm and an MLP).
"""

from __future__ import annotations

from ..config_reader import ConfigReader
from ..facts import ParamGroup

__all__ = ["siglip_vision_tower"]


def siglip_vision_tower(v: ConfigReader, *, use_head_default: bool) -> tuple[int, ParamGroup]:
    """(hidden size, the tower's parameter group) of a SigLIP ``vision_config``.

    Defaults are ``SiglipVisionConfig``'s (hidden 768, MLP 3072, 12 layers, image 224, patch 16,
    3 channels).
    """
    h = v.optional_int("hidden_size", 768)
    inter = v.optional_int("intermediate_size", 3072)
    layers = v.optional_int("num_hidden_layers", 12)
    image, patch = v.optional_int("image_size", 224), v.optional_int("patch_size", 16)
    channels = v.optional_int("num_channels", 3)
    v.mark_used("num_attention_heads", "hidden_act", "layer_norm_eps", "attention_dropout",
                "model_type")
    mlp = inter * h + inter + h * inter + h
    per_layer = 2 * 2 * h + 4 * (h * h + h) + mlp
    total = (h * channels * patch * patch + h + (image // patch) ** 2 * h + layers * per_layer
             + 2 * h)
    if v.flag("vision_use_head", use_head_default):
        total += h + 3 * h * h + 3 * h + h * h + h + 2 * h + mlp
    return h, ParamGroup("vision_tower", total, "other")
