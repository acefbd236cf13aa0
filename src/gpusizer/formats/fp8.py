"""fp8 (E4M3): 1 byte per value of the decoder linears, plus fp32 scales.

Layout: transformers ``FP8Linear`` (``integrations/finegrained_fp8.py``) holds ``weight``
float8_e4m3fn [out, in] and ``weight_scale_inv`` fp32 [⌈out/bo⌉, ⌈in/bi⌉] for a
``weight_block_size`` (bo, bi) (DeepSeek-V3 config ``quantization_config.weight_block_size``);
with ``block_size`` None one fp32 scale per matrix. lm_head and the other non-Linear modules
stay in the compute dtype (``get_modules_to_not_convert``), as do ``modules_to_not_convert``.

Kernels: FP8 tensor cores need compute capability >= 8.9 (Ada, Hopper). Below it transformers
dequantizes the checkpoint to bf16 at load (``FineGrainedFP8HfQuantizer.validate_environment``
sets ``dequantize=True``: "FP8 quantized models is only supported on GPUs with compute
capability >= 8.9"), while vLLM runs the fp8 weights through its weight-only FP8 Marlin kernel
(``fp8.py`` / ``marlin_utils_fp8.py``): the weights stay 1 byte. The Triton
``w8a8_block_fp8_matmul`` works tile by tile: no whole-matrix transient.

Detected from ``quant_method`` ``fp8`` (FineGrainedFP8) or ``fbgemm_fp8``, and from a
compressed-tensors scheme with ``num_bits 8, type float``.
"""

from __future__ import annotations

from .quant_config import QuantConfig, QuantParams, QuantSource
from .record import Fallback, Matrices, Metadata, WeightFormat, ceil_div

__all__ = ["RECORD"]

_PACKS = frozenset({"linear", "expert_linear"})


def _packs(engine: str | None, stored: QuantConfig | None) -> frozenset[str]:
    return _PACKS


def _metadata(m: Matrices, quant: QuantParams) -> Metadata:
    block = quant.block
    if block is None:
        return Metadata(m.matrices * 4, f"{m.matrices} matrices × one fp32 per-tensor scale × 4 B",
                        m.matrices)
    br, bc = block
    exact = m.per_matrix(lambda r, c: ceil_div(r, br or r) * ceil_div(c, bc or c))
    if exact:
        return Metadata(exact * 4, f"{exact} fp32 scale_inv (one per {br or 'all'}×{bc or 'all'} "
                        "block of each matrix, ceil per dimension) × 4 B", exact)
    n = ceil_div(m.values, (br or m.hidden or 1) * (bc or m.hidden or 1))
    return Metadata(n * 4, f"{m.values} / ({br}×{bc}) fp32 block scales × 4 B (matrix shapes "
                    "unknown: exact only when dims are multiples of the block)", n)


def _block(value) -> tuple[int, int] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return int(value[0]), int(value[1])
    return None


def detect(src: QuantSource) -> QuantConfig | None:
    """FineGrainedFP8 / fbgemm fp8 configs and compressed-tensors float8 (see module doc)."""
    q = src.raw
    if src.method in ("fp8", "fbgemm_fp8"):
        return src.config("fp8", block=_block(q.get("weight_block_size")),
                          excluded=src.ignored())
    if src.method == "compressed-tensors":
        weights, _ = src.compressed_tensors_weights()
        if weights is not None and (weights.get("num_bits"), weights.get("type")) == (8, "float"):
            return src.config("fp8", excluded=src.ignored())
    return None


RECORD = WeightFormat(
    name="fp8", family="fp8", bits=8,
    layout="float8_e4m3fn weight + fp32 weight_scale_inv per weight_block_size block "
           "(transformers FineGrainedFP8)",
    packs=_packs, packs_text="linear", metadata=_metadata, torch_dtype="float8_e4m3fn",
    packed_at_rest=True, dequantizable=True, min_compute_capability=(8, 9),
    below_min={
        "transformers": Fallback(
            "bf16", "fp8 kernels need CC >= 8.9 (card {cc}): transformers dequantizes the "
            "checkpoint to bf16 at load; memory sized for bf16"),
        "vllm": Fallback(
            None, "fp8 weights on CC {cc} < 8.9: vLLM runs them through its weight-only FP8 "
            "(Marlin) path; weights stay 1 byte")},
    lower=("nf4",), detect=detect, throughput="fp8 block-wise kernels")
