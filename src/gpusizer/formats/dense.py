"""fp32, fp16, bf16: every parameter stored and computed in the dtype itself.

4 / 2 / 2 bytes per value (IEEE 754 binary32 / binary16; bfloat16). bf16 needs compute
capability >= 8.0 (CUDA Programming Guide, "Arithmetic Instructions": bf16 arithmetic from
Ampere on); below it a GPU runs fp16 instead, which changes numerics (quality to confirm).
"""

from __future__ import annotations

from .record import ALL_ENGINES, Fallback, WeightFormat

__all__ = ["RECORDS"]

_LAYOUT = "every parameter in {dtype}, no metadata"
_QUALITY = "torch dtype {dtype} (from_pretrained dtype)"
_THROUGHPUT = "16-bit kernels"

FP32 = WeightFormat(
    name="fp32", family="dense", bits=32, layout=_LAYOUT.format(dtype="float32"), dense=True,
    torch_dtype="float32", lower=("bf16", "fp16", "int8", "nf4"), quality="dtype",
    quality_implementation=_QUALITY.format(dtype="float32"), throughput=_THROUGHPUT)

FP16 = WeightFormat(
    name="fp16", family="dense", bits=16, layout=_LAYOUT.format(dtype="float16"), dense=True,
    torch_dtype="float16", lower=("int8", "nf4"), quality="dtype",
    quality_implementation=_QUALITY.format(dtype="float16"), throughput=_THROUGHPUT)

BF16 = WeightFormat(
    name="bf16", family="dense", bits=16, layout=_LAYOUT.format(dtype="bfloat16"), dense=True,
    torch_dtype="bfloat16", lower=("int8", "nf4"), quality="dtype",
    quality_implementation=_QUALITY.format(dtype="bfloat16"), throughput=_THROUGHPUT,
    min_compute_capability=(8, 0),
    below_min={ALL_ENGINES: Fallback(
        "fp16", "bf16 needs CC >= 8.0 (card {cc}): no bf16 tensor cores; running fp16 instead "
        "changes numerics (quality to confirm)")})

RECORDS = (FP32, FP16, BF16)
