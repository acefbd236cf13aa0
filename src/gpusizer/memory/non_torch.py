"""Memory every phase holds beside the model's tensors: CUDA context, NCCL buffers, cuBLAS
workspace.

``peak_bytes`` predicts ``torch.cuda.max_memory_allocated``; ``reserved_peak_bytes`` adds what
the caching allocator reserves without handing it to a tensor (``memory.reserved``);
``device_peak_bytes`` adds to that what lies outside the allocator (the CUDA context, NCCL
buffers), and predicts what nvidia-smi shows (CONTRACT.md). cuBLAS workspaces are allocated
through the caching allocator, so they count in ``peak_bytes``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import MiB
from .items import Item
from .nccl import COLLECTIVES, NCCL_SOURCE, nccl_buffers, within_node_link

if TYPE_CHECKING:
    from ..catalog.types import Card

__all__ = ["cuda_context_item", "nccl_item", "cublas_workspace_item", "CUDA_CONTEXT_BYTES",
           "cublas_workspace_bytes"]

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


_NO_COLLECTIVES = {
    "single": "no collective communication on one GPU",
    "device-map": "accelerate's device_map moves activations between GPUs with tensor copies "
                  "(.to(device)); no NCCL communicator is created",
    "ddp": "inference replicas serve their own sequences; no collective runs between them",
}


def nccl_item(gpus: int, phases: tuple[str, ...], strategy: str = "single", *,
              training: bool = False, card: Card | None = None,
              interconnect: str | None = None, nodes: int = 1) -> Item:
    """NCCL communicator buffers within one node, declared from NCCL's documented defaults
    (``memory.nccl``: channels × peers × 12 MiB per connection + NVLS buffers, NCCL >= 2.21;
    NCCL docs "Environment Variables", NCCL_BUFFSIZE 4 MiB for Simple). Not live without
    collectives: one GPU, device-map layer placement, independent inference replicas.

    Args:
        gpus: GPUs of the placement (one node).
        phases: phases the buffers are live in (all: a communicator lives for the process).
        strategy: the placement strategy (its collectives: ``nccl.COLLECTIVES``).
        training: a training sheet (ddp then all-reduces gradients).
        card: the card, whose NVLink fact and compute capability set the default link.
        interconnect: the offer's ``interconnect`` (``pcie``, ``nvlink``…), or None.
        nodes: nodes the GPUs spread over (``gpus`` is then the total; the within-node terms
            use ``gpus ÷ nodes``, and > 1 node adds the network connections).
    """
    if nodes > 1 and gpus % nodes == 0 and strategy in COLLECTIVES:
        link = within_node_link(interconnect, card)
        buffers = nccl_buffers(gpus // nodes, strategy, link, nodes)
        return Item("nccl_buffers", buffers.bytes, "declared", phases,
                    NCCL_SOURCE + "; replace with a measurement (nvidia-smi minus "
                    "max_memory_reserved)", buffers.formula, non_torch=True)
    if gpus == 1 or strategy == "device-map" or (strategy == "ddp" and not training):
        why = _NO_COLLECTIVES["single" if gpus == 1 else strategy]
        return Item("nccl_buffers", 0, "declared", (), why, "0 (not live)", non_torch=True)
    link = within_node_link(interconnect, card)
    buffers = nccl_buffers(gpus, strategy, link)
    return Item("nccl_buffers", buffers.bytes, "declared", phases,
                NCCL_SOURCE + "; replace with a measurement (nvidia-smi minus "
                "max_memory_reserved)", buffers.formula, non_torch=True)


def cublas_workspace_item(compute_capability: tuple[int, int] | None,
                          phases: tuple[str, ...]) -> Item:
    """cuBLAS workspace (a PyTorch allocation, counted in peak_bytes)."""
    b = cublas_workspace_bytes(compute_capability)
    return Item("cublas_workspace", b, "estimated", phases,
                "PyTorch aten/src/ATen/cuda/CublasHandlePool.cpp getChosenWorkspaceSize "
                "(CUBLAS_WORKSPACE_CONFIG default ':4096:2:16:8', ':4096:8' on CC 9.x)",
                f"{b / MiB:g} MiB" + ("" if compute_capability else " (no card: the larger "
                                       "Hopper default is assumed)"))
