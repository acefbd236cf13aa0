"""int4 (theoretical): 0.5 byte for every parameter — the seed's last row, not a real format.

No metadata and no module kept in 16 bit (R7): real 4-bit formats (nf4, gptq-int4, awq-int4,
mxfp4, nvfp4) carry scales and keep some layers in other formats. Also what a compressed-tensors
int4 scheme (``num_bits 4, type int``) is sized as.
"""

from __future__ import annotations

from .quant_config import QuantConfig, QuantSource
from .record import WeightFormat

__all__ = ["RECORD"]


def detect(src: QuantSource) -> QuantConfig | None:
    """compressed-tensors ``num_bits 4, type int``."""
    return src.config("int4") if src.compressed_tensors_kind() == (4, "int") else None


RECORD = WeightFormat(
    name="int4", family="theoretical", bits=4,
    layout="0.5 byte per parameter (theoretical: no metadata, no module kept in 16 bit)",
    theoretical=True, detect=detect, throughput="theoretical row",
    estimate_note="int4 is the theoretical 4-bit row (no metadata, nothing kept in 16 bit); "
                  "real 4-bit formats (nf4, gptq-int4, awq-int4) carry metadata (R7)")
