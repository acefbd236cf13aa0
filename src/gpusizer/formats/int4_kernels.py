"""The GPTQ / AWQ int4 kernel that runs, as the engine chooses it for the card, and the memory
that kernel path adds beside the packed weights (issue 15 point 3).

The packed layout (``gptq.py``) is the same on every path; what differs is the kernels' own
memory:

- **Marlin** (vLLM ``gptq_marlin`` / ``awq_marlin``, compute capability 8.0+): dequantizes in
  registers; its workspace is a few int32 per SM (``marlin_make_workspace_new``), under 1 MiB:
  no item.
- **AWQ GEMM**: dequantizes the whole weight to fp16 and runs a cuBLAS matmul for large inputs:
  vLLM ``AWQLinearMethod.apply`` at ``x.shape[:-1].numel() >= 256`` tokens
  (``vllm/model_executor/layers/quantization/awq.py``, v0.4 – v0.11), AutoAWQ ``WQLinear_GEMM``
  at ``x.shape[0] * x.shape[1] >= 1024`` (``awq/modules/linear/gemm.py``, v0.2): a transient of
  ``in × out × 2`` B for the largest linear.
- **GPTQ exllama in vLLM** (``gptq`` below compute capability 8.0): ``gptq_gemm`` allocates
  ``temp_dq`` of ``in × out`` fp16 on every call (``csrc/quantization/gptq/q_gemm.cu``): the
  same transient at any token count.
- **exllama v2** (AutoAWQ ``WQLinear_ExllamaV2``, AutoGPTQ / GPTQModel ``ExllamaV2QuantLinear``):
  one persistent scratch per device of the largest ``temp_dq_size + temp_fwd_size`` over the
  linears, ``in × out × 2 + 128`` + ``out × max_input_len × max_batch_size × 4 + 128`` B with
  ``max_input_len`` 2048 and ``max_batch_size`` 8 (``exllamav2_post_init``,
  ``scratch_space_fixed`` defaults; transformers ``AwqConfig.exllama_config``).
- **exllama v1** (AutoGPTQ ``autogptq_post_init``): persistent ``temp_dq`` of the largest
  ``qweight.numel() × 8`` fp16 values (``in × out × 2`` B) and ``temp_state`` of
  ``max_input_len × max(in, out)`` fp16 with act-order only (``max_input_len`` 2048, else 1).

Which path runs: vLLM overrides ``gptq`` / ``awq`` with the Marlin method on compute capability
8.0+ (``GPTQMarlinConfig`` / ``AWQMarlinConfig.override_quantization_method``), else its own
GPTQ exllama or AWQ GEMM kernel. transformers runs AWQ by the checkpoint's ``version``
(``gemm`` by default; ``exllama`` with ``exllama_config.version`` 1 or 2, default 1:
``transformers/utils/quantization_config.py AwqConfig``) and GPTQ through the exllama kernel of
``GPTQConfig.exllama_config`` (default version 1; ``use_exllama`` default True).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .record import Matrices

__all__ = ["Int4Kernel", "int4_kernel", "EXLLAMA_MAX_INPUT_LEN", "EXLLAMA_MAX_BATCH",
           "AWQ_GEMM_DEQUANT_TOKENS"]

EXLLAMA_MAX_INPUT_LEN = 2048
"""exllama's ``max_input_len`` default (AutoGPTQ ``EXLLAMA_DEFAULT_MAX_INPUT_LENGTH``,
``scratch_space_fixed(max_input_len=2048, …)``)."""
EXLLAMA_MAX_BATCH = 8
"""exllama v2's ``max_batch_size`` default (``scratch_space_fixed(…, max_batch_size=8)``)."""
AWQ_GEMM_DEQUANT_TOKENS = {"vllm": 256, "transformers": 1024}
"""Tokens in one matmul from which the AWQ GEMM path dequantizes the whole weight (vLLM
``x.shape[:-1].numel() >= 256``; AutoAWQ ``x.shape[0] * x.shape[1] >= 1024``)."""


@dataclass(frozen=True)
class Int4Kernel:
    """The int4 kernel path one engine runs on one card.

    Attributes:
        name: the path (``gptq_marlin``, ``awq_gemm``, ``exllama_v2`` …).
        why: how the engine chose it (compute capability, checkpoint ``version``).
        source: the code that allocates its memory.
        scratch: persistent bytes per GPU from the linears' shapes and the TP size (allocated
            once after load, kept for every forward).
        transient: bytes while the largest linear runs on ``tokens`` tokens (freed after it).
    """

    name: str
    why: str
    source: str
    scratch: Callable[[Matrices, int], int]
    transient: Callable[[Matrices, int, int], int]


def _none(*_args) -> int:
    return 0


def _largest(m: Matrices, tp: int) -> tuple[int, int, int]:
    """``(in × out, out, max(in, out))`` of the largest linear on one GPU (column split under
    tensor parallelism: ``out / tp``; a conservative choice for row-split layers)."""
    if not m.shapes:
        side = m.hidden
        return side * side // tp, side // tp, side
    best = max(m.shapes, key=lambda s: s[1] * s[2])
    rows, cols = best[1], best[2]
    out = max(1, rows // tp)
    return cols * out, out, max(cols, out)


def _full_dequant(min_tokens: int) -> Callable[[Matrices, int, int], int]:
    def transient(m: Matrices, tokens: int, tp: int) -> int:
        return _largest(m, tp)[0] * 2 if tokens >= min_tokens else 0
    return transient


def _per_gpu_shapes(m: Matrices, tp: int) -> list[tuple[int, int]]:
    """``(in, out)`` of each linear on one GPU (``out / tp``, as ``_largest``)."""
    if not m.shapes:
        return [(m.hidden, max(1, m.hidden // tp))]
    return [(cols, max(1, rows // tp)) for _, rows, cols in m.shapes]


def _exllama_v2_scratch(m: Matrices, tp: int) -> int:
    """max over the linears of ``temp_dq_size + temp_fwd_size`` (``exllamav2_post_init``)."""
    return max(i * o * 2 + 128 + o * EXLLAMA_MAX_INPUT_LEN * EXLLAMA_MAX_BATCH * 4 + 128
               for i, o in _per_gpu_shapes(m, tp))


def _exllama_v1_scratch(act_order: bool) -> Callable[[Matrices, int], int]:
    def scratch(m: Matrices, tp: int) -> int:
        shapes = _per_gpu_shapes(m, tp)
        dq = max(i * o for i, o in shapes) * 2
        side = max(max(i, o) for i, o in shapes) if act_order else 1
        return dq + (EXLLAMA_MAX_INPUT_LEN if act_order else 1) * side * 2
    return scratch


_MARLIN = ("vLLM overrides {fmt} with its Marlin method on compute capability 8.0+ "
           "(vllm/model_executor/layers/quantization/{name}.py override_quantization_method)")


def int4_kernel(fmt: str, engine: str, compute_capability: tuple[int, int] | None, *,
                version: str | None = None, act_order: bool = False) -> Int4Kernel | None:
    """The kernel path of ``fmt`` (``gptq-int4`` / ``awq-int4``) under ``engine`` on a card.

    Args:
        fmt: the running weight format; other formats → None.
        engine: ``vllm`` or ``transformers`` (another engine → None: not known).
        compute_capability: the card's, or None (no card: no card-specific path is chosen,
            None is returned).
        version: the checkpoint's kernel choice (AWQ ``version``: ``gemm`` | ``gemv`` |
            ``exllama`` | ``exllama_v2``; GPTQ ``exllama_v2``), or None for the default.
        act_order: GPTQ ``desc_act`` (exllama v1 keeps ``temp_state`` only then).
    """
    if fmt not in ("gptq-int4", "awq-int4") or compute_capability is None:
        return None
    chooser = _CHOOSERS.get(engine)
    return None if chooser is None else chooser(fmt.split("-")[0], tuple(compute_capability),
                                                (version or "").lower(), act_order)


def _vllm_path(family: str, cc: tuple[int, int], version: str, act_order: bool) -> Int4Kernel:
    if cc >= (8, 0):
        return Int4Kernel(f"{family}_marlin", _MARLIN.format(fmt=family, name=f"{family}_marlin"),
                          "vllm csrc/quantization/gptq_marlin (workspace < 1 MiB)", _none, _none)
    if family == "awq":
        return Int4Kernel("awq_gemm", "vLLM's AWQ method below compute capability 8.0",
                          "vllm/model_executor/layers/quantization/awq.py AWQLinearMethod.apply: "
                          "awq_dequantize + torch.matmul at >= 256 tokens", _none,
                          _full_dequant(AWQ_GEMM_DEQUANT_TOKENS["vllm"]))
    return Int4Kernel("gptq_exllama", "vLLM's GPTQ method below compute capability 8.0",
                      "vllm csrc/quantization/gptq/q_gemm.cu gptq_gemm: temp_dq in × out fp16 "
                      "per call", _none, _full_dequant(0))


def _transformers_path(family: str, cc: tuple[int, int], version: str,
                       act_order: bool) -> Int4Kernel:
    if family == "awq" and version in ("", "gemm", "gemv"):
        return Int4Kernel("awq_gemm", f"AWQ version {version or 'gemm'} (the checkpoint's; "
                          "transformers AwqConfig default gemm)",
                          "AutoAWQ awq/modules/linear/gemm.py WQLinear_GEMM: "
                          "dequantize_weights_cuda + matmul at batch × tokens >= 1024", _none,
                          _full_dequant(AWQ_GEMM_DEQUANT_TOKENS["transformers"]))
    if version == "exllama_v2":
        return Int4Kernel("exllama_v2", f"{family.upper()} exllama_config version 2",
                          "AutoAWQ awq/modules/linear/exllamav2.py / AutoGPTQ "
                          "qlinear_exllamav2.py scratch_space_fixed(2048, 8)",
                          _exllama_v2_scratch, _none)
    if family == "awq":   # exllama v1 of AutoAWQ keeps no shared buffer (exllama_post_init)
        return Int4Kernel("awq_exllama", "AWQ version exllama, exllama_config version 1",
                          "AutoAWQ awq/modules/linear/exllama.py WQLinear_Exllama (no shared "
                          "scratch)", _none, _none)
    return Int4Kernel("exllama_v1", "transformers GPTQConfig exllama_config default version 1",
                      "AutoGPTQ auto_gptq/modeling/_utils.py autogptq_post_init: temp_dq + "
                      "temp_state", _exllama_v1_scratch(act_order), _none)


_CHOOSERS = {"vllm": _vllm_path, "transformers": _transformers_path}
"""How each engine picks its int4 kernel (a format's record keys what each engine runs by the
engine's name, as ``record.WeightFormat.on_card`` does)."""
