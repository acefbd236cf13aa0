"""The registry: every weight format gpusizer sizes, in the sheet's order, and its lookups.

``FORMATS`` is the only list of formats: the sheet's allowed ``weights`` values, estimate,
training, card rules, alternatives, simulate, quality, measure and config.json detection all
read it. Adding a format is one family module plus one entry here (``README.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..errors import SheetError
from . import bnb, dense, fp8, gptq, mxfp4, nvfp4, theoretical
from .quant_config import (DEFAULT_GROUP_SIZE, FP8_DEFAULT_BLOCK, QuantConfig, QuantParams,
                           QuantSource, SheetQuantization)
from .record import WeightFormat

__all__ = ["FORMATS", "NAMES", "weight_format", "detect", "dtype_format", "compute_dtype",
           "side_files", "quantization_config_of", "quant_params"]

_ORDER: tuple[WeightFormat, ...] = (
    *dense.RECORDS,                 # fp32, fp16, bf16
    fp8.RECORD,
    *bnb.RECORDS,                   # int8, nf4, fp4
    theoretical.RECORD,             # int4
    *gptq.RECORDS,                  # gptq-int4, awq-int4
    mxfp4.RECORD,
    nvfp4.RECORD,
)

FORMATS: Mapping[str, WeightFormat] = MappingProxyType({r.name: r for r in _ORDER})
"""Every weight format by its sheet name, in the sheet's order."""

NAMES: tuple[str, ...] = tuple(FORMATS)
"""The sheet's ``weights`` values besides ``auto``."""


def weight_format(name: str) -> WeightFormat:
    """The record of ``name``.

    Raises:
        SheetError: ``name`` is not a format gpusizer sizes (field ``weights``).
    """
    try:
        return FORMATS[name]
    except KeyError:
        raise SheetError(f"unknown weight format {name!r}: expected one of {', '.join(NAMES)}",
                         field="weights", value=name) from None


def dtype_format(torch_dtype: str) -> str | None:
    """config.json ``torch_dtype`` (``"bfloat16"``, ``"torch.float16"``) → format name, or None."""
    name = torch_dtype.removeprefix("torch.")
    return next((r.name for r in _ORDER if r.torch_dtype == name), None)


def compute_dtype(fmt: str, quant_compute_dtype: str) -> str:
    """The dtype matmuls and activations run in: a 16/32-bit format computes in itself, a
    quantized one in the sheet's ``quantization.compute_dtype``."""
    return fmt if FORMATS[fmt].dense else quant_compute_dtype


def side_files() -> tuple[str, ...]:
    """Files next to config.json that some format's detector reads (``hf_quant_config.json``)."""
    return tuple(dict.fromkeys(f for r in _ORDER for f in r.side_files))


def quantization_config_of(config_quant: Mapping | None,
                           side: Mapping[str, Mapping]) -> tuple[Mapping | None, str]:
    """The quantization config a checkpoint declares, and where it is written.

    config.json's ``quantization_config`` wins; without it, the first side file a format
    declares (``side_files``) and the folder holds, turned into one by that format's reader.
    """
    if config_quant is not None:
        return config_quant, "config.json quantization_config"
    for r in _ORDER:
        for name, read in r.side_files.items():
            if name in side:
                return read(side[name]), name
    return None, "config.json quantization_config"


def detect(raw: Mapping, *, where: str = "config.json quantization_config") -> QuantConfig:
    """The stored format a ``quantization_config`` describes, read by its family's detector.

    Returns:
        A :class:`QuantConfig`; ``fmt`` None with the reason in ``note`` when no format claims
        it.
    """
    src = QuantSource.of(raw, where)
    for r in _ORDER:
        if r.detect is not None:
            got = r.detect(src)
            if got is not None:
                return got
    if src.method == "compressed-tensors":
        _, problem = src.compressed_tensors_weights()
        kind = src.compressed_tensors_kind()
        note = problem or f"compressed-tensors weights {kind} are not sized"
    else:
        note = f"quant_method {raw.get('quant_method')!r} is not sized by gpusizer"
    return src.config(None, note=note)


def quant_params(requested: SheetQuantization | None, stored: QuantConfig | None, runs: str, *,
                 stored_format: str | None) -> QuantParams:
    """The parameters of the running format: a checkpoint that already stores ``runs`` gives
    its own values; otherwise the sheet's; otherwise the defaults of this module.

    Args:
        requested: the sheet's ``quantization`` block, or None (the defaults).
        stored: the checkpoint's parsed config, or None.
        runs: the format on the GPU.
        stored_format: the format the checkpoint stores (its values apply only when it is
            ``runs``).

    Raises:
        SheetError: the sheet sets a value the checkpoint contradicts.
    """
    sheet_keys = weight_format(runs).sheet_keys
    group = requested.group_size if requested is not None else DEFAULT_GROUP_SIZE
    dq = requested.double_quant if requested is not None else False
    given = requested.model_fields_set if requested is not None else set()
    if stored is None or stored_format != runs:
        return QuantParams(group, dq, FP8_DEFAULT_BLOCK)
    if "group_size" in sheet_keys and stored.group_size is not None:
        if "group_size" in given and group != stored.group_size:
            raise SheetError(f"the checkpoint is quantized with group_size {stored.group_size}, "
                             f"the sheet says {group}", field="quantization.group_size",
                             value=group)
        group = stored.group_size  # -1: one group spans all inputs (per-channel)
    if "double_quant" in sheet_keys and stored.double_quant is not None:
        if "double_quant" in given and dq != stored.double_quant:
            raise SheetError(f"the checkpoint says double quantization {stored.double_quant} "
                             f"({stored.source})", field="quantization.double_quant", value=dq)
        dq = stored.double_quant
    return QuantParams(group, dq, stored.block if stored.block is not None else FP8_DEFAULT_BLOCK)
