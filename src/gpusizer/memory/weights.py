"""Weights by format: packed data, quantization metadata, and modules kept in 16 bit.

R5: dense volume = parameter count × bits per value / 8. Real quantized formats also store
metadata (scales, zero points, absmax) and keep some modules in another format; both are counted
here as their own items instead of a hidden multiplier.

Sources, per format:
- fp32 / fp16 / bf16: 4 / 2 / 2 bytes per value (IEEE 754 binary32/binary16, bfloat16).
- fp8 (e4m3): 1 byte per value of the decoder linears; block scales ``scale_inv`` in fp32, one per
  ``weight_block_size`` block (DeepSeek-V3 config ``quantization_config.weight_block_size``;
  transformers ``integrations/finegrained_fp8.py``), else one fp32 scale per matrix.
- int8 (bitsandbytes LLM.int8): 1 byte per value + one fp32 ``SCB`` per output row
  (Dettmers et al. 2022, §3; bitsandbytes ``Int8Params``).
- nf4 / fp4 (bitsandbytes): 4 bits per value + one fp32 absmax per 64-value block; double
  quantization stores the absmax as 8 bits plus one fp32 per 256 blocks (Dettmers et al. 2023,
  QLoRA §3 "Double Quantization": 32/64 = 0.5 → 8/64 + 32/(64·256) ≈ 0.127 bits per parameter).
- gptq-int4: ``qweight`` int32 packs 8 values (0.5 B/value), ``scales`` fp16 and ``qzeros`` int32
  (8 per int32) per group of ``group_size`` inputs, ``g_idx`` int32 per input column
  (AutoGPTQ/GPTQModel QuantLinear layout; Frantar et al. 2022).
- awq-int4: as GPTQ without ``g_idx`` (llm-awq / AutoAWQ WQLinear_GEMM layout; Lin et al. 2023).
- mxfp4: routed-expert weights only, 4-bit E2M1 values packed two per byte plus one 8-bit E8M0
  scale per 32 values (OCP Microscaling Formats MX v1.0 §5; gpt-oss config
  ``quantization_config.modules_to_not_convert``).
- int4 (theoretical): 0.5 byte for every parameter — the seed's last row, not a real format.
Embeddings, lm_head, norms, biases and routers stay in the compute dtype (bitsandbytes skips
lm_head and non-Linear modules; GPTQ/AWQ pack only the Linear layers of the blocks).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..errors import SheetError
from ..model.facts import QUANTIZABLE_ROLES, ModelFacts

__all__ = ["DTYPE_BYTES", "FORMAT_BITS", "WeightBreakdown", "dense_bytes", "weight_breakdown",
           "format_from_dtype", "compute_dtype_of"]

DTYPE_BYTES: dict[str, int] = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}

# Bits per value of the packed data (metadata counted apart).
FORMAT_BITS: dict[str, int] = {
    "fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "nf4": 4, "fp4": 4, "int4": 4,
    "gptq-int4": 4, "awq-int4": 4, "mxfp4": 4,
}

_TORCH_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float": "fp32",
                 "half": "fp16"}

BNB_BLOCK = 64          # bitsandbytes 4-bit blocksize default (Params4bit blocksize=64)
BNB_DQ_BLOCK = 256      # double quantization: second-level block of 256 absmax values
MX_BLOCK = 32           # OCP MX: 32 elements share one E8M0 scale


def format_from_dtype(dtype: str | None) -> str | None:
    """config.json ``torch_dtype`` (``"bfloat16"``) → sheet format (``"bf16"``), None if unknown."""
    if dtype is None:
        return None
    return _TORCH_DTYPES.get(str(dtype).removeprefix("torch."))


def compute_dtype_of(fmt: str, quant_compute_dtype: str) -> str:
    """The dtype matmuls and activations run in for a weight format.

    16/32-bit formats compute in themselves; quantized ones in ``quantization.compute_dtype``.
    """
    return fmt if fmt in ("fp32", "fp16", "bf16") else quant_compute_dtype


def dense_bytes(parameters: int, fmt: str) -> int:
    """R5/R7 dense volume: ``parameters × bits / 8`` bytes (exact integer; R7's 7e9 × 16/8 = 14e9).

    Raises:
        SheetError: unknown format.
    """
    if fmt not in FORMAT_BITS:
        raise SheetError(f"unknown weight format {fmt!r}", field="weights", value=fmt)
    vol = Fraction(parameters * FORMAT_BITS[fmt], 8)
    return int(-(-vol.numerator // vol.denominator))


@dataclass(frozen=True)
class WeightBreakdown:
    """Weight memory of one format, whole model (before any placement split).

    Attributes:
        packed_bytes: the quantized (or dense) values of the converted modules.
        kept_bytes: modules kept in the compute dtype (embeddings, lm_head, norms, biases, routers).
        metadata_bytes: scales / zero points / absmax / g_idx.
        formula: human text with this model's numbers.
        metadata_formula: the metadata formula with numbers.
    """

    packed_bytes: int
    kept_bytes: int
    metadata_bytes: int
    formula: str
    metadata_formula: str

    @property
    def total_bytes(self) -> int:
        return self.packed_bytes + self.kept_bytes + self.metadata_bytes


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _per_matrix(facts: ModelFacts, roles: frozenset[str] | tuple[str, ...], fn) -> int | None:
    """Σ over the quantizable matrices of ``n × fn(rows, cols)``; None when shapes are unknown."""
    groups = [g for g in facts.architecture.params if g.role in roles]
    if any(not g.shapes for g in groups if g.count):
        return None
    return sum(n * fn(r, c) for g in groups for n, r, c in g.shapes)


BNB_FORMATS = frozenset({"int8", "nf4", "fp4"})
LINEAR_ONLY = frozenset({"linear"})


def weight_breakdown(facts: ModelFacts, fmt: str, *, compute_dtype: str, group_size: int = 128,
                     double_quant: bool = False,
                     quantized_roles: frozenset[str] = QUANTIZABLE_ROLES) -> WeightBreakdown:
    """Weight memory of ``facts`` stored as ``fmt``.

    Args:
        facts: the model (parameter groups by role).
        fmt: a sheet weight format (not ``auto``).
        compute_dtype: dtype of the modules kept unquantized (``bf16``…).
        group_size: GPTQ/AWQ group size (inputs per scale); -1 (or 0): one group per output row.
        double_quant: bitsandbytes nested quantization of the absmax.
        quantized_roles: parameter roles the format packs (for bitsandbytes, the engine's
            ``bnb_quantized_roles``);
            the others stay in ``compute_dtype``.

    Returns:
        The breakdown in bytes (integers).

    Raises:
        SheetError: a format this model cannot take (mxfp4 on a model without routed experts).
    """
    arch = facts.architecture
    total = arch.total_parameters
    quant = sum(g.count for g in arch.params if g.role in quantized_roles)
    experts = arch.parameters_by_role("expert_linear")
    matrices = sum(g.matrices for g in arch.params if g.role in quantized_roles)
    rows = sum(g.rows for g in arch.params if g.role in quantized_roles)
    cols = sum(g.cols for g in arch.params if g.role in quantized_roles)
    kb = DTYPE_BYTES[compute_dtype]

    if fmt in ("fp32", "fp16", "bf16"):
        b = total * DTYPE_BYTES[fmt]
        return WeightBreakdown(b, 0, 0, f"{total} parameters × {DTYPE_BYTES[fmt]} B", "none")
    if fmt == "int4":
        b = dense_bytes(total, "int4")
        return WeightBreakdown(b, 0, 0, f"{total} parameters × 4 bit / 8 (theoretical: no "
                               "metadata, no module kept in 16 bit)", "none (theoretical)")
    if fmt == "mxfp4":
        if experts == 0:
            raise SheetError("mxfp4 quantizes routed-expert weights (gpt-oss); this model has none",
                             field="weights", value=fmt)
        packed = experts // 2
        meta = _per_matrix(facts, ("expert_linear",), lambda r, c: r * _ceil_div(c, MX_BLOCK)) \
            or _ceil_div(experts, MX_BLOCK)
        kept = (total - experts) * kb
        return WeightBreakdown(packed, kept, meta,
                               f"{experts} expert values × 0.5 B + {total - experts} other "
                               f"parameters × {kb} B ({compute_dtype})",
                               f"{experts} / {MX_BLOCK} E8M0 scales × 1 B")
    kept = (total - quant) * kb
    kept_text = f"{total - quant} parameters kept in {compute_dtype} × {kb} B"
    if fmt == "fp8":
        block = None
        qc = facts.quantization_config or {}
        if isinstance(qc.get("weight_block_size"), (list, tuple)) and len(qc["weight_block_size"]) == 2:
            block = tuple(int(x) for x in qc["weight_block_size"])
        exact = block and _per_matrix(facts, quantized_roles, lambda r, c: _ceil_div(
            r, block[0]) * _ceil_div(c, block[1]))
        if exact:
            n_scales = exact
            meta_text = (f"{n_scales} fp32 scale_inv (one per {block[0]}×{block[1]} block of each "
                         "matrix, ceil per dimension) × 4 B")
        elif block:
            n_scales = _ceil_div(quant, block[0] * block[1])
            meta_text = (f"{quant} / ({block[0]}×{block[1]}) fp32 block scales × 4 B (matrix "
                         "shapes unknown: exact only when dims are multiples of the block)")
        else:
            n_scales = matrices
            meta_text = f"{matrices} matrices × one fp32 per-tensor scale × 4 B"
        return WeightBreakdown(quant, kept, n_scales * 4, f"{quant} linear values × 1 B + "
                               + kept_text, meta_text)
    if fmt == "int8":
        return WeightBreakdown(quant, kept, rows * 4, f"{quant} linear values × 1 B + " + kept_text,
                               f"{rows} output rows × fp32 SCB 4 B")
    if fmt in ("nf4", "fp4"):
        blocks = _per_matrix(facts, quantized_roles, lambda r, c: _ceil_div(r * c, BNB_BLOCK)) \
            or _ceil_div(quant, BNB_BLOCK)
        if double_quant:
            meta = blocks + _ceil_div(blocks, BNB_DQ_BLOCK) * 4
            meta_text = (f"{blocks} blocks of {BNB_BLOCK} × 1 B (8-bit absmax) + "
                         f"{_ceil_div(blocks, BNB_DQ_BLOCK)} second-level fp32 absmax × 4 B")
        else:
            meta = blocks * 4
            meta_text = f"{quant} / {BNB_BLOCK} = {blocks} fp32 absmax × 4 B"
        return WeightBreakdown(_ceil_div(quant, 2), kept, meta,
                               f"{quant} linear values × 0.5 B + " + kept_text, meta_text)
    if fmt in ("gptq-int4", "awq-int4"):
        def per_row(c: int) -> int:  # groups along one output row; -1: one group (per-channel)
            return 1 if group_size <= 0 else _ceil_div(c, group_size)
        groups = _per_matrix(facts, quantized_roles, lambda r, c: per_row(c) * r) \
            or _ceil_div(quant, group_size if group_size > 0 else max(1, arch.hidden_size))
        zeros = _per_matrix(facts, quantized_roles,
                            lambda r, c: per_row(c) * _ceil_div(r, 8)) or _ceil_div(groups, 8)
        meta = groups * 2 + zeros * 4
        size_text = "per-channel" if group_size <= 0 else f"of {group_size}"
        meta_text = f"{groups} groups {size_text} × (fp16 scale 2 B + int4 zero 0.5 B)"
        if fmt == "gptq-int4":
            meta += cols * 4
            meta_text += f" + {cols} input columns × int32 g_idx 4 B"
        return WeightBreakdown(_ceil_div(quant, 2), kept, meta,
                               f"{quant} linear values × 0.5 B + " + kept_text, meta_text)
    raise SheetError(f"unknown weight format {fmt!r}", field="weights", value=fmt)
