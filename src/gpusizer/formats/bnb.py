"""bitsandbytes: LLM.int8 (``int8``) and 4-bit NF4 / FP4 (``nf4``, ``fp4``).

Layouts:

- int8 (LLM.int8): 1 byte per value + one fp32 ``SCB`` per output row (Dettmers et al. 2022,
  §3; bitsandbytes ``nn/modules.py`` ``Int8Params``).
- nf4 / fp4: 4 bits per value (two per byte) + one fp32 absmax per 64-value block
  (``quantize_4bit`` blocksize 64); double quantization stores the absmax as 8 bits plus one
  fp32 per 256 blocks (Dettmers et al. 2023, QLoRA §3 "Double Quantization":
  32/64 = 0.5 → 8/64 + 32/(64·256) ≈ 0.127 bits per parameter).

bitsandbytes replaces ``nn.Linear`` only: lm_head (``llm_int8_skip_modules``), embeddings, norms
and routers stay in the compute dtype, and in transformers v5 the routed experts are stacked 3-D
``nn.Parameter`` tensors it leaves in the compute dtype too
(bitsandbytes-foundation/bitsandbytes#1849); vLLM quantizes its fused experts.

Matmul transients (``autograd/_functions.py``): ``MatMul4Bit`` dequantizes the whole weight to
the compute dtype for batched inputs (the largest matrix × b); ``MatMul8bitLt`` quantizes the
input row-wise (int8 [T, in] + fp32 [T]), multiplies into int32 [T, out] and dequantizes to
fp16 [T, out] before casting: T·out·(4 + 2) + T·in + 4T for the widest linear.

Detected from ``quant_method: bitsandbytes`` (or the legacy ``load_in_8bit`` /
``load_in_4bit`` keys, ``bnb_4bit_quant_type`` defaulting to fp4 as ``BitsAndBytesConfig``
does) and from compressed-tensors int8 (``num_bits 8, type int``).
"""

from __future__ import annotations

from .quant_config import QuantConfig, QuantParams, QuantSource
from .record import Matrices, Metadata, WeightFormat, ceil_div

__all__ = ["RECORDS", "BNB_BLOCK", "BNB_DQ_BLOCK"]

BNB_BLOCK = 64
"""Values per absmax block (bitsandbytes ``Params4bit`` blocksize default)."""
BNB_DQ_BLOCK = 256
"""Double quantization: absmax values per second-level fp32 block."""

_LINEAR = frozenset({"linear"})
_LINEAR_AND_EXPERTS = frozenset({"linear", "expert_linear"})
_THROUGHPUT = "bitsandbytes dequantizes weights in every matmul: slower than 16-bit kernels"
_EXPERTS_NOTE = ("bitsandbytes under transformers v5 leaves the stacked routed-expert tensors in "
                 "the compute dtype (it replaces nn.Linear only; "
                 "bitsandbytes-foundation/bitsandbytes#1849): experts counted at {dtype}")


_PACKS_BY_ENGINE = {"transformers": _LINEAR}
"""What bitsandbytes packs under each engine (module doc); the others and the checkpoint as
stored: the linears and the routed experts."""


def _packs(engine: str | None, stored: QuantConfig | None) -> frozenset[str]:
    return _PACKS_BY_ENGINE.get(engine, _LINEAR_AND_EXPERTS)


def _int8_metadata(m: Matrices, quant: QuantParams) -> Metadata:
    return Metadata(m.rows * 4, f"{m.rows} output rows × fp32 SCB 4 B")


def _four_bit_metadata(m: Matrices, quant: QuantParams) -> Metadata:
    blocks = m.per_matrix(lambda r, c: ceil_div(r * c, BNB_BLOCK)) or ceil_div(m.values, BNB_BLOCK)
    if quant.double_quant:
        second = ceil_div(blocks, BNB_DQ_BLOCK)
        return Metadata(blocks + second * 4, f"{blocks} blocks of {BNB_BLOCK} × 1 B (8-bit "
                        f"absmax) + {second} second-level fp32 absmax × 4 B")
    return Metadata(blocks * 4, f"{m.values} / {BNB_BLOCK} = {blocks} fp32 absmax × 4 B")


def _int8_transient(linears: Matrices, t: int, b: int, tp: int) -> int:
    if not linears.shapes:
        return 0
    out = max(r for _, r, _ in linears.shapes) // tp
    inp = max(c for _, _, c in linears.shapes)
    return t * out * (4 + 2) + t * inp + 4 * t


def _four_bit_transient(linears: Matrices, t: int, b: int, tp: int) -> int:
    return linears.largest // tp * b


def detect(src: QuantSource) -> QuantConfig | None:
    """bitsandbytes configs and compressed-tensors int8 (see module doc)."""
    q = src.raw
    if src.method == "bitsandbytes":
        if q.get("load_in_8bit"):
            return src.config("int8")
        if q.get("load_in_4bit"):
            kind = q.get("bnb_4bit_quant_type", "fp4")
            if kind not in ("nf4", "fp4"):
                return src.config(None, note=f"bitsandbytes bnb_4bit_quant_type {kind!r} is not "
                                  "nf4 or fp4")
            dq = q.get("bnb_4bit_use_double_quant")
            return src.config(kind, double_quant=dq if isinstance(dq, bool) else None)
        return src.config(None, note="bitsandbytes config with neither load_in_8bit nor "
                          "load_in_4bit")
    if src.compressed_tensors_kind() == (8, "int"):
        return src.config("int8")
    return None


INT8 = WeightFormat(
    name="int8", family="bitsandbytes", bits=8,
    layout="int8 weight + one fp32 SCB per output row (bitsandbytes LLM.int8)",
    packs=_packs, packs_text="linear", metadata=_int8_metadata, torch_dtype=None,
    packed_at_rest=True, matmul_transient=_int8_transient, lower=("nf4",), detect=detect,
    outputs_follow_input_dtype=True, merge_requantizes=True, quality="bitsandbytes",
    quality_implementation="bitsandbytes LLM.int8 (BitsAndBytesConfig load_in_8bit)",
    throughput=_THROUGHPUT, unpacked_experts_note=_EXPERTS_NOTE)


def _four_bit(name: str, codebook: str) -> WeightFormat:
    return WeightFormat(
        name=name, family="bitsandbytes", bits=4,
        layout=f"4-bit {codebook} values two per byte + one fp32 absmax per {BNB_BLOCK} values "
               "(8-bit absmax + fp32 per 256 blocks when double quantized; bitsandbytes)",
        packs=_packs, packs_text="linear", metadata=_four_bit_metadata, packed_at_rest=True,
        matmul_transient=_four_bit_transient, detect=detect, sheet_keys=frozenset({
            "double_quant"}), qlora_base=True, outputs_follow_input_dtype=True,
        backward_dequant_transient=True, merge_requantizes=True, quality="bitsandbytes",
        quality_implementation=f"bitsandbytes 4-bit {name.upper()} (BitsAndBytesConfig "
                               f"bnb_4bit_quant_type={name})",
        throughput=_THROUGHPUT, unpacked_experts_note=_EXPERTS_NOTE)


NF4 = _four_bit("nf4", "NormalFloat")
FP4 = _four_bit("fp4", "FP4")

RECORDS = (INT8, NF4, FP4)
