"""NVFP4: 4-bit E2M1 values, one FP8-E4M3 scale per 16 values, FP32 per-tensor scales.

Format (NVIDIA Model Optimizer docs, "Quantization formats": NVFP4 = FP4 E2M1 weights and
activations with a per-block FP8 E4M3 scale for every 16 elements and a second-level FP32
per-tensor scale; ModelOpt ``NVFP4_DEFAULT_CFG``: ``num_bits (2, 1)``, ``block_sizes {-1: 16,
scale_bits (4, 3)}``). What a checkpoint stores per packed linear of ``out`` × ``in``:

- ModelOpt (vLLM ``modelopt.py`` ``ModelOptNvFp4LinearMethod``, NVIDIA/Model-Optimizer
  ``modelopt/torch/export/unified_export_hf.py``): ``weight`` uint8 [out, in/2] (two E2M1 values
  per byte), ``weight_scale`` float8_e4m3fn [out, in/16], ``weight_scale_2`` fp32 (the
  per-tensor global scale) and ``input_scale`` fp32 (the static activation scale);
- compressed-tensors ``nvfp4-pack-quantized`` (vLLM ``compressed_tensors_w4a4_nvfp4.py``):
  ``weight_packed`` uint8 [out, in/2], ``weight_scale`` float8_e4m3fn [out, in/16],
  ``weight_global_scale`` fp32 and, with quantized activations, ``input_global_scale`` fp32.

So metadata = ⌈in/16⌉ bytes per output row + 2 fp32 per matrix (8 B; a weight-only NVFP4A16
checkpoint stores one, 4 B less per matrix). Not counted: the FP8 KV-cache ``k_scale`` /
``v_scale`` scalars ModelOpt adds when ``kv_cache_quant_algo`` is FP8 (8 B per layer), and
the padding of the swizzled scale layout (rows to 128, scale columns to 4: none for the
usual widths). Embeddings, norms and routers stay in the checkpoint's 16-bit dtype; lm_head
and any linear the config lists (``exclude_modules`` / ``ignore``) too — honoured module by
module.

Kernels: FP4 tensor cores need compute capability >= 10.0 (Blackwell). vLLM runs NVFP4 there
with CUTLASS / FlashInfer (``cutlass_fp4_supported`` → ``cutlass_scaled_mm_supports_fp4``, sm100
and later); below it, ModelOpt checkpoints take the weight-only FP4 Marlin kernel
(``ModelOptNvFp4LinearMethod`` backend ``marlin``) and compressed-tensors ones
``CompressedTensorsW4A16Fp4`` ("Current platform does not support cutlass NVFP4. Running
CompressedTensorsW4A16Fp4", ``compressed_tensors.py``): the weights stay 4-bit (Marlin repacks
them, scales stay one byte per 16 values), down to ``is_fp4_marlin_supported``, CC >= 7.5 at
vLLM commit 00d52e93 (8.0 in earlier releases). transformers 5.24 runs no pre-quantized NVFP4
checkpoint in 4 bit: ``quant_method: modelopt`` is not a registered quantizer (the config is
skipped with a warning), its ``NVFP4HfQuantizer`` refuses pre-quantized checkpoints ("Loading
pre-quantized NVFP4 checkpoints is not supported yet"; it quantizes a 16-bit checkpoint at load
on sm100+ only), and compressed-tensors checkpoints are decompressed to the compute dtype
(``CompressedTensorsHfQuantizer``: "compressed-tensors decompresses them on the first forward
pass").

The vLLM CUTLASS path quantizes each linear's input to FP4 (``scaled_fp4_quant``: uint8
[T, in/2] + swizzled FP8 block scales [⌈T/128⌉·128, ⌈in/64⌉·4]): the matmul transient below,
for the widest input. The Marlin path has none; it is counted anyway (an upper bound).

Detected from ModelOpt configs — config.json ``quantization_config`` ``{"quant_method":
"modelopt", "quant_algo": "NVFP4", "ignore": [...]}`` (ModelOpt ``convert_hf_quant_config_format``)
or, in a model folder, ``hf_quant_config.json`` ``{"producer": {"name": "modelopt"},
"quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": [...]}}`` — and from
compressed-tensors configs with a float 4-bit weights scheme of group size 16
(``format: nvfp4-pack-quantized``).
"""

from __future__ import annotations

from collections.abc import Mapping

from .quant_config import QuantConfig, QuantParams, QuantSource
from .record import Fallback, Matrices, Metadata, WeightFormat, ceil_div

__all__ = ["RECORD", "NVFP4_GROUP"]

NVFP4_GROUP = 16
"""Values sharing one FP8-E4M3 scale (ModelOpt NVFP4 ``block_sizes {-1: 16}``)."""

_PER_TENSOR_BYTES = 8
"""Per packed matrix: the fp32 global weight scale and the fp32 activation scale."""

_LINEARS = frozenset({"linear", "expert_linear"})
_WITH_HEAD = _LINEARS | {"lm_head"}


def _packs(engine: str | None, stored: QuantConfig | None) -> frozenset[str]:
    # lm_head is packed only when a checkpoint says so (absent from its exclusion list)
    if stored is not None and stored.fmt == "nvfp4" and not stored.excludes("lm_head"):
        return _WITH_HEAD
    return _LINEARS


def _metadata(m: Matrices, quant: QuantParams) -> Metadata:
    scales = m.per_matrix(lambda r, c: r * ceil_div(c, NVFP4_GROUP)) \
        or ceil_div(m.values, NVFP4_GROUP)
    return Metadata(scales + m.matrices * _PER_TENSOR_BYTES,
                    f"{scales} FP8-E4M3 block scales (one per {NVFP4_GROUP} values) × 1 B + "
                    f"{m.matrices} matrices × 2 fp32 per-tensor scales (weight_scale_2, "
                    "input_scale) × 4 B", scales + 2 * m.matrices)


def _transient(linears: Matrices, t: int, b: int, tp: int) -> int:
    """scaled_fp4_quant of the widest input: T·in/2 packed bytes + the swizzled scales."""
    if not linears.shapes:
        return 0
    inp = max(c for _, _, c in linears.shapes)
    rows = ceil_div(t, 128) * 128
    cols = ceil_div(ceil_div(inp, NVFP4_GROUP), 4) * 4
    return t * ceil_div(inp, 2) + rows * cols


def _modelopt(src: QuantSource) -> QuantConfig | None:
    q = src.raw
    inner = q.get("quantization")
    inner = inner if isinstance(inner, Mapping) else q
    algo = str(inner.get("quant_algo", q.get("quant_algo", ""))).upper()
    group = inner.get("group_size", q.get("group_size"))
    if algo != "NVFP4":
        return src.config(None, note=f"ModelOpt quant_algo {algo or None!r} is not sized "
                          "(gpusizer sizes NVFP4)")
    if group not in (None, NVFP4_GROUP):
        return src.config(None, note=f"ModelOpt NVFP4 with group_size {group}: NVFP4 scales "
                          f"{NVFP4_GROUP} values")
    return src.config("nvfp4", group_size=NVFP4_GROUP, excluded=src.ignored())


def detect(src: QuantSource) -> QuantConfig | None:
    """ModelOpt NVFP4 and compressed-tensors NVFP4 configs (see module doc)."""
    if src.method == "modelopt":
        return _modelopt(src)
    if src.compressed_tensors_kind() != (4, "float"):
        return None
    weights, _ = src.compressed_tensors_weights()
    group = weights.get("group_size")
    fmt = src.raw.get("format")
    if group != NVFP4_GROUP and fmt != "nvfp4-pack-quantized":
        return None  # MXFP4 (group 32) and other float4 schemes are someone else's
    if group != NVFP4_GROUP:
        return src.config(None, note=f"compressed-tensors {fmt} with group_size {group}: NVFP4 "
                          f"scales {NVFP4_GROUP} values")
    return src.config("nvfp4", group_size=NVFP4_GROUP, excluded=src.ignored())


def _hf_quant_config(data: Mapping) -> dict:
    """ModelOpt's ``hf_quant_config.json`` as a ``quantization_config`` (vLLM
    ``ModelOptQuantConfigBase.from_config`` reads both shapes)."""
    return {"quant_method": "modelopt", **data}


_TRANSFORMERS = (
    "transformers 5.24 runs no pre-quantized NVFP4 checkpoint in 4 bit (see the module "
    "gpusizer.formats.nvfp4): use inference.engine vllm, or weights bf16 and a 16-bit checkpoint")
"""The refusal's line; the sources (quant_method modelopt not a registered quantizer,
NVFP4HfQuantizer refusing pre-quantized checkpoints, compressed-tensors decompressing) are in the
module docstring, so the CLI's one line stays under 300 characters (issue 11 point 3)."""

RECORD = WeightFormat(
    name="nvfp4", family="nvfp4", bits=4,
    layout="E2M1 values two per byte + one FP8-E4M3 scale per 16 values + fp32 per-tensor "
           "scales (NVIDIA ModelOpt / compressed-tensors nvfp4-pack-quantized)",
    packs=_packs, packs_text="linear", metadata=_metadata, packed_at_rest=True,
    produced_at_load=False, min_compute_capability=(10, 0),
    below_min={"vllm": Fallback(
        None, "NVFP4 needs FP4 tensor cores, CC >= 10.0 (card {cc}): vLLM runs it through its "
        "weight-only FP4 Marlin kernel; weights stay 4-bit (slower for compute-bound batches)",
        floor=(7, 5), refusal="vLLM has no NVFP4 kernel below CC 7.5 (its FP4 Marlin kernel "
        "needs 7.5, card {cc})")},
    refused_by={"transformers": _TRANSFORMERS},
    matmul_transient=_transient, detect=detect,
    side_files={"hf_quant_config.json": _hf_quant_config},
    throughput="FP4 tensor cores on Blackwell; weight-only Marlin below CC 10.0")
