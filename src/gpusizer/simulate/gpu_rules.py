"""Make the traced model code take the paths a GPU run takes (the three rules of issue 4).

Under fake CPU tensors three things silently differ from a CUDA run, each by gigabytes:

1. **Attention kernel.** ``F.scaled_dot_product_attention`` on CPU tensors takes a CPU kernel.
   :func:`choose_attention_kernel` decides what PyTorch's CUDA dispatcher would take (flash,
   memory-efficient or math) from the dtype, head_dim, compute capability, mask and
   soft-capping, and :class:`GpuRules` calls that kernel's own ATen operator, whose fake
   implementation allocates exactly its outputs (and what autograd saves: out + logsumexp). The
   math kernel is written out as PyTorch's ``_scaled_dot_product_attention_math`` does on CUDA
   (the S × S scores in the input dtype). ``attention: eager`` is left alone: transformers' eager
   attention keeps its S × S matrix on a GPU as well.
2. **Packed-sequence detection.** transformers' ``masking_utils.find_packed_sequence_indices``
   treats a fake tensor as tracing and returns a packed-sequence mask, which builds a 4-D mask
   and pushes SDPA off the flash kernel. On a GPU the check reads the position ids (0…n-1 for
   every row: not packed) and returns None; :class:`GpuRules` answers None the same way.
3. **Optimizer implementation.** ``torch.optim.AdamW`` picks the per-tensor loop for CPU tensors;
   a CUDA run uses ``foreach`` by default (``fused`` when asked). The simulator passes the flag
   explicitly (:func:`optimizer_flags`).

Sources: pytorch/pytorch aten/src/ATen/native/transformers/cuda/sdp_utils.cpp
(``check_flash_attention_hardware_support`` sm80+, ``check_head_dim_size_flash`` ≤ 256,
``check_dtypes_low_precision``, ``check_for_attn_mask`` for flash; memory-efficient: sm50+, bf16
needs sm80, head_dim multiple of 8 for 16-bit / 4 for fp32, GQA not supported natively) and
``attention.cpp`` (priority flash → memory-efficient → math);
huggingface/transformers src/transformers/masking_utils.py and integrations/sdpa_attention.py;
torch/optim/optimizer.py ``_default_to_fused_or_foreach``.
"""

from __future__ import annotations

import math
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from unittest import mock

from ..formats import weight_format
from ..memory.card_rules import FLASH_ATTENTION_MIN_CC

__all__ = ["AttentionChoice", "choose_attention_kernel", "optimizer_flags", "GpuRules",
           "DEFAULT_COMPUTE_CAPABILITY"]

DEFAULT_COMPUTE_CAPABILITY = (8, 0)
"""Assumed without ``--card``: an Ampere-or-later data-centre GPU (A100 is 8.0)."""

_LOW_PRECISION = ("fp16", "bf16")


@dataclass(frozen=True)
class AttentionChoice:
    """The kernel SDPA would run on the GPU, and why.

    Attributes:
        kernel: ``flash`` | ``efficient`` | ``math`` | ``eager``.
        reason: the rule that decided it.
    """

    kernel: str
    reason: str


def choose_attention_kernel(*, dtype: str, head_dim: int, has_mask: bool,
                            compute_capability: tuple[int, int], softcapping: bool = False,
                            requested: str = "sdpa",
                            value_head_dim: int | None = None) -> AttentionChoice:
    """The attention kernel a CUDA run takes (pure).

    Args:
        dtype: ``fp32`` | ``fp16`` | ``bf16`` (query dtype).
        head_dim: per-head width (elements).
        has_mask: True when an explicit attention mask tensor is passed (padding, sliding
            window, packed sequences); a plain causal mask is ``is_causal``, not a mask.
        compute_capability: (major, minor) of the card.
        softcapping: the model soft-caps attention logits (Gemma 2): SDPA has no soft-cap, so
            transformers runs its eager attention.
        requested: the sheet's ``attention`` (``sdpa`` | ``flash`` | ``eager``).
        value_head_dim: per-head width of V when it differs from Q/K (MLA); flash needs them
            equal.

    Returns:
        AttentionChoice. Priority as PyTorch's CUDA dispatcher: flash → memory-efficient → math.
    """
    cc = tuple(compute_capability)
    if requested == "eager":
        return AttentionChoice("eager", "attention: eager (transformers eager_attention_forward "
                                        "keeps the S × S scores)")
    if requested == "flash" and cc >= FLASH_ATTENTION_MIN_CC and dtype in _LOW_PRECISION \
            and head_dim <= 256:
        return AttentionChoice("flash", "attention: flash (FlashAttention-2: sm80+, fp16/bf16, "
                                        "head_dim ≤ 256; soft-capping supported)")
    if softcapping:
        return AttentionChoice("eager", "the model soft-caps attention logits and SDPA has no "
                                        "soft-cap: transformers runs eager attention (S × S)")
    why_not_flash = _flash_refusal(dtype, head_dim, has_mask, cc)
    if why_not_flash is None and value_head_dim not in (None, head_dim):
        why_not_flash = f"needs equal Q/K and V head dims, got {head_dim} and {value_head_dim}"
    if why_not_flash is None:
        return AttentionChoice("flash", f"SDPA flash: sm{cc[0]}{cc[1]} ≥ sm80, {dtype}, head_dim "
                                        f"{head_dim} ≤ 256, no mask")
    why_not_eff = _efficient_refusal(dtype, head_dim, cc)
    if why_not_eff is None:
        return AttentionChoice("efficient", f"SDPA memory-efficient (flash refused: "
                                            f"{why_not_flash})")
    return AttentionChoice("math", f"SDPA math, S × S scores (flash refused: {why_not_flash}; "
                                   f"memory-efficient refused: {why_not_eff})")


def _flash_refusal(dtype: str, head_dim: int, has_mask: bool, cc: tuple) -> str | None:
    if cc < FLASH_ATTENTION_MIN_CC:
        return f"needs sm80+, card is sm{cc[0]}{cc[1]}"
    if dtype not in _LOW_PRECISION:
        return f"needs fp16/bf16, got {dtype}"
    if head_dim > 256 or head_dim % 8:
        return f"needs head_dim ≤ 256 and a multiple of 8, got {head_dim}"
    if has_mask:
        return "an explicit attention mask is passed"
    return None


def _efficient_refusal(dtype: str, head_dim: int, cc: tuple) -> str | None:
    if cc < (5, 0):
        return f"needs sm50+, card is sm{cc[0]}{cc[1]}"
    need = weight_format(dtype).min_compute_capability
    if need is not None and cc < need:
        return f"{dtype} needs sm{need[0]}{need[1]}+, card is sm{cc[0]}{cc[1]}"
    align = 4 if dtype == "fp32" else 8
    if head_dim % align:
        return f"head_dim {head_dim} is not a multiple of {align}"
    return None


def optimizer_flags(impl: str) -> dict[str, bool]:
    """Keyword arguments that make ``torch.optim`` run as on a GPU.

    ``foreach`` (PyTorch's CUDA default, ``_default_to_fused_or_foreach``), ``fused`` when the sheet
    asks, ``for-loop`` → the per-tensor loop.
    """
    if impl == "fused":
        return {"fused": True, "foreach": False}
    if impl == "for-loop":
        return {"foreach": False}
    return {"foreach": True}


_DTYPE_NAMES = {"torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16"}


class GpuRules:
    """Context manager applying rules 1 and 2 while the model code runs.

    Args:
        compute_capability: the card's (major, minor).
        requested: the sheet's ``attention``.
        attention: apply rule 1 (route SDPA).
        packed_sequences: apply rule 2 (answer the packed-sequence check as a GPU run does).
        packed: the inputs are packed (``training.packing``): rule 2 answers with the
            documents' indices instead of "not packed".

    Attributes:
        choices: counter of (kernel, reason) over attention calls.
    """

    def __init__(self, compute_capability: tuple[int, int], *, requested: str = "sdpa",
                 attention: bool = True, packed_sequences: bool = True,
                 packed: bool = False) -> None:
        self.cc = tuple(compute_capability)
        self.requested = requested
        self.attention = attention
        self.packed_sequences = packed_sequences
        self.packed = packed
        self.choices: Counter = Counter()
        self._stack: ExitStack | None = None

    def __enter__(self) -> "GpuRules":
        import torch
        from transformers import masking_utils
        self._stack = ExitStack()
        if self.attention:
            original = torch.nn.functional.scaled_dot_product_attention
            self._stack.enter_context(mock.patch.object(
                torch.nn.functional, "scaled_dot_product_attention", self._router(original)))
        if self.packed_sequences:
            self._stack.enter_context(mock.patch.object(
                masking_utils, "find_packed_sequence_indices",
                _packed if self.packed else _not_packed))
        return self

    def __exit__(self, *exc) -> None:
        assert self._stack is not None
        self._stack.close()

    def _router(self, original):
        import torch

        def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                 enable_gqa=False):
            dtype = _DTYPE_NAMES.get(str(query.dtype), str(query.dtype))
            choice = choose_attention_kernel(dtype=dtype, head_dim=query.shape[-1],
                                             has_mask=attn_mask is not None,
                                             value_head_dim=value.shape[-1],
                                             compute_capability=self.cc,
                                             requested="sdpa" if self.requested == "eager"
                                             else self.requested)
            self.choices[(choice.kernel, choice.reason)] += 1
            if scale is None:
                scale = 1.0 / math.sqrt(query.shape[-1])
            groups = query.shape[-3] // key.shape[-3]
            if choice.kernel == "flash":
                out = torch.ops.aten._scaled_dot_product_flash_attention(
                    query, key, value, dropout_p, is_causal, False, scale=scale)
                return out[0]
            if groups > 1:  # memory-efficient and math kernels expand K/V for GQA
                key = key.repeat_interleave(groups, dim=-3)
                value = value.repeat_interleave(groups, dim=-3)
            if choice.kernel == "efficient":
                need_lse = torch.is_grad_enabled() and any(
                    t.requires_grad for t in (query, key, value))
                out = torch.ops.aten._scaled_dot_product_efficient_attention(
                    query, key, value, attn_mask, need_lse, dropout_p, is_causal, scale=scale)
                return out[0]
            return _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale)

        return sdpa


def _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """PyTorch's ``_scaled_dot_product_attention_math`` as it runs on CUDA: q and k each scaled by
    √scale, S × S scores in the input dtype, causal/explicit mask added, softmax, dropout, @ v."""
    import torch
    s = math.sqrt(scale)
    q = query * s
    k = key * s
    attn = q @ k.transpose(-2, -1)
    if is_causal:
        L, S = query.shape[-2], key.shape[-2]
        mask = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
        attn = attn.masked_fill(mask.logical_not(), float("-inf"))
    elif attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn = attn.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            attn = attn + attn_mask
    attn = torch.softmax(attn, dim=-1)
    if dropout_p > 0:
        attn = torch.nn.functional.dropout(attn, p=dropout_p)
    return attn @ value


def _packed(position_ids):
    """The GPU answer of ``find_packed_sequence_indices`` for packed inputs: the document index
    of each position, ``(diff(position_ids) != 1).cumsum(-1)`` as transformers'
    ``masking_utils`` computes it, without its data-dependent "is it packed" read (the
    simulator's packed inputs always are)."""
    import torch
    diff = torch.diff(position_ids, prepend=position_ids[:, :1] - 1, dim=-1)
    return (diff != 1).cumsum(-1)


def _not_packed(position_ids):
    """The GPU answer of ``find_packed_sequence_indices`` for the simulator's inputs: every row's
    positions are 0…n-1, so no row holds several sequences (None)."""
    return None
