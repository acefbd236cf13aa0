"""Optimizer state and the optimizer step's temporaries, per trainable tensor.

Each optimizer's constants, with their source:

- ``adamw`` (``torch/optim/adamw.py``, ``_init_group``): ``exp_avg`` and ``exp_avg_sq`` are
  ``torch.zeros_like(p)`` — two states in the trained parameter's dtype. ``state["step"]`` is a
  CPU scalar unless ``fused``/``capturable``, then a 4-byte device tensor per parameter (one
  512-byte allocator block each, ``c10/cuda/CUDACachingAllocator.cpp`` ``kMinBlockSize``).
  Step temporaries: ``foreach`` (``_multi_tensor_adamw``) builds
  ``exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs)``, one more copy of every second moment;
  the per-tensor loop (``_single_tensor_adamw``) builds ``exp_avg_sq.sqrt()`` and its quotient,
  two copies of the largest tensor; ``fused`` (``torch._fused_adamw_``) none.
- ``paged-adamw-32bit``: the same two fp32-layout states, but bitsandbytes allocates every state
  of a tensor with at least 1e5 elements with ``cudaMallocManaged`` (``bitsandbytes/optim/
  optimizer.py`` ``get_state_buffer``; ``functional.py`` ``get_paged``): outside PyTorch's
  caching allocator (not in ``max_memory_allocated``), on the device until memory runs short,
  then paged to host RAM by the driver.
- ``adamw-8bit`` / ``paged-adamw-8bit`` (bitsandbytes ``Optimizer2State.init_state``): tensors
  with at least ``min_8bit_size`` = 4096 elements keep two uint8 states plus one fp32 absmax per
  block of 256 values (``blocks = ceil(n / 256)``) per state; smaller tensors keep two fp32
  states. Step: fused kernels, no whole-tensor temporary.
- ``sgd``: no state (``torch/optim/sgd.py``: ``momentum_buffer`` stays None without momentum).
- ``sgd-momentum``: one ``momentum_buffer`` (a clone of the gradient) per parameter.
- ``adafactor`` (transformers ``optimization.py`` ``Adafactor``, default ``beta1=None``): a
  factored second moment for matrices — ``exp_avg_sq_row`` (rows) and ``exp_avg_sq_col`` (cols)
  — and a full ``exp_avg_sq`` for vectors, all fp32 (16-bit gradients are upcast before the
  state is made); step temporaries on the largest tensor: the fp32 gradient, ``grad² + eps``,
  the update and, for 16-bit parameters, the fp32 parameter copy (4 × 4 bytes per element).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OptimizerMemory", "optimizer_memory", "TensorShape"]

_MIN_8BIT_SIZE = 4096   # bitsandbytes Optimizer8bit default min_8bit_size
_BLOCK = 256            # bitsandbytes blockwise optimizer statistics: one fp32 absmax / 256 values
_PAGE_MIN = 100_000     # bitsandbytes get_state_buffer: only tensors with >= 1e5 elements are paged
_ALLOC_BLOCK = 512      # CUDA caching allocator's smallest block (bytes)

TensorShape = tuple[int, int, int]
"""``(count, rows, cols)``: ``count`` tensors of ``rows × cols`` elements (``cols`` = 1 for a
vector)."""


@dataclass(frozen=True)
class OptimizerMemory:
    """Optimizer memory per GPU for one set of trainable tensors.

    Attributes:
        state_bytes: states held by PyTorch's allocator (``max_memory_allocated`` sees them).
        paged_bytes: states in CUDA managed memory (bitsandbytes paged optimizers): device
            memory outside PyTorch's counters, movable to host RAM under pressure.
        step_temporary_bytes: extra memory while ``optimizer.step()`` runs.
        formula: the states' terms with this sheet's numbers.
        step_formula: the step temporary's terms ("" when there is none).
    """

    state_bytes: int
    paged_bytes: int
    step_temporary_bytes: int
    formula: str
    step_formula: str = ""


def _blockwise_8bit(n: int) -> int:
    """Bytes of one 8-bit state of n values: n uint8 + ceil(n / 256) fp32 absmax."""
    return n + 4 * -(-n // _BLOCK)


def optimizer_memory(optimizer: str, impl: str, tensors: list[TensorShape],
                     state_dtype_bytes: int) -> OptimizerMemory:
    """Optimizer states and step temporaries for ``tensors`` (the trainable ones, on this GPU).

    Args:
        optimizer: the sheet's ``training.optimizer``.
        impl: ``foreach`` | ``fused`` | ``for-loop`` (torch optimizers only).
        tensors: trainable tensors as ``(count, rows, cols)``.
        state_dtype_bytes: bytes per value of the trained parameters (torch optimizers keep
            states in that dtype).

    Returns:
        An :class:`OptimizerMemory` (bytes).

    Raises:
        ValueError: an optimizer name this module does not know.
    """
    n_total = sum(c * r * k for c, r, k in tensors)
    n_tensors = sum(c for c, _, _ in tensors)
    largest = max((r * k for c, r, k in tensors if c), default=0)
    s = state_dtype_bytes
    if optimizer == "adamw":
        states = 2 * n_total * s
        text = f"AdamW: 2 states × {n_total} values × {s} B = {states} B"
        if impl == "foreach":
            temp = n_total * s
            step = f"foreach step: _foreach_sqrt copy of every exp_avg_sq {n_total} × {s} B"
        elif impl == "for-loop":
            temp = 2 * largest * s
            step = f"per-tensor step: sqrt and quotient of the largest tensor 2 × {largest} × {s} B"
        else:
            temp = 0
            step = "fused step: no temporary"
        if impl == "fused":
            steps = n_tensors * _ALLOC_BLOCK
            states += steps
            text += f"; device step counters {n_tensors} × 512 B"
        return OptimizerMemory(states, 0, temp, text, f"{step} = {temp} B")
    if optimizer == "paged-adamw-32bit":
        paged = sum(c * 2 * r * k * 4 for c, r, k in tensors if r * k >= _PAGE_MIN)
        held = sum(c * 2 * r * k * 4 for c, r, k in tensors if r * k < _PAGE_MIN)
        return OptimizerMemory(held, paged, 0,
                               f"paged AdamW 32-bit: 2 fp32 states; tensors >= 1e5 values in CUDA "
                               f"managed memory {paged} B, the rest {held} B")
    if optimizer in ("adamw-8bit", "paged-adamw-8bit"):
        big = [(c, r * k) for c, r, k in tensors if r * k >= _MIN_8BIT_SIZE]
        small = sum(c * r * k for c, r, k in tensors if r * k < _MIN_8BIT_SIZE)
        paged = held = 0
        for c, n in big:
            b = c * 2 * _blockwise_8bit(n)
            if optimizer.startswith("paged") and n >= _PAGE_MIN:
                paged += b
            else:
                held += b
        held += small * 2 * 4
        text = (f"8-bit AdamW: tensors >= 4096 values keep 2 × (n uint8 + ceil(n/256) fp32 "
                f"absmax); {small} values in smaller tensors keep 2 fp32 states")
        if paged:
            text += f"; paged (CUDA managed memory) {paged} B"
        return OptimizerMemory(held, paged, 0, text)
    if optimizer == "sgd":
        return OptimizerMemory(0, 0, 0, "SGD without momentum: no state")
    if optimizer == "sgd-momentum":
        states = n_total * s
        return OptimizerMemory(states, 0, 0,
                               f"SGD momentum: 1 buffer × {n_total} values × {s} B = {states} B")
    if optimizer == "adafactor":
        states = sum(c * (r + k) * 4 if k > 1 else c * r * 4 for c, r, k in tensors)
        temp = largest * 4 * 4
        return OptimizerMemory(states, 0, temp,
                               f"Adafactor: fp32 row + column second moments per matrix, full for "
                               f"vectors = {states} B",
                               f"step on the largest tensor: fp32 gradient, grad² + eps, update "
                               f"and parameter copy {largest} × 4 × 4 B = {temp} B")
    raise ValueError(f"unknown optimizer {optimizer!r}")
