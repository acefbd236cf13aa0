"""Quantized bases for ``gpusizer measure`` (issue 15 point 6): bitsandbytes nf4 / fp4 / int8
(inference, LoRA on them, QLoRA) and pre-quantized GPTQ / AWQ checkpoints (inference).

What runs them is the library transformers itself calls: bitsandbytes through
``BitsAndBytesConfig`` (``load_in_4bit``, ``bnb_4bit_quant_type``, ``bnb_4bit_use_double_quant``,
``bnb_4bit_compute_dtype``; ``load_in_8bit``), quantized while ``from_pretrained`` loads the real
weights; GPTQ through GPTQModel (or the legacy AutoGPTQ + optimum) and AWQ through AutoAWQ, read
from the checkpoint's own ``quantization_config``. Their kernels run on CUDA; on a machine without
the library or without a CUDA device, :func:`require_kernels` refuses with one line naming what
is missing (:class:`gpusizer.errors.MeasureExtraMissingError`, the ``install_line`` style).
Nothing here imports the libraries: presence is asked of ``importlib.util.find_spec``.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

from ..errors import MeasureExtraMissingError, MeasureUnsupportedError
from ..sheet import Sheet

__all__ = ["QuantizedBase", "quantized_base", "require_kernels", "bnb_config_kwargs",
           "BNB_FORMATS", "BNB_OPTIMIZERS", "BNB_CPU_BACKEND"]

BNB_FORMATS = ("nf4", "fp4", "int8")
"""Weight formats bitsandbytes produces while transformers loads a 16-bit checkpoint."""
BNB_OPTIMIZERS = {"adamw-8bit": "AdamW8bit", "paged-adamw-8bit": "PagedAdamW8bit",
                  "paged-adamw-32bit": "PagedAdamW32bit"}
"""Sheet optimizers → ``bitsandbytes.optim`` classes (bitsandbytes ``optim/adamw.py``)."""
_PREQUANTIZED = {"gptq": (("gptqmodel",), ("auto_gptq", "optimum")),
                 "awq": (("awq",),)}
"""``quant_method`` → the module sets, any one of which runs it under transformers (GPTQModel;
or AutoGPTQ with optimum, transformers < 4.49; AutoAWQ's package ``awq``)."""
_PACKAGES = {"gptqmodel": "gptqmodel", "auto_gptq": "auto-gptq", "optimum": "optimum",
             "awq": "autoawq", "bitsandbytes": "bitsandbytes"}
"""Module name → the package pip installs it from."""


@dataclass(frozen=True)
class QuantizedBase:
    """A quantized base the harness loads.

    Attributes:
        fmt: the format (``nf4``, ``fp4``, ``int8``, ``gptq-int4``, ``awq-int4``).
        method: ``bitsandbytes``, ``gptq`` or ``awq``.
        prequantized: read quantized from the checkpoint (GPTQ, AWQ, a bitsandbytes
            checkpoint) rather than quantized while loading.
        needs: module sets, any one of which runs it (all of one set must be importable).
    """

    fmt: str
    method: str
    prequantized: bool
    needs: tuple[tuple[str, ...], ...]


def _stored_method(config) -> str | None:
    q = getattr(config, "quantization_config", None)
    if q is None:
        return None
    q = q if isinstance(q, dict) else (q.to_dict() if hasattr(q, "to_dict") else vars(q))
    method = q.get("quant_method")
    return str(method).lower() if method else ("bitsandbytes" if q.get("load_in_4bit")
                                               or q.get("load_in_8bit") else None)


def quantized_base(sheet: Sheet, config) -> QuantizedBase | None:
    """The quantized base the sheet asks for, or None for a 16/32-bit one.

    ``task: qlora`` (weights ``auto`` → nf4), ``weights`` nf4 / fp4 / int8 → bitsandbytes while
    loading; a checkpoint whose config.json ``quantization_config`` is gptq / awq / bitsandbytes
    with ``weights: auto`` or its own format → pre-quantized.

    Raises:
        MeasureUnsupportedError: a pre-quantized GPTQ / AWQ base under training (its packed int4
            weights are frozen, and PEFT's GPTQ/AWQ adapters are not run by this harness), or a
            quantization method this harness does not load (fp8, mxfp4, compressed-tensors …).
    """
    stored = _stored_method(config)
    w = sheet.weights
    if stored is not None and w in ("auto", "gptq-int4", "awq-int4", *BNB_FORMATS):
        if stored in _PREQUANTIZED:
            if sheet.task != "inference":
                raise MeasureUnsupportedError(f"a pre-quantized {stored} base under {sheet.task}: "
                                              "this harness measures GPTQ / AWQ inference only",
                                              field="task", value=sheet.task)
            return QuantizedBase(f"{stored}-int4", stored, True, _PREQUANTIZED[stored])
        if stored == "bitsandbytes":
            return QuantizedBase(w if w in BNB_FORMATS else "nf4", stored, True,
                                 (("bitsandbytes",),))
        raise MeasureUnsupportedError(f"a {stored} checkpoint: this harness loads bitsandbytes, "
                                      "GPTQ and AWQ bases (and 16/32-bit ones)", field="weights",
                                      value=w)
    if sheet.task == "qlora" or w in BNB_FORMATS:
        fmt = w if w in BNB_FORMATS else "nf4"
        return QuantizedBase(fmt, "bitsandbytes", False, (("bitsandbytes",),))
    return None


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


BNB_CPU_BACKEND = (0, 50)
"""bitsandbytes release from which the harness lets its CPU backend run (the wheel ships
``libbitsandbytes_cpu.so``): 0.50.2 loads ``nn.Linear4bit`` nf4 layers through transformers
5.24 and runs their forward on the CPU (checked for issue 15). Earlier releases with the
"multi-backend" preview may too, untested: refused (CUDA only)."""


def _bnb_cpu_backend() -> bool:
    """bitsandbytes is at least :data:`BNB_CPU_BACKEND` (read from its metadata, not imported)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        parts = version("bitsandbytes").split(".")[:2]
        return tuple(int("".join(c for c in p if c.isdigit()) or 0) for p in parts) \
            >= BNB_CPU_BACKEND
    except (PackageNotFoundError, ValueError):
        return False


def require_kernels(base: QuantizedBase, device_type: str, *, random_weights: bool,
                    what: str | None = None) -> None:
    """Refuse, with one line naming what is missing, a quantized base this machine cannot run.

    Raises:
        MeasureExtraMissingError: no module set of ``base.needs`` is installed (the line names
            the packages and the pip command).
        MeasureUnsupportedError: not a CUDA device (the kernels are CUDA's; bitsandbytes from
            :data:`BNB_CPU_BACKEND` on also runs on the CPU, to test the path); ``--random-weights``
            (random values are created in 16/32-bit: bitsandbytes quantizes real weights as
            they load, and GPTQ / AWQ weights are read packed from the checkpoint).
    """
    what = what or f"weights {base.fmt}"
    if not any(all(_installed(m) for m in group) for group in base.needs):
        options = " or ".join(" + ".join(_PACKAGES[m] for m in g) for g in base.needs)
        pip = " ".join(_PACKAGES[m] for m in base.needs[0])
        raise MeasureExtraMissingError(f"{what} needs {options}, not installed on this "
                                       f"machine: pip install {pip} (with a CUDA torch)")
    if device_type == "cpu" and base.method == "bitsandbytes" and _bnb_cpu_backend():
        pass   # bitsandbytes' CPU backend: the code path runs, CPU counters only
    elif device_type != "cuda":
        raise MeasureUnsupportedError(f"{what} runs on {base.method}'s CUDA kernels; this run "
                                      f"is on {device_type}", field=what.split()[0],
                                      value=base.fmt)
    if random_weights:
        raise MeasureUnsupportedError(f"--random-weights creates 16/32-bit values; {base.fmt} "
                                      + ("is read packed from the checkpoint" if base.prequantized
                                         else "is quantized from the real weights as they load")
                                      + ": run without --random-weights", field="--random-weights",
                                      value=True)


def bnb_config_kwargs(base: QuantizedBase, sheet: Sheet) -> dict[str, Any]:
    """``transformers.BitsAndBytesConfig`` keyword arguments for a base quantized while loading
    (none for a pre-quantized one: its config.json has them). The compute dtype is
    ``quantization.compute_dtype`` as a torch dtype name."""
    if base.method != "bitsandbytes" or base.prequantized:
        return {}
    q = sheet.quantization
    compute = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}[q.compute_dtype]
    if base.fmt == "int8":
        return {"load_in_8bit": True}
    return {"load_in_4bit": True, "bnb_4bit_quant_type": base.fmt,
            "bnb_4bit_use_double_quant": q.double_quant, "bnb_4bit_compute_dtype": compute}
