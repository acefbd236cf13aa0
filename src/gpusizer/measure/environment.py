"""The environment a measurement ran in: versions, device name and totals (R4: evidence keeps
its version and scope).

Versions are read from installed distributions (``importlib.metadata``), never guessed; a package
that is not installed is recorded as ``"not installed"``. CUDA is torch's build
(``torch.version.cuda``); the driver is NVML's.
"""

from __future__ import annotations

import platform
from importlib import metadata

import torch

from ..catalog.cards import lookup_card
from .nvml import Nvml, nvml_index

__all__ = ["versions", "device_identity", "MIB"]

MIB = 2**20


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def versions(nvml: Nvml) -> dict[str, str | None]:
    """python, torch, transformers, peft, bitsandbytes, nvidia-ml-py, CUDA (torch build), driver."""
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": _version("transformers"), "peft": _version("peft"),
            "bitsandbytes": _version("bitsandbytes"), "nvidia-ml-py": _version("nvidia-ml-py"),
            "cuda": torch.version.cuda, "driver": nvml.driver_version()}


def device_identity(device: torch.device, nvml: Nvml) -> dict:
    """GPU name, totals and the canonical card for the evidence scope.

    ``device_bytes`` is the NVML total rounded down to whole MiB, × 2^20 — what
    ``nvidia-smi --query-gpu=memory.total`` shows (CONTRACT.md: the card table's figure);
    ``nvml_total_bytes`` keeps NVML's exact figure and ``cuda_total_bytes`` CUDA's
    (``torch.cuda.mem_get_info()[1]``). On the CPU every figure is None with the reason.
    """
    if device.type != "cuda":
        why = f"no CUDA device: ran on {device}"
        return {"gpu_name": None, "card": None, "device_bytes": None, "nvml_total_bytes": None,
                "cuda_total_bytes": None, "unknown_reason": why, "host": platform.machine()}
    index = device.index if device.index is not None else torch.cuda.current_device()
    name = torch.cuda.get_device_name(index)
    total = nvml.device_total(nvml_index(index))
    cuda_total = int(torch.cuda.mem_get_info(index)[1])
    device_bytes = None if total.bytes is None else (total.bytes // MIB) * MIB
    card = lookup_card(name, memory_bytes=device_bytes)
    out = {"gpu_name": name, "card": card.name if card else name,
           "card_known": card is not None, "device_bytes": device_bytes,
           "nvml_total_bytes": total.bytes, "cuda_total_bytes": cuda_total}
    if total.bytes is None:
        out["unknown_reason"] = f"device_bytes: {total.unknown_reason}"
    return out
