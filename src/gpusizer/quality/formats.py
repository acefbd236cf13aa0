"""Candidate weight formats for a quality run, and how each is produced (imports torch).

- the weight formats whose record (``gpusizer.formats``) has ``quality`` ``dtype`` (fp32, fp16,
  bf16): the checkpoint loaded in that dtype (``from_pretrained(dtype=…)``); runs everywhere;
- those with ``quality`` ``bitsandbytes`` (int8, nf4, fp4): bitsandbytes through transformers'
  ``BitsAndBytesConfig`` (LLM.int8, 4-bit NF4/FP4) — what ``weights: int8/nf4/fp4`` loads; runs
  where bitsandbytes is installed and has kernels for the device;
- the others need their own pre-quantized checkpoint (evaluated elsewhere and imported);
- ``int8-roundtrip``, ``int4-roundtrip``: every ``nn.Linear`` weight except ``lm_head``
  quantized per output channel, symmetric, round-to-nearest, then dequantized back to the
  reference dtype; runs everywhere (a simulation: no int kernel, weights stay in that dtype).

A round-trip's evidence names the format it only approximates (``proxy_for``): it is reported
next to the quality criterion but never decides it, since the kernel that runs differs
(bitsandbytes int8 keeps outlier columns in 16 bit, NF4 uses blockwise absmax over a normal-float
codebook).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import torch

from ..errors import FormatUnavailableError, QualityError
from ..formats import FORMATS as WEIGHT_FORMATS

__all__ = ["FormatSpec", "FORMATS", "format_spec", "TORCH_DTYPES", "roundtrip_linear_weights",
           "bitsandbytes_config", "require_runnable"]

TORCH_DTYPES = {n: getattr(torch, r.torch_dtype) for n, r in WEIGHT_FORMATS.items() if r.dense}


@dataclass(frozen=True)
class FormatSpec:
    """How a candidate format is produced.

    Attributes:
        name: the candidate's name (evidence ``candidate_format``).
        kind: ``dtype`` | ``bitsandbytes`` | ``roundtrip``.
        implementation: one line for the evidence (what produced the numbers).
        bits: round-trip bits (8 or 4), else None.
        proxy_for: the sheet format a round-trip approximates, else None.
    """

    name: str
    kind: str
    implementation: str
    bits: int | None = None
    proxy_for: str | None = None


FORMATS: dict[str, FormatSpec] = {
    **{n: FormatSpec(n, r.quality, r.quality_implementation)
       for n, r in WEIGHT_FORMATS.items() if r.quality is not None},
    "int8-roundtrip": FormatSpec("int8-roundtrip", "roundtrip", "PyTorch per-output-channel "
                                 "symmetric int8 round-trip of nn.Linear weights (lm_head kept), "
                                 "dequantized to the reference dtype: a simulation", 8, "int8"),
    "int4-roundtrip": FormatSpec("int4-roundtrip", "roundtrip", "PyTorch per-output-channel "
                                 "symmetric int4 round-trip of nn.Linear weights (lm_head kept), "
                                 "dequantized to the reference dtype: a simulation", 4, "int4"),
}


def format_spec(name: str) -> FormatSpec:
    """The spec of a candidate or reference format.

    Raises:
        QualityError: a format a quality run cannot produce (those whose record has no
            ``quality``: fp8, GPTQ, AWQ, MXFP4… need their own pre-quantized checkpoints).
    """
    spec = FORMATS.get(name)
    if spec is None:
        own = [n for n, r in WEIGHT_FORMATS.items() if r.quality is None and not r.theoretical]
        raise QualityError(f"expected one of {', '.join(FORMATS)}, got {name!r} "
                           f"({', '.join(own[:-1])} and {own[-1]} need their own checkpoint: "
                           "evaluate it with lm-evaluation-harness and `gpusizer quality "
                           "import`)", field="--candidate", value=name)
    return spec


def require_runnable(spec: FormatSpec) -> None:
    """Refuse, before any model is loaded, a format whose library is missing here.

    Raises:
        FormatUnavailableError: bitsandbytes is not installed (int8, nf4, fp4).
    """
    if spec.kind == "bitsandbytes" and importlib.util.find_spec("bitsandbytes") is None:
        raise FormatUnavailableError(
            f"candidate {spec.name} is evaluated with bitsandbytes, which is not installed in "
            "this environment (pip install bitsandbytes; its kernels target CUDA GPUs). Here, "
            "int8-roundtrip / int4-roundtrip run everywhere but only simulate the format: their "
            "evidence never decides the quality criterion", field="--candidate", value=spec.name)


def bitsandbytes_config(spec: FormatSpec, compute_dtype: torch.dtype, *, double_quant: bool):
    """transformers' ``BitsAndBytesConfig`` for ``int8`` / ``nf4`` / ``fp4``.

    Raises:
        FormatUnavailableError: bitsandbytes is not installed here.
    """
    require_runnable(spec)
    from transformers import BitsAndBytesConfig
    if WEIGHT_FORMATS[spec.name].bits == 8:  # LLM.int8; the 4-bit ones name their codebook
        return BitsAndBytesConfig(load_in_8bit=True)
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=spec.name,
                              bnb_4bit_compute_dtype=compute_dtype,
                              bnb_4bit_use_double_quant=double_quant)


@torch.no_grad()
def roundtrip_linear_weights(model: torch.nn.Module, bits: int) -> int:
    """Quantize and dequantize every ``nn.Linear`` weight except ``lm_head``, in place.

    Per output channel ``r``: ``scale_r = max|W_r| / qmax`` with ``qmax = 2^(bits−1) − 1``
    (127 for int8, 7 for int4); ``W_r ← clamp(round(W_r / scale_r), −qmax, qmax) × scale_r``,
    computed in float32 and cast back to the weight's dtype (symmetric round-to-nearest, as in
    LLM.int8's vector-wise absmax, Dettmers et al. 2022 §3.1, without its outlier split).

    Returns:
        The number of weight matrices rounded.
    """
    if bits not in (4, 8):
        raise QualityError(f"expected 4 or 8 bits, got {bits}", field="bits", value=bits)
    qmax = 2 ** (bits - 1) - 1
    count = 0
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear) or name.split(".")[-1] == "lm_head":
            continue
        w = module.weight.data
        w32 = w.float()
        scale = w32.abs().amax(dim=1, keepdim=True) / qmax
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
        q = torch.clamp(torch.round(w32 / scale), -qmax, qmax)
        w.copy_((q * scale).to(w.dtype))
        count += 1
    return count
