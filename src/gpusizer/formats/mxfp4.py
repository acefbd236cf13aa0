"""MXFP4 (gpt-oss): routed-expert weights in 4-bit E2M1 with one E8M0 scale per 32 values.

Layout: E2M1 values packed two per byte (``*_blocks``: 16 bytes = 32 values) plus one 8-bit
E8M0 scale per 32 values (``*_scales``) (OCP Microscaling Formats MX v1.0 §5.1). Only the routed
experts are quantized; attention, router, embeddings and lm_head stay bf16 (gpt-oss config
``quantization_config.modules_to_not_convert``).

Kernels: transformers' Mxfp4 path needs compute capability >= 7.5 and Triton >= 3.4, else it
dequantizes the checkpoint to bf16 at load (transformers docs ``quantization/mxfp4.md``).

Detected from ``quant_method: mxfp4``.
"""

from __future__ import annotations

from .quant_config import QuantConfig, QuantParams, QuantSource
from .record import ALL_ENGINES, Fallback, Matrices, Metadata, WeightFormat, ceil_div

__all__ = ["RECORD", "MX_BLOCK"]

MX_BLOCK = 32
"""Values sharing one E8M0 scale (OCP MX v1.0 §5.1)."""

_EXPERTS = frozenset({"expert_linear"})


def _packs(engine: str | None, stored: QuantConfig | None) -> frozenset[str]:
    return _EXPERTS


def _metadata(m: Matrices, quant: QuantParams) -> Metadata:
    scales = m.per_matrix(lambda r, c: r * ceil_div(c, MX_BLOCK)) or ceil_div(m.values, MX_BLOCK)
    return Metadata(scales, f"{m.values} / {MX_BLOCK} E8M0 scales × 1 B", scales)


def detect(src: QuantSource) -> QuantConfig | None:
    """``quant_method: mxfp4`` (gpt-oss)."""
    return src.config("mxfp4") if src.method == "mxfp4" else None


RECORD = WeightFormat(
    name="mxfp4", family="mxfp4", bits=4,
    layout="routed experts in E2M1 with E8M0 scales (OCP MX, 32 values per scale)",
    packs=_packs, packs_text="routed-expert", metadata=_metadata,
    packed_at_rest=True, dequantizable=True, min_compute_capability=(7, 5),
    below_min={ALL_ENGINES: Fallback(
        "bf16", "MXFP4 kernels need CC >= 7.5 (transformers docs, quantization/mxfp4; card "
        "{cc}): the checkpoint is dequantized to bf16 at load")},
    detect=detect, throughput="MXFP4 expert kernels")
