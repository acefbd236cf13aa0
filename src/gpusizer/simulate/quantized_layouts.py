"""int8, fp8, GPTQ and AWQ linears on fake tensors, by their stored tensors' exact sizes.

Per linear of ``in`` inputs and ``out`` outputs, with ``G = ⌈in / group_size⌉`` groups (one
group when ``group_size`` ≤ 0) and fp8 blocks ``(bo, bi)``:

- int8 (bitsandbytes LLM.int8): ``weight`` int8 [out, in] + ``SCB`` fp32 [out] (row absmax).
  The matmul quantizes the input row-wise (int8 [T, in] + fp32 [T]), multiplies into int32
  [T, out] and dequantizes to fp16 [T, out] before casting to the input's dtype: a per-call
  transient of ``T·in + 4T + 4·T·out + 2·T·out`` bytes (estimate's ``_linear_transient``).
  Its backward dequantizes the whole weight (``CB.to(dtype_A).mul_(SCB / 127)``) for the
  input gradient: a one-layer transient of out·in × the input's bytes. Not modelled: the fp16
  copy of a bf16 input (``A.to(float16)``) and the outlier columns above
  ``llm_int8_threshold`` (data-dependent), both outside estimate's formula too.
  Sources: bitsandbytes ``nn/modules.py`` (``Int8Params``, ``Linear8bitLt``),
  ``autograd/_functions.py`` (``MatMul8bitLt``), ``functional.py`` (``int8_vectorwise_quant``,
  ``int8_linear_matmul``, ``int8_mm_dequant``); Dettmers et al. 2022 §3.
- fp8 (transformers FineGrainedFP8): ``weight`` float8_e4m3fn [out, in] + ``weight_scale_inv``
  fp32 [⌈out/bo⌉, ⌈in/bi⌉] (``weight_block_size``, default 128 × 128). The Triton
  ``w8a8_block_fp8_matmul`` works tile by tile; estimate counts no matmul transient, and neither
  does this module (the output alone). Sources: transformers ``integrations/finegrained_fp8.py``
  (``FP8Linear``), ``utils/quantization_config.py`` (``FineGrainedFP8Config``).
- gptq-int4: ``qweight`` int32 [⌈in/8⌉, out], ``qzeros`` int32 [G, ⌈out/8⌉], ``scales`` fp16
  [G, out], ``g_idx`` int32 [in]. Sources: AutoGPTQ ``nn_modules/qlinear/qlinear_exllama.py``
  / ``qlinear_cuda.py`` (``QuantLinear.__init__``), GPTQModel ``nn_modules/qlinear``.
- awq-int4: ``qweight`` int32 [in, ⌈out/8⌉], ``qzeros`` int32 [G, ⌈out/8⌉], ``scales`` fp16
  [G, out]. Source: AutoAWQ ``awq/modules/linear/gemm.py`` (``WQLinear_GEMM.__init__``).

GPTQ and AWQ kernels (exllama, marlin, AWQ GEMM) dequantize tile by tile in registers: no
whole-matrix transient, forward or backward (LoRA on such a base trains the adapters only; the
input gradient is the one tensor the base's backward makes).

Byte totals equal gpusizer estimate's ``memory/weights.py`` arithmetic whenever ``in`` and ``out``
are multiples of 8 (every real checkpoint): qweight ``in·out/2``, scales ``2·G·out``, qzeros
``4·G·⌈out/8⌉``, g_idx ``4·in``, SCB ``4·out``, scale_inv ``4·⌈out/bo⌉·⌈in/bi⌉``.
"""

from __future__ import annotations

import torch

from ..formats import FP8_DEFAULT_BLOCK as _FP8_DEFAULT_BLOCK

__all__ = ["LAYOUT_FORMATS", "FP8_DEFAULT_BLOCK", "stored_tensors", "PackedLinear"]

LAYOUT_FORMATS = ("int8", "fp8", "gptq-int4", "awq-int4")
"""Formats this module lays out (nf4 / fp4: ``quantized.py``)."""

FP8_DEFAULT_BLOCK = _FP8_DEFAULT_BLOCK
"""``gpusizer.formats.FP8_DEFAULT_BLOCK``: ``FineGrainedFP8Config.weight_block_size`` default
(output rows, input columns)."""

_PACK = 8
"""4-bit values per int32 (GPTQ / AWQ packing)."""


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def stored_tensors(fmt: str, in_features: int, out_features: int, *, group_size: int = 128,
                   block: tuple[int, int] = FP8_DEFAULT_BLOCK) -> dict[str, tuple[tuple, str]]:
    """Stored tensors of one linear: name → (shape, torch dtype name) (pure).

    The first entry is the packed weight (counted as weights); the rest are metadata.

    Raises:
        ValueError: a format this module does not lay out.
    """
    i, o = in_features, out_features
    if fmt == "int8":
        return {"weight": ((o, i), "int8"), "SCB": ((o,), "float32")}
    if fmt == "fp8":
        return {"weight": ((o, i), "float8_e4m3fn"),
                "weight_scale_inv": ((_ceil(o, block[0] or o), _ceil(i, block[1] or i)),
                                     "float32")}
    groups = 1 if group_size <= 0 else _ceil(i, group_size)
    if fmt == "gptq-int4":
        return {"qweight": ((_ceil(i, _PACK), o), "int32"),
                "qzeros": ((groups, _ceil(o, _PACK)), "int32"),
                "scales": ((groups, o), "float16"), "g_idx": ((i,), "int32")}
    if fmt == "awq-int4":
        return {"qweight": ((i, _ceil(o, _PACK)), "int32"),
                "qzeros": ((groups, _ceil(o, _PACK)), "int32"),
                "scales": ((groups, o), "float16")}
    raise ValueError(f"format {fmt!r} is not laid out here; expected one of {LAYOUT_FORMATS}")


class _FusedMatMul(torch.autograd.Function):
    """A tile-wise kernel: the output, and in backward the input gradient, nothing else."""

    @staticmethod
    def forward(ctx, x, layer):
        ctx.shape, ctx.dtype = x.shape, x.dtype
        return x.new_empty((*x.shape[:-1], layer.out_features))

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.new_empty(ctx.shape, dtype=ctx.dtype), None


class _MatMul8bitLt(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, layer):
        ctx.layer, ctx.dtype = layer, x.dtype
        t = x.numel() // x.shape[-1]
        ca = torch.empty((t, layer.in_features), dtype=torch.int8)   # int8_vectorwise_quant
        sca = torch.empty((t,), dtype=torch.float32)                  # row absmax
        out32 = torch.empty((t, layer.out_features), dtype=torch.int32)  # int8_linear_matmul
        out16 = torch.empty((t, layer.out_features), dtype=torch.float16)  # int8_mm_dequant
        del ca, sca, out32
        out = out16.to(x.dtype).view(*x.shape[:-1], layer.out_features)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        layer = ctx.layer
        # CB.to(dtype_A, copy=True).mul_(SCB / 127): the whole weight in the input's dtype
        cb = torch.empty((layer.out_features, layer.in_features), dtype=ctx.dtype)
        grad = grad_out.to(ctx.dtype) @ cb
        del cb
        return grad, None


class PackedLinear(torch.nn.Linear):
    """An int8 / fp8 / GPTQ / AWQ linear: its stored tensors at their sizes (see module doc).

    The packed weight is a frozen parameter (counted as weights); the rest are buffers named in
    ``metadata_names`` (counted as quantization metadata).
    """

    def __init__(self, fmt, in_features, out_features, *, bias, compute_dtype, loaded,
                 group_size=128, block=FP8_DEFAULT_BLOCK):
        torch.nn.Module.__init__(self)
        self.fmt = fmt
        self.in_features, self.out_features = in_features, out_features
        self.compute_dtype = compute_dtype
        if loaded:  # the 16-bit matrix as stored, on the GPU before it is quantized
            transient = torch.empty((out_features, in_features), dtype=compute_dtype)
        tensors = stored_tensors(fmt, in_features, out_features, group_size=group_size,
                                 block=block)
        (wname, (shape, dt)), *meta = tensors.items()
        self.weight_name = wname
        setattr(self, wname, torch.nn.Parameter(torch.empty(shape, dtype=getattr(torch, dt)),
                                                requires_grad=False))
        for name, (shape, dt) in meta:
            self.register_buffer(name, torch.empty(shape, dtype=getattr(torch, dt)))
        self.metadata_names = tuple(name for name, _ in meta)
        if wname != "weight":
            # PEFT reads ``base_layer.weight`` of an ``nn.Linear``: the same tensor, counted once
            self.weight = getattr(self, wname)
        if loaded:
            del transient
        self.bias = bias

    def forward(self, x):
        if self.fmt == "int8":
            out = _MatMul8bitLt.apply(x, self)
        else:
            out = _FusedMatMul.apply(x, self)
        if self.bias is not None:
            out = out + self.bias.to(out.dtype)
        return out
