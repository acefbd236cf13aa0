"""Several GPUs through ``torchrun`` (R9: two cards are not one memory space).

Each rank runs the same ladder on its own device, records its own counters and raw notes, and the
placement is recorded with them. Implemented placement: ``ddp`` (training wraps the model in
``DistributedDataParallel``; inference runs one replica per rank). Others (fsdp, zero2,
tensor-parallel, device-map) are refused until implemented — never run as something else.

Backend: ``nccl`` on CUDA, ``gloo`` on the CPU (the test runs two CPU ranks with gloo).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from ..errors import MeasureUnsupportedError
from ..sheet import Sheet

__all__ = ["Distributed", "init_distributed", "IMPLEMENTED"]

IMPLEMENTED = ("single", "ddp")


@dataclass
class Distributed:
    """The process's place in the run: rank, world size, its device."""

    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    backend: str | None

    @property
    def active(self) -> bool:
        return self.world_size > 1

    def gather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj`` (rank order); ``[obj]`` on one process."""
        if not self.active:
            return [obj]
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def broadcast(self, obj: Any) -> Any:
        """Rank 0's ``obj`` on every rank."""
        if not self.active:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def close(self) -> None:
        if self.active and dist.is_initialized():
            dist.destroy_process_group()


def init_distributed(sheet: Sheet, device: str | None = None) -> Distributed:
    """Join the ``torchrun`` group when ``WORLD_SIZE`` > 1; pick this rank's device.

    Args:
        device: ``"cpu"`` or ``"cuda"`` to force one (default: CUDA when available).

    Raises:
        MeasureUnsupportedError: a placement this harness does not implement, a world size
            different from ``placement.gpus``, or ``--device cuda`` where torch sees no CUDA
            device (a CPU-only build, or no GPU).
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    strategy = sheet.placement.strategy
    if strategy not in IMPLEMENTED:
        raise MeasureUnsupportedError(f"placement {strategy} is not implemented by the harness; "
                                      f"expected one of {', '.join(IMPLEMENTED)}",
                                      field="placement.strategy", value=strategy)
    if world != sheet.placement.gpus:
        raise MeasureUnsupportedError(f"the sheet places the workload on {sheet.placement.gpus} "
                                      f"GPU(s) but {world} process(es) run (launch with "
                                      f"torchrun --nproc_per_node {sheet.placement.gpus})",
                                      field="placement.gpus", value=sheet.placement.gpus)
    use_cuda = torch.cuda.is_available() if device is None else device == "cuda"
    if use_cuda and not torch.cuda.is_available():
        why = ("this torch is a CPU-only build" if torch.version.cuda is None
               else "torch sees no CUDA device")
        raise MeasureUnsupportedError(f"--device cuda, but {why} (torch {torch.__version__}); "
                                      "install a CUDA build of torch on a GPU machine, or use "
                                      "--device cpu", field="--device", value=device)
    if use_cuda and local >= torch.cuda.device_count():
        raise MeasureUnsupportedError(f"LOCAL_RANK {local} but only {torch.cuda.device_count()} "
                                      "CUDA device(s) are visible", field="placement.gpus",
                                      value=sheet.placement.gpus)
    dev = torch.device("cuda", local) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(dev)
    backend = None
    if world > 1:
        backend = "nccl" if use_cuda else "gloo"
        dist.init_process_group(backend=backend)
    return Distributed(rank, world, local, dev, backend)
