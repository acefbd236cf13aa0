"""The weight format a checkpoint stores, in the sheet's vocabulary, from its config.json.

``quantization_config`` decides when present, read by the family detectors of
``gpusizer.formats`` (transformers ``utils/quantization_config.py`` names the methods); without
it, a side file a format declares (ModelOpt's ``hf_quant_config.json``); otherwise
``torch_dtype`` (``dtype`` in transformers >= 4.56).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import ModelError
from ..formats import detect, dtype_format, quantization_config_of

__all__ = ["stored_format", "declared_quantization"]


def declared_quantization(config: Mapping[str, object], side: Mapping[str, Mapping], *,
                          file: str) -> tuple[dict | None, str]:
    """The checkpoint's quantization config (config.json's, else a side file's) and its source.

    Raises:
        ModelError: ``quantization_config`` is not a JSON object.
    """
    quant = config.get("quantization_config")
    if quant is not None and not isinstance(quant, Mapping):
        raise ModelError(f"expected a JSON object, got {quant!r}", field="quantization_config",
                         value=quant, file=file)
    declared, where = quantization_config_of(quant, side)
    return (dict(declared) if declared is not None else None), where


def stored_format(config: Mapping[str, object], *, file: str,
                  side: Mapping[str, Mapping] | None = None
                  ) -> tuple[str | None, str | None, str | None]:
    """``(stored_dtype, stored_format, note)`` of a config.

    stored_dtype is ``torch_dtype``/``dtype`` as written; stored_format is a name of
    ``gpusizer.formats.FORMATS``, or None when unknown, with the reason in ``note`` (None when
    nothing needs saying). ``side`` holds the side files read next to config.json.

    Raises:
        ModelError: ``quantization_config`` is not a JSON object.
    """
    raw = config.get("torch_dtype", config.get("dtype"))
    dtype = raw if isinstance(raw, str) else None
    quant, where = declared_quantization(config, side or {}, file=file)
    if quant is None:
        if dtype is None:
            return None, None, "config.json gives no torch_dtype: stored format unknown"
        fmt = dtype_format(dtype)
        return dtype, fmt, None if fmt else f"torch_dtype {dtype!r} has no sheet weight format"
    found = detect(quant, where=where)
    return dtype, found.fmt, found.note
