"""Memory outside PyTorch's tensors: CUDA context, NCCL buffers, allocator slack, cuBLAS workspace.

``peak_bytes`` predicts ``torch.cuda.max_memory_allocated``; ``device_peak_bytes`` adds what the
caching allocator does not hand to tensors, and predicts what nvidia-smi shows (CONTRACT.md).
cuBLAS workspaces are allocated through the caching allocator, so they count in ``peak_bytes``.
"""

from __future__ import annotations

from ..units import MiB
from .items import Item

__all__ = ["cuda_context_item", "nccl_item", "allocator_slack_item", "cublas_workspace_item",
           "CUDA_CONTEXT_BYTES", "cublas_workspace_bytes"]

# Declared, not derived: the CUDA context (driver state, kernel images loaded lazily since CUDA
# 11.7 / PyTorch 2.x CUDA_MODULE_LOADING=LAZY) is usually a few hundred MiB per process and GPU;
# vLLM start-up logs report non_torch_memory of 0.25–0.35 GiB on RTX 3090/4090
# (vllm-project/vllm#10517, #13061). 500 MiB is the upper end used as the declared default; a
# measurement replaces it.
CUDA_CONTEXT_BYTES = 500 * MiB

# cuBLAS workspace per handle/stream, PyTorch ``CublasHandlePool.cpp`` (getChosenWorkspaceSize):
# default CUBLAS_WORKSPACE_CONFIG ":4096:2:16:8" = 2 × 4096 KiB + 8 × 16 KiB = 8.125 MiB, and
# ":4096:8" = 32 MiB on compute capability 9.x (Hopper).
_CUBLAS_DEFAULT = 2 * 4096 * 1024 + 8 * 16 * 1024
_CUBLAS_HOPPER = 8 * 4096 * 1024

# PyTorch CUDACachingAllocator rounds a large allocation (> 1 MiB) up to a multiple of 2 MiB
# (kRoundLarge) and serves small ones (<= 1 MiB) from 2 MiB blocks (kSmallBuffer).
_ROUND_LARGE = 2 * MiB


def cublas_workspace_bytes(compute_capability: tuple[int, int] | None) -> int:
    """cuBLAS workspace for one handle: 32 MiB on CC 9.x, 8.125 MiB otherwise; without a card, the
    larger (32 MiB) so the figure is not understated."""
    if compute_capability is None or tuple(compute_capability) >= (9, 0):
        return _CUBLAS_HOPPER
    return _CUBLAS_DEFAULT


def cuda_context_item(phases: tuple[str, ...]) -> Item:
    """The CUDA context of the process on this GPU (declared, see CUDA_CONTEXT_BYTES)."""
    return Item("cuda_context", CUDA_CONTEXT_BYTES, "declared", phases,
                "declared default: a few hundred MiB per process per GPU (lazy module loading, "
                "CUDA >= 11.7); vLLM logs report non_torch_memory 0.25-0.35 GiB on RTX 3090/4090 "
                "(vllm-project/vllm#10517, #13061); replace with a measurement",
                "500 MiB", non_torch=True)


def nccl_item(gpus: int, phases: tuple[str, ...]) -> Item:
    """NCCL communicator buffers: not live on one GPU; unknown on several (they depend on the NCCL
    version, channels, protocols and topology: NCCL_BUFFSIZE is 4 MiB per channel per peer for the
    Simple protocol, NCCL docs "Environment Variables")."""
    if gpus == 1:
        return Item("nccl_buffers", 0, "declared", (), "no collective communication on one GPU",
                    "0 (not live)", non_torch=True)
    return Item("nccl_buffers", None, "declared", phases,
                "NCCL docs, Environment Variables: NCCL_BUFFSIZE (4 MiB per channel per peer, "
                "Simple protocol); channels and protocols depend on version and topology",
                unknown_reason=f"{gpus} GPUs communicate; NCCL's buffers depend on its version, "
                "channel count and topology: measure them (nvidia-smi minus max_memory_reserved)",
                non_torch=True)


def allocator_slack_item(tensor_sizes: list[tuple[int, int]], phases: tuple[str, ...]) -> Item:
    """Reserved minus allocated for the resident weights: each tensor above 1 MiB is a block
    rounded up to a multiple of 2 MiB; smaller ones share 2 MiB small-pool blocks (one counted).

    Args:
        tensor_sizes: ``(count, bytes)`` pairs of resident weight tensors on this GPU.
        phases: phases the item is live in.

    Fragmentation by transient activations comes on top and is only known by measurement.
    """
    waste = 0
    tensors = 0
    for count, size in tensor_sizes:
        tensors += count
        if size > MiB:
            waste += count * (-(-size // _ROUND_LARGE) * _ROUND_LARGE - size)
    slack = waste + _ROUND_LARGE
    return Item("allocator_slack", slack, "estimated", phases,
                "PyTorch CUDACachingAllocator: blocks above 1 MiB rounded up to 2 MiB (kRoundLarge), "
                "small allocations served from 2 MiB blocks; docs 'CUDA semantics: memory "
                "management' (reserved vs allocated)",
                f"rounding of {tensors} weight tensors up to 2 MiB = {waste} B + one 2 MiB "
                "small-pool block (fragmentation by activations is measured, not estimated)",
                non_torch=True)


def cublas_workspace_item(compute_capability: tuple[int, int] | None,
                          phases: tuple[str, ...]) -> Item:
    """cuBLAS workspace (a PyTorch allocation, counted in peak_bytes)."""
    b = cublas_workspace_bytes(compute_capability)
    return Item("cublas_workspace", b, "estimated", phases,
                "PyTorch aten/src/ATen/cuda/CublasHandlePool.cpp getChosenWorkspaceSize "
                "(CUBLAS_WORKSPACE_CONFIG default ':4096:2:16:8', ':4096:8' on CC 9.x)",
                f"{b / MiB:g} MiB" + ("" if compute_capability else " (no card: the larger "
                                       "Hopper default is assumed)"))
