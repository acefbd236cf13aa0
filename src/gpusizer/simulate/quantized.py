"""bitsandbytes 4-bit (nf4 / fp4) layers on fake tensors, by their stored tensors' exact sizes.

A ``Linear4bit`` holds its weight packed two values per byte (``ceil(n / 2)`` uint8) and one
absmax per 64-value block (fp32; with double quantization an 8-bit absmax per block plus one
fp32 per 256 blocks). Its matmul dequantizes the whole weight to the compute dtype for the
duration of one ``F.linear`` (forward, and again in backward for the input gradient), then
frees it: the one-layer dequantization transient. A single-token no-grad call takes bitsandbytes'
``gemv_4bit`` kernel, which dequantizes in registers (no transient).

Sources: bitsandbytes ``nn/modules.py`` (``Params4bit``, ``Linear4bit``), ``autograd/_functions.py``
(``MatMul4Bit``: ``F.linear(A, dequantize_4bit(B).to(A.dtype).t())``; backward
``grad_output @ dequantize_4bit(B).t()``; ``matmul_4bit`` → ``gemv_4bit`` for one token),
``functional.py`` (``quantize_4bit`` blocksize 64, nested absmax blocks of 256); Dettmers et al.
2023 (QLoRA) §2.
"""

from __future__ import annotations

import torch

from ..formats.bnb import BNB_BLOCK, BNB_DQ_BLOCK

__all__ = ["FORMATS", "BNB4_BLOCK", "BNB4_NESTED_BLOCK", "packed_sizes", "quantize_linears",
           "Linear4bit"]

FORMATS = ("nf4", "fp4")
"""Formats this module lays out (the others: ``quantized_layouts.py``)."""

BNB4_BLOCK = BNB_BLOCK
"""Values per absmax block (bitsandbytes ``quantize_4bit`` blocksize for 4-bit weights)."""

BNB4_NESTED_BLOCK = BNB_DQ_BLOCK
"""Absmax values per second-level block under double quantization."""


def packed_sizes(n: int, double_quant: bool) -> dict[str, tuple[int, str]]:
    """Stored tensors of one 4-bit matrix of ``n`` values: name → (elements, dtype) (pure).

    ``weight`` ⌈n/2⌉ uint8; ``absmax`` ⌈n/64⌉ fp32, or with double quantization ⌈n/64⌉ uint8 +
    ``nested_absmax`` ⌈⌈n/64⌉/256⌉ fp32.
    """
    blocks = -(-n // BNB4_BLOCK)
    out = {"weight": (-(-n // 2), "uint8")}
    if double_quant:
        out["absmax"] = (blocks, "uint8")
        out["nested_absmax"] = (-(-blocks // BNB4_NESTED_BLOCK), "float32")
    else:
        out["absmax"] = (blocks, "float32")
    return out


def _skip(name: str) -> bool:
    # kept in the compute dtype, as gpusizer's estimate counts them: the output head and MoE
    # routers (``mlp.gate`` / ``router``)
    last = name.rsplit(".", 1)[-1]
    return last in ("lm_head", "gate", "router") or "router" in name


def quantize_linears(model, *, compute_dtype, double_quant: bool, converted: bool,
                     track, make=None) -> tuple[int, int]:
    """Replace the decoder's ``nn.Linear`` layers by quantized ones (call under fake tensors).

    Args:
        model: the transformers model, built while the tracker was paused.
        compute_dtype: the torch dtype the matmuls run in.
        double_quant: nested absmax quantization.
        converted: True when the checkpoint stores 16-bit weights converted while loading: each
            matrix is first loaded in the compute dtype (a transient of one matrix).
        track: the tracker's ``track`` (the kept parameters are counted before the conversion).
        make: ``make(linear) -> module`` for another layout (``quantized_layouts.PackedLinear``);
            None → bitsandbytes ``Linear4bit``.

    Returns:
        (layers replaced, values quantized).
    """
    targets = [(name, m) for name, m in model.named_modules()
               if type(m) is torch.nn.Linear and not _skip(name)]
    target_weights = {id(m.weight) for _, m in targets}
    for p in model.parameters():
        if id(p) not in target_weights:
            track(p)
    for b in model.buffers():
        track(b)
    if make is None:
        def make(m):
            return Linear4bit(m.in_features, m.out_features, bias=m.bias,
                              compute_dtype=compute_dtype, double_quant=double_quant,
                              loaded=converted)
    values = 0
    for name, m in targets:
        parent = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
        setattr(parent, name.rsplit(".", 1)[-1], make(m))
        values += m.in_features * m.out_features
    return len(targets), values


class _MatMul4Bit(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, layer):
        ctx.layer = layer
        w = layer.dequantized(x.dtype)
        bias = None if layer.bias is None else layer.bias.to(x.dtype)
        out = torch.nn.functional.linear(x, w, bias)
        del w
        return out

    @staticmethod
    def backward(ctx, grad_out):
        w = ctx.layer.dequantized(grad_out.dtype)
        return grad_out @ w, None

class Linear4bit(torch.nn.Linear):
    """A 4-bit linear: packed weight + absmax at their stored sizes (see module doc)."""

    metadata_names = ("absmax", "nested_absmax")

    def __init__(self, in_features, out_features, *, bias, compute_dtype, double_quant,
                 loaded):
        torch.nn.Module.__init__(self)
        self.in_features, self.out_features = in_features, out_features
        self.compute_dtype = compute_dtype
        n = in_features * out_features
        if loaded:  # the 16-bit matrix as stored, on the GPU before quantize_4bit
            transient = torch.empty((out_features, in_features), dtype=compute_dtype)
        sizes = packed_sizes(n, double_quant)
        count, _ = sizes["weight"]
        self.weight = torch.nn.Parameter(torch.empty((count, 1), dtype=torch.uint8),
                                         requires_grad=False)
        for key in ("absmax", "nested_absmax"):
            if key in sizes:
                c, dt = sizes[key]
                self.register_buffer(key, torch.empty(c, dtype=getattr(torch, dt)))
        if loaded:
            del transient
        self.bias = bias

    def dequantized(self, dtype):
        w = torch.empty((self.out_features, self.in_features), dtype=self.compute_dtype)
        return w if dtype == self.compute_dtype else w.to(dtype)

    def forward(self, x):
        # bitsandbytes Linear4bit.forward: the input is cast to the compute dtype, the matmul
        # runs there, the output is cast back to the input's dtype
        inp_dtype = x.dtype
        x = x.to(self.compute_dtype)
        if x.numel() == x.shape[-1] and not torch.is_grad_enabled():
            # gemv_4bit: one token, dequantized in registers
            out = torch.empty((*x.shape[:-1], self.out_features), dtype=x.dtype)
        else:
            out = _MatMul4Bit.apply(x, self)
        return out.to(inp_dtype)
