"""The weight format a checkpoint stores, in the sheet's vocabulary, from its config.json.

``quantization_config`` decides when present (transformers ``utils/quantization_config.py``
names the methods); otherwise ``torch_dtype`` (``dtype`` in transformers >= 4.56).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import ModelError

__all__ = ["DTYPE_FORMATS", "stored_format"]

DTYPE_FORMATS: dict[str, str] = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32",
                                 "float8_e4m3fn": "fp8"}
"""config.json dtype name → sheet weight format."""


def stored_format(config: Mapping[str, object], *,
                  file: str) -> tuple[str | None, str | None, str | None]:
    """``(stored_dtype, stored_format, note)`` of a config.

    stored_dtype is ``torch_dtype``/``dtype`` as written; stored_format is one of bf16, fp16,
    fp32, fp8, int8, nf4, fp4, int4, gptq-int4, awq-int4, mxfp4, or None when unknown, with the
    reason in ``note`` (None when nothing needs saying).

    Raises:
        ModelError: ``quantization_config`` is not a JSON object.
    """
    raw = config.get("torch_dtype", config.get("dtype"))
    dtype = raw if isinstance(raw, str) else None
    quant = config.get("quantization_config")
    if quant is None:
        if dtype is None:
            return None, None, "config.json gives no torch_dtype: stored format unknown"
        fmt = DTYPE_FORMATS.get(dtype)
        return dtype, fmt, None if fmt else f"torch_dtype {dtype!r} has no sheet weight format"
    if not isinstance(quant, Mapping):
        raise ModelError(f"expected a JSON object, got {quant!r}", field="quantization_config",
                         value=quant, file=file)
    fmt, why = _quantized(quant)
    return dtype, fmt, why


def _quantized(q: Mapping[str, object]) -> tuple[str | None, str | None]:
    method = q.get("quant_method")
    legacy_bnb = method is None and ("load_in_8bit" in q or "load_in_4bit" in q)
    if method == "bitsandbytes" or legacy_bnb:
        if q.get("load_in_8bit"):
            return "int8", None
        if q.get("load_in_4bit"):
            kind = q.get("bnb_4bit_quant_type", "fp4")
            if kind in ("nf4", "fp4"):
                return kind, None
            return None, f"bitsandbytes bnb_4bit_quant_type {kind!r} is not nf4 or fp4"
        return None, "bitsandbytes config with neither load_in_8bit nor load_in_4bit"
    if method in ("gptq", "awq"):
        bits = q.get("bits", q.get("w_bit"))
        if bits == 4:
            return f"{method}-int4", None
        return None, f"{method} with {bits} bits: only 4-bit {method} is sized"
    if method in ("fp8", "fbgemm_fp8"):
        return "fp8", None
    if method == "mxfp4":
        return "mxfp4", None
    if method == "compressed-tensors":
        return _compressed_tensors(q)
    return None, f"quant_method {method!r} is not sized by gpusizer"


def _compressed_tensors(q: Mapping[str, object]) -> tuple[str | None, str | None]:
    """One config group with one weight scheme maps to a format; anything richer is unknown."""
    groups = q.get("config_groups")
    if not isinstance(groups, Mapping) or len(groups) != 1:
        return None, "compressed-tensors with several (or no) config_groups is not sized"
    group = next(iter(groups.values()))
    weights = group.get("weights") if isinstance(group, Mapping) else None
    if not isinstance(weights, Mapping):
        return None, "compressed-tensors group without a weights scheme"
    key = (weights.get("num_bits"), weights.get("type"))
    fmt = {(8, "float"): "fp8", (8, "int"): "int8", (4, "int"): "int4"}.get(key)
    if fmt is None:
        return None, f"compressed-tensors weights {key} are not sized"
    return fmt, None
