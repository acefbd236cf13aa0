"""The tokens the images of one request add to its prompt (vision-language models).

Each processor has its own rule (``facts.architecture.vision.rule``):

- ``fixed`` (Gemma 3): every image becomes ``tokens_per_image`` soft tokens, 256 for every
  Gemma 3 (transformers 5.24 ``models/gemma3/processing_gemma3.py``: ``image_seq_length`` =
  ``mm_tokens_per_image``; ``_get_num_multimodal_tokens`` returns it per image), with pan & scan
  crops off by default (``do_pan_and_scan: False``);
- ``grid`` (Qwen2-VL, Qwen2.5-VL): the image is resized by ``smart_resize`` to sides that are
  multiples of ``factor = patch_size × merge_size`` (28) with an area within [``min_pixels``,
  ``max_pixels``] (56 × 56 and 28 × 28 × 1280 by default), then it gives
  ``(h / 28) × (w / 28)`` tokens (``models/qwen2_vl/image_processing_qwen2_vl.py``
  ``smart_resize``; ``models/qwen2_5_vl/processing_qwen2_5_vl.py``: ``grid_thw.prod() //
  merge_size²``).

The wrapper tokens a chat template puts around each image (Gemma's ``<start_of_image>`` /
``<end_of_image>``, Qwen's ``<|vision_start|>`` / ``<|vision_end|>``) are text the prompt already
counts.
"""

from __future__ import annotations

import math

from ..errors import SheetError
from ..model.facts import ModelFacts, VisionTower

__all__ = ["image_tokens_per_request", "tokens_per_image", "smart_resize"]

_MAX_ASPECT = 200
"""``smart_resize`` refuses an image whose long side exceeds 200 × its short side."""


def smart_resize(height: int, width: int, *, factor: int, min_pixels: int,
                 max_pixels: int) -> tuple[int, int]:
    """Qwen2-VL's resize: sides rounded to multiples of ``factor``, area within
    [``min_pixels``, ``max_pixels``], aspect ratio kept as closely as possible (pixels).

    Source: transformers 5.24 ``models/qwen2_vl/image_processing_qwen2_vl.py`` ``smart_resize``.

    Raises:
        SheetError: the aspect ratio exceeds 200 (the processor refuses it).
    """
    if max(height, width) > _MAX_ASPECT * min(height, width):
        raise SheetError(f"aspect ratio {max(height, width) / min(height, width):.0f} exceeds "
                         f"{_MAX_ASPECT}: the processor refuses the image",
                         field="inference.images", value=f"{width}x{height}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def tokens_per_image(vision: VisionTower, *, width: int, height: int) -> int:
    """Tokens one ``width × height`` image adds under the model's processor rule."""
    if vision.rule == "fixed":
        return vision.tokens_per_image
    factor = vision.patch_size * vision.merge_size
    h, w = smart_resize(height, width, factor=factor, min_pixels=vision.min_pixels,
                        max_pixels=vision.max_pixels)
    return (h // factor) * (w // factor)


def image_tokens_per_request(facts: ModelFacts | None, *, per_request: int, width: int,
                             height: int) -> tuple[int, str]:
    """(tokens, the rule in words) the images of one request add to its prompt.

    Raises:
        SheetError: images are given for a model without a vision tower.
    """
    if not per_request:
        return 0, ""
    vision = facts.architecture.vision if facts is not None else None
    if vision is None:
        raise SheetError("the model has no vision tower, so it takes no images (set "
                         "per_request to 0)", field="inference.images.per_request",
                         value=per_request)
    each = tokens_per_image(vision, width=width, height=height)
    if vision.rule == "fixed":
        rule = f"{each} tokens per image (the processor's fixed count)"
    else:
        f = vision.patch_size * vision.merge_size
        h, w = smart_resize(height, width, factor=f, min_pixels=vision.min_pixels,
                            max_pixels=vision.max_pixels)
        rule = (f"{width}×{height} resized to {w}×{h} (smart_resize, factor {f}), "
                f"({h}/{f})×({w}/{f}) = {each} tokens per image")
    return per_request * each, f"{per_request} image(s) × {rule} = {per_request * each} tokens"
