"""Tensor elements a checkpoint stores that are not logical parameters: scales and buffers.

``ModelFacts.total_parameters`` is what transformers instantiates as parameters. A pre-quantized
checkpoint also stores per-block scales, and transformers also loads persistent buffers; the Hub's
``safetensors.total`` counts both. These functions count them from the facts' matrix shapes.
"""

from __future__ import annotations

from math import ceil

from ..errors import ModelError
from .facts import QUANTIZABLE_ROLES, ModelFacts

__all__ = ["MXFP4_BLOCK", "scale_elements", "buffer_elements", "stored_tensor_elements"]

MXFP4_BLOCK = 32
"""Values sharing one E8M0 scale in MXFP4 (OCP Microscaling Formats spec v1.0, §5.1; gpt-oss
stores ``*_blocks`` (16 bytes = 32 fp4 values) and one ``*_scales`` byte per block)."""

_UNSCALED = frozenset({"bf16", "fp16", "fp32"})


def scale_elements(facts: ModelFacts) -> int:
    """Scale elements the checkpoint stores next to its packed weights.

    - fp8 with ``weight_block_size`` [br, bc] (DeepSeek-V3 ``weight_scale_inv``): Σ over the
      quantizable matrices of ⌈rows/br⌉·⌈cols/bc⌉ (transformers
      ``integrations/finegrained_fp8.py``).
    - mxfp4 (gpt-oss): Σ over routed-expert matrices of rows·⌈cols/32⌉; attention, router,
      embeddings and lm_head stay bf16 (config ``modules_to_not_convert``).
    - bf16 / fp16 / fp32: 0.

    Raises:
        ModelError: another stored format (its scale layout is not modelled here).
    """
    fmt, quant = facts.stored_format, facts.quantization_config or {}
    if fmt in _UNSCALED:
        return 0
    if fmt == "fp8" and isinstance(quant.get("weight_block_size"), list):
        br, bc = quant["weight_block_size"]
        return sum(n * ceil(r / br) * ceil(c / bc) for g in facts.architecture.params
                   if g.role in QUANTIZABLE_ROLES for n, r, c in g.shapes)
    if fmt == "mxfp4":
        return sum(n * r * ceil(c / MXFP4_BLOCK) for g in facts.architecture.params
                   if g.role == "expert_linear" for n, r, c in g.shapes)
    raise ModelError(f"the scale layout of stored format {fmt!r} is not modelled",
                     field="stored_format", value=fmt, file=facts.source_detail)


def buffer_elements(facts: ModelFacts) -> int:
    """Elements of persistent buffers transformers loads from the checkpoint (not parameters).

    The family declares them (``Architecture.persistent_buffers``): DeepSeek-V3's router
    ``e_score_correction_bias`` (``register_buffer``, float32), one per routed expert and MoE
    layer (transformers ``models/deepseek_v3/modeling_deepseek_v3.py``). Other families declare
    none (rotary ``inv_freq`` and GPT-2's causal mask are non-persistent in current
    transformers, though old checkpoints store them).
    """
    return sum(b.elements for b in facts.architecture.persistent_buffers)


def stored_tensor_elements(facts: ModelFacts) -> int:
    """Elements the loadable checkpoint stores: parameters + scales + persistent buffers.

    Packed values are counted as values (an mxfp4 byte holds two). Layers transformers does not
    load (DeepSeek's MTP layer) and untied copies of tied weights are not included.

    Raises:
        ModelError: see :func:`scale_elements`.
    """
    return facts.architecture.total_parameters + scale_elements(facts) + buffer_elements(facts)
