"""Tensor elements a checkpoint stores that are not logical parameters: scales and buffers.

``ModelFacts.total_parameters`` is what transformers instantiates as parameters. A pre-quantized
checkpoint also stores per-block scales, and transformers also loads persistent buffers; the Hub's
``safetensors.total`` counts both. These functions count them from the facts' matrix shapes.
"""

from __future__ import annotations

from ..errors import ModelError
from ..formats import Matrices, quant_params, weight_format
from .facts import ModelFacts

__all__ = ["scale_elements", "buffer_elements", "stored_tensor_elements"]


def scale_elements(facts: ModelFacts) -> int:
    """Scale elements the checkpoint stores next to its packed weights: the stored format's
    metadata elements (``gpusizer.formats``) over the matrices it packs, with the checkpoint's
    own quantization parameters.

    - fp8 (DeepSeek-V3 ``weight_scale_inv``): Σ over the quantizable matrices of
      ⌈rows/br⌉·⌈cols/bc⌉ for the checkpoint's ``weight_block_size`` [br, bc] (transformers
      ``integrations/finegrained_fp8.py``).
    - mxfp4 (gpt-oss): Σ over routed-expert matrices of rows·⌈cols/32⌉; attention, router,
      embeddings and lm_head stay bf16 (config ``modules_to_not_convert``).
    - bf16 / fp16 / fp32: 0.

    Raises:
        ModelError: a stored format whose scale elements are not modelled (a layout that packs
            several values per element, or an unknown format).
    """
    fmt = facts.stored_format
    rec = weight_format(fmt) if fmt is not None else None
    if rec is not None and rec.dense:
        return 0
    meta = None
    if rec is not None:
        roles = rec.packs(None, facts.quant)
        groups = [g for g in facts.architecture.params if roles is None or g.role in roles]
        quant = quant_params(None, facts.quant, fmt, stored_format=fmt)
        meta = rec.metadata(Matrices.of(groups, facts.architecture.hidden_size), quant)
    if meta is None or meta.elements is None:
        raise ModelError(f"the scale layout of stored format {fmt!r} is not modelled",
                         field="stored_format", value=fmt, file=facts.source_detail)
    return meta.elements


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
