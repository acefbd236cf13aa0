"""fp8 (E4M3): 1 byte per value of the decoder linears, plus fp32 scales.

Layout: transformers ``FP8Linear`` (``integrations/finegrained_fp8.py``) holds ``weight``
float8_e4m3fn [out, in] and ``weight_scale_inv`` fp32 [⌈out/bo⌉, ⌈in/bi⌉] for a
``weight_block_size`` (bo, bi) (DeepSeek-V3 config ``quantization_config.weight_block_size``).
Without the key, ``FineGrainedFP8Config``'s default (128, 128) applies — to a 16-bit checkpoint
converted at load and to a pre-quantized config alike (``from_dict`` is ``cls(**config)``;
``formats.FP8_DEFAULT_BLOCK``); only an explicit ``weight_block_size: null`` gives one fp32
scale per matrix (``FP8Linear``: ``weight_scale_inv`` a scalar). fbgemm fp8 stores one fp32
``weight_scale`` per output row (``FbgemmFp8Linear``: [out, 1]); compressed-tensors float8
follows its ``strategy`` (``tensor``: one scale, ``channel``: per row, ``block``:
``block_structure``, ``group``: per row and ``group_size`` inputs; no strategy and no group size
is ``tensor``, compressed-tensors ``QuantizationArgs``). lm_head and the other non-Linear
modules stay in the compute dtype (``get_modules_to_not_convert``), as do the modules the
config excludes (``modules_to_not_convert``, ``ignore``).

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

from ..bounds import MAX_COUNT, NumberProblem, check_number
from ..errors import ModelError
from .quant_config import PER_ROW, PER_TENSOR, QuantConfig, QuantParams, QuantSource
from .record import Fallback, Matrices, Metadata, WeightFormat, ceil_div

__all__ = ["RECORD"]

_PACKS = frozenset({"linear", "expert_linear"})


def _packs(engine: str | None, stored: QuantConfig | None) -> frozenset[str]:
    return _PACKS


def _metadata(m: Matrices, quant: QuantParams) -> Metadata:
    br, bc = quant.block
    exact = m.per_matrix(lambda r, c: ceil_div(r, br or r) * ceil_div(c, bc or c))
    if exact:
        return Metadata(exact * 4, f"{exact} fp32 scale_inv (one per {br or 'all'}×{bc or 'all'} "
                        "block of each matrix, ceil per dimension) × 4 B", exact)
    n = ceil_div(m.values, (br or m.hidden or 1) * (bc or m.hidden or 1))
    return Metadata(n * 4, f"{m.values} / ({br}×{bc}) fp32 block scales × 4 B (matrix shapes "
                    "unknown: exact only when dims are multiples of the block)", n)


def _block(value, key: str = "quantization_config.weight_block_size") -> tuple[int, int] | None:
    """A stated ``[rows, cols]`` scale block: two integers in [1, 2**31 - 1]
    (``gpusizer.bounds``; transformers divides by both). None when no block is stated.

    Raises:
        ModelError: a block that is not two such integers (``[0, 0]``, ``[-1, 128]``, ``[1.5, 2]``).
    """
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ModelError(f"expected [rows, cols], two integers >= 1, got {value!r:.60}",
                         field=key, value=value)
    try:
        return tuple(int(check_number(v, minimum=1, maximum=MAX_COUNT, whole=True))
                     for v in value)  # type: ignore[return-value]
    except NumberProblem as exc:
        raise ModelError(f"expected [rows, cols], two integers >= 1: {exc}", field=key,
                         value=value) from None


def _compressed_tensors_block(weights) -> tuple[int, int] | None:
    strategy = weights.get("strategy")
    group = weights.get("group_size")
    if strategy == "block":
        return _block(weights.get("block_structure"),
                      "quantization_config.config_groups.weights.block_structure")
    if strategy == "channel":
        return PER_ROW
    if strategy == "group" and group is not None:
        return _block([1, group], "quantization_config.config_groups.weights.group_size")
    if strategy == "tensor" or (strategy is None and group is None):
        return PER_TENSOR
    return None


def detect(src: QuantSource) -> QuantConfig | None:
    """FineGrainedFP8 / fbgemm fp8 configs and compressed-tensors float8 (see module doc)."""
    q = src.raw
    if src.method == "fp8":
        stated = q.get("weight_block_size")
        block = PER_TENSOR if "weight_block_size" in q and stated is None else _block(stated)
        return src.config("fp8", block=block, excluded=src.ignored())
    if src.method == "fbgemm_fp8":
        return src.config("fp8", block=PER_ROW, excluded=src.ignored())
    if src.compressed_tensors_kind() == (8, "float"):
        weights, _ = src.compressed_tensors_weights()
        return src.config("fp8", block=_compressed_tensors_block(weights), excluded=src.ignored())
    return None


RECORD = WeightFormat(
    name="fp8", family="fp8", bits=8,
    layout="float8_e4m3fn weight + fp32 weight_scale_inv per weight_block_size block, 128×128 "
           "by default (transformers FineGrainedFP8)",
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
