"""Vision towers of vision-language models: parameter counting (pure, no config reading).

SigLIP (Gemma 3's ``vision_tower``; transformers 5.24 ``models/siglip/modeling_siglip.py``
``SiglipVisionTransformer``): ``patch_embedding`` Conv2d(3 → h, p × p) with bias, a learned
``position_embedding`` of (image_size / p)² × h, per encoder layer two LayerNorms (weight and
bias), q/k/v/out projections h × h with bias and an MLP ``fc1`` h → I, ``fc2`` I → h with bias,
a ``post_layernorm``, and, when ``vision_use_head``, the attention-pooling head (``probe`` h,
``in_proj`` 3h × h + 3h, ``out_proj``, a LayerNorm and an MLP).

Qwen2.5-VL's ``visual`` (``models/qwen2_5_vl/modeling_qwen2_5_vl.py``
``Qwen2_5_VisionTransformerPretrainedModel``): ``patch_embed`` Conv3d(3 → h, t × p × p) without
bias (t = ``temporal_patch_size``), per block two RMSNorms (h), a fused ``qkv`` 3h × h and
``proj`` h × h with bias, a gated MLP (``gate_proj``, ``up_proj`` h → I, ``down_proj`` back, with
bias), and the ``merger``: RMSNorm ``ln_q`` (h), ``mlp`` h·m² → h·m² and h·m² → out_hidden, with
bias (m = ``spatial_merge_size``).
"""

from __future__ import annotations

from ..config_reader import ConfigReader
from ..facts import ParamGroup

__all__ = ["siglip_vision_tower", "qwen2_5_vision_tower"]


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


def qwen2_5_vision_tower(v: ConfigReader) -> ParamGroup:
    """The parameter group of a Qwen2.5-VL ``vision_config`` (defaults:
    ``Qwen2_5_VLVisionConfig``: depth 32, hidden 3584, MLP 3420, patch 14, temporal patch 2,
    merge 2, out hidden 3584)."""
    h = v.optional_int("hidden_size", 3584)
    inter = v.optional_int("intermediate_size", 3420)
    depth = v.optional_int("depth", 32)
    patch, t = v.optional_int("patch_size", 14), v.optional_int("temporal_patch_size", 2)
    merge = v.optional_int("spatial_merge_size", 2)
    out = v.optional_int("out_hidden_size", 3584)
    channels = v.optional_int("in_channels", 3)
    v.mark_used("num_heads", "hidden_act", "tokens_per_second", "window_size",
                "fullatt_block_indexes", "rope_parameters", "model_type")
    per_block = 2 * h + 3 * h * h + 3 * h + h * h + h + 2 * (inter * h + inter) + h * inter + h
    wide = h * merge * merge
    merger = h + wide * wide + wide + out * wide + out
    return ParamGroup("vision_tower", h * channels * t * patch * patch + depth * per_block
                      + merger, "other")
