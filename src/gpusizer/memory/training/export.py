"""The export phase: what ``training.export`` writes, and its GPU transient.

adapter: the adapter tensors (safetensors copies each tensor to host, no GPU allocation);
merged: PEFT ``merge_and_unload`` adds ``scale · B @ A`` to each adapted weight in place — one
delta matrix at a time (``get_delta_weight``), and a 4-bit base is dequantized, merged and
re-quantized (bitsandbytes ``Linear4bit`` merge): the largest adapted matrix × (c + adapter
bytes); the merged model is written in the compute dtype; full: the trained weights.
"""

from __future__ import annotations

from ...formats import weight_format
from ...model.facts import ModelFacts
from ..items import Item
from ..lora import LoraAdapters
from .dtypes import TrainingDtypes

__all__ = ["export_items"]


def export_items(mode: str, facts: ModelFacts, adapters: LoraAdapters | None,
                 dtypes: TrainingDtypes, *, runs: str) -> tuple[int, list[Item]]:
    """Bytes the export writes (0 for ``none``) and its transient item (merged only). The
    sheet refuses an export the task cannot write (``adapter``/``merged`` without LoRA, ``full``
    with it)."""
    if mode == "none":
        return 0, []
    trained_width, width = dtypes.trainable_bytes, dtypes.compute_bytes
    parameters = facts.architecture.total_parameters
    if mode == "adapter":
        return adapters.parameters * trained_width, []
    if mode == "full":
        return parameters * trained_width, []
    largest = max((m.rows * m.cols * max(1, m.experts) for m in adapters.modules), default=0)
    extra = width if weight_format(runs).merge_requantizes else 0
    written = parameters * width
    return written, [Item("export_transient", largest * (trained_width + extra), "estimated",
                          ("export",),
                          "PEFT merge_and_unload (LoraLayer.get_delta_weight), bitsandbytes "
                          "Linear4bit/Linear8bitLt merge (dequantize, add, re-quantize)",
                          f"largest adapted matrix {largest} values × ({trained_width} + "
                          f"{extra}) B; writes {written} B ({parameters} × {width} B)")]
