"""The model a measurement runs: real weights (safetensors only) or random weights in the exact
architecture of config.json.

- ``model.path``: a local folder with ``config.json`` (and ``*.safetensors`` for real weights).
- ``model.id`` + ``model.revision``: the Hub (config.json only with ``--random-weights``).
- ``model.parameters``: refused — a bare count has no architecture to run.

Remote code is never executed (``trust_remote_code=False`` always; a ``model_type`` that
transformers does not know is refused). Weights are read only as safetensors
(``use_safetensors=True``: a folder with only ``.bin`` / ``.pt`` files is refused, nothing is
unpickled). Random weights are created directly in the target dtype on the target device:
memory does not depend on the values.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import MeasureError, MeasureUnsupportedError
from ..formats import FORMATS, dtype_format, side_files
from ..memory.engines import ENGINES
from ..model.resolve import model_folder
from ..sheet import Sheet
from .quantized_bases import (BNB_OPTIMIZERS, QuantizedBase, bnb_config_kwargs, quantized_base,
                              require_kernels)

__all__ = ["LoadedModel", "target_dtype", "load_config", "load_model", "preflight", "ATTENTION"]

_DTYPES = {n: getattr(torch, r.torch_dtype) for n, r in FORMATS.items() if r.dense}
"""The weight formats this harness runs (the registry's 16/32-bit ones) → torch dtype."""
_OPTIMIZERS = ("adamw", "sgd", "sgd-momentum", "adafactor")
"""Optimizers this harness builds from torch.optim (8-bit and paged ones need bitsandbytes)."""
ATTENTION = {"sdpa": "sdpa", "eager": "eager", "flash": "flash_attention_2"}
"""Sheet ``attention`` → transformers ``attn_implementation``."""


@dataclass
class LoadedModel:
    """A model ready to run, with what was loaded (recorded in the evidence)."""

    model: torch.nn.Module
    config: object
    dtype_name: str
    weights: str  # "random" or "real"; dtype_name: the dtype parameters are stored in
    source: str  # the folder or "hub:<id>@<revision>"
    parameters: int
    compute_dtype_name: str = ""  # the dtype matmuls run in (differs under full + amp)
    runnable: object = None  # what the phases call: the model, or its DDP wrapper


def _model_source(sheet: Sheet, base_dir: Path | None) -> tuple[str, str | None]:
    m = sheet.model
    if m.parameters is not None:
        raise MeasureUnsupportedError("a bare parameter count has no architecture to run; give "
                                      "model.path (a folder with config.json) or model.id",
                                      field="model.parameters", value=m.parameters)
    if m.path is not None:
        p = model_folder(m.path, base_dir)
        if not (p / "config.json").is_file():
            raise MeasureUnsupportedError(f"expected a folder holding config.json, got {str(p)!r}",
                                          field="model.path", value=m.path)
        return str(p), None
    return str(m.id), m.revision


def load_config(sheet: Sheet, base_dir: Path | None = None):
    """The model's transformers config, never executing remote code.

    Raises:
        MeasureUnsupportedError: no architecture (bare count), no config.json, or a model_type
            transformers does not know (it would need remote code).
    """
    from transformers import AutoConfig
    src, revision = _model_source(sheet, base_dir)
    try:
        return AutoConfig.from_pretrained(src, revision=revision, trust_remote_code=False)
    except ValueError as exc:
        raise MeasureUnsupportedError(f"transformers cannot build this architecture without "
                                      f"remote code, which gpusizer never runs: {exc}",
                                      field="model", value=src) from None
    except OSError as exc:
        raise MeasureError(f"cannot read config.json of {src!r} (revision {revision}): {exc}; "
                           "offline, give model.path: a folder holding that config.json",
                           field="model", value=src) from None


def target_dtype(sheet: Sheet, config) -> str:
    """The dtype the weights are created in: the sheet's ``weights``, or config.json's for auto.

    A quantized base (``measure.quantized_bases``) is created in its compute dtype
    (``quantization.compute_dtype`` for bitsandbytes; fp16 for GPTQ / AWQ unless config.json
    states bf16), which this returns.

    Raises:
        MeasureUnsupportedError: a quantized format this harness does not load (fp8, mxfp4,
            nvfp4, bare int4), or auto with a config that states no dtype.
    """
    w = sheet.weights
    if quantized_base(sheet, config) is not None:
        return _quantized_compute(sheet, config)
    if w == "auto":
        stated = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
        name = str(stated).removeprefix("torch.") if stated is not None else None
        if getattr(config, "quantization_config", None):
            raise MeasureUnsupportedError("the checkpoint is pre-quantized; this harness runs "
                                          "16- and 32-bit weights", field="weights", value=w)
        fmt = dtype_format(name) if name is not None else None
        if fmt not in _DTYPES:
            raise MeasureUnsupportedError(f"config.json states dtype {name!r}; expected one of "
                                          f"{', '.join(FORMATS[f].torch_dtype for f in _DTYPES)}"
                                          " — set weights explicitly", field="weights", value=w)
        return fmt
    if w not in _DTYPES:
        raise MeasureUnsupportedError(f"weights {w} need quantization kernels this harness does "
                                      f"not run yet ({FORMATS[w].layout}); expected "
                                      f"{', '.join(list(_DTYPES)[:-1])} or {list(_DTYPES)[-1]}",
                                      field="weights", value=w)
    return w


def _quantized_compute(sheet: Sheet, config) -> str:
    """The compute dtype of a quantized base (see :func:`target_dtype`)."""
    base = quantized_base(sheet, config)
    assert base is not None
    if base.method == "bitsandbytes":
        return sheet.quantization.compute_dtype
    stated = str(getattr(config, "dtype", None) or getattr(config, "torch_dtype", None) or "")
    return "bf16" if stated.removeprefix("torch.") == "bfloat16" else "fp16"


def _has_safetensors(folder: Path) -> bool:
    return any(folder.glob("*.safetensors"))


def preflight(sheet: Sheet, device: torch.device, *, random_weights: bool,
              base_dir: Path | None, config) -> str:
    """Refuse, before anything runs, what this harness cannot load; returns the target dtype.

    Raises:
        MeasureUnsupportedError: see :func:`target_dtype`; ``weights: auto`` on a folder whose
            quantization is declared in a side file (``gpusizer.formats.side_files``); flash
            attention without CUDA; real weights from a folder without safetensors; a quantized
            base or an 8-bit / paged optimizer off CUDA or with ``--random-weights``
            (``quantized_bases.require_kernels``).
        MeasureExtraMissingError: bitsandbytes, GPTQModel / AutoGPTQ or AutoAWQ not installed
            for a base or optimizer that needs it (one line naming the package).
    """
    dtype_name = target_dtype(sheet, config)
    src, revision = _model_source(sheet, base_dir)
    declared = [f for f in side_files() if revision is None and (Path(src) / f).is_file()]
    if sheet.weights == "auto" and declared:
        # a quantization declared beside config.json (ModelOpt's hf_quant_config.json), which
        # transformers' config does not carry
        raise MeasureUnsupportedError(f"the checkpoint is pre-quantized ({declared[0]}); this "
                                      "harness runs 16- and 32-bit weights", field="weights",
                                      value=sheet.weights)
    base = quantized_base(sheet, config)
    if base is not None:
        require_kernels(base, device.type, random_weights=random_weights)
    if sheet.training is not None and sheet.training.optimizer not in _OPTIMIZERS:
        if sheet.training.optimizer not in BNB_OPTIMIZERS:
            raise MeasureUnsupportedError(f"optimizer {sheet.training.optimizer}: this harness "
                                          f"runs {', '.join(_OPTIMIZERS)} and "
                                          f"{', '.join(BNB_OPTIMIZERS)}",
                                          field="training.optimizer",
                                          value=sheet.training.optimizer)
        require_kernels(QuantizedBase(sheet.training.optimizer, "bitsandbytes", False,
                                      (("bitsandbytes",),)), device.type, random_weights=False,
                        what=f"optimizer {sheet.training.optimizer}")
    engine = ENGINES[sheet.inference.engine] if sheet.inference is not None else None
    if engine is not None and not engine.measure_supported:
        raise MeasureUnsupportedError(engine.measure_refusal, field="inference.engine",
                                      value=engine.name)
    if sheet.inference is not None and sheet.inference.kv_cache_dtype not in ("auto",
                                                                              dtype_name):
        raise MeasureUnsupportedError(f"a KV cache in {sheet.inference.kv_cache_dtype} with "
                                      f"{dtype_name} weights is not run by this harness",
                                      field="inference.kv_cache_dtype",
                                      value=sheet.inference.kv_cache_dtype)
    if ATTENTION[sheet.attention] == "flash_attention_2" and device.type != "cuda":
        raise MeasureUnsupportedError("flash attention needs a CUDA device", field="attention",
                                      value=sheet.attention)
    if not random_weights and revision is None and not _has_safetensors(Path(src)):
        raise MeasureUnsupportedError(f"no *.safetensors in {src!r}: weights are read only as "
                                      "safetensors (never unpickled); or use --random-weights",
                                      field="model.path", value=src)
    return dtype_name


def load_model(sheet: Sheet, device: torch.device, *, random_weights: bool,
               base_dir: Path | None = None, config=None) -> LoadedModel:
    """Build the model on ``device``: random weights from config.json, or the real safetensors.

    Raises:
        MeasureUnsupportedError: see :func:`load_config`, :func:`target_dtype`; real weights
            without safetensors; flash attention without CUDA.
        MeasureError: the checkpoint could not be read.
    """
    from transformers import AutoModelForCausalLM
    config = config if config is not None else load_config(sheet, base_dir)
    compute_name = target_dtype(sheet, config)
    # full fine-tuning with precision amp keeps fp32 trained parameters (CONTRACT.md: "amp: fp32
    # copies of trained params, grads and states, compute in the compute dtype")
    amp_full = sheet.task == "full" and sheet.training is not None \
        and sheet.training.precision == "amp"
    dtype_name = "fp32" if amp_full else compute_name
    dtype = _DTYPES[dtype_name]
    base = quantized_base(sheet, config)
    quantized: dict = {}
    if base is not None:
        require_kernels(base, device.type, random_weights=random_weights)
        kwargs = bnb_config_kwargs(base, sheet)
        if kwargs:
            from transformers import BitsAndBytesConfig
            quantized = {"quantization_config": BitsAndBytesConfig(**kwargs)}
        dtype_name = base.fmt
    attn = ATTENTION[sheet.attention]
    if attn == "flash_attention_2" and device.type != "cuda":
        raise MeasureUnsupportedError("flash attention needs a CUDA device", field="attention",
                                      value=sheet.attention)
    src, revision = _model_source(sheet, base_dir)
    if random_weights:
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn,
                                                     trust_remote_code=False)
        source = src if revision is None else f"hub:{src}@{revision}"
    else:
        if revision is None and not _has_safetensors(Path(src)):
            raise MeasureUnsupportedError(f"no *.safetensors in {src!r}: weights are read only as "
                                          "safetensors (never unpickled); or use --random-weights",
                                          field="model.path", value=src)
        try:
            model = AutoModelForCausalLM.from_pretrained(
                src, revision=revision, dtype=dtype, attn_implementation=attn,
                use_safetensors=True, trust_remote_code=False, device_map={"": device},
                **quantized)
        except OSError as exc:
            raise MeasureError(f"cannot load safetensors weights of {src!r}: {exc}",
                               field="model", value=src) from None
        source = src if revision is None else f"hub:{src}@{revision}"
    model.eval()
    count = sum(p.numel() for p in model.parameters())
    return LoadedModel(model, config, dtype_name, "random" if random_weights else "real", source,
                       int(count), compute_name)
