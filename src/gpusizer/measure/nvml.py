"""NVML readings (nvidia-ml-py): memory used by this process and by the whole device, per GPU.

These are the figures ``nvidia-smi`` shows. The device figure includes other processes (R9: "a
system reading can include other processes"); the process figure is this process's own use,
CUDA context included. NVML keeps no peak: a reading is taken at the end of each phase.

Where NVML is absent (no driver, CPU machine, the package missing) or does not list this process
(containers without the host PID namespace), the figure is a :class:`Reading` with ``bytes=None``
and the reason, never zero.

Source: NVML API reference, ``nvmlDeviceGetMemoryInfo`` and
``nvmlDeviceGetComputeRunningProcesses`` (https://docs.nvidia.com/deploy/nvml-api/).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..errors import install_line

__all__ = ["Reading", "Nvml", "open_nvml", "nvml_index"]


@dataclass(frozen=True)
class Reading:
    """One counter reading: ``bytes`` (int) or None with ``unknown_reason``; ``counter`` names
    it."""

    counter: str
    bytes: int | None
    unknown_reason: str | None = None

    def as_json(self) -> dict:
        out: dict[str, Any] = {"counter": self.counter, "bytes": self.bytes}
        if self.bytes is None:
            out["unknown_reason"] = self.unknown_reason
        return out


PROCESS_COUNTER = "nvml.nvmlDeviceGetComputeRunningProcesses[pid].usedGpuMemory"
DEVICE_COUNTER = "nvml.nvmlDeviceGetMemoryInfo.used"
TOTAL_COUNTER = "nvml.nvmlDeviceGetMemoryInfo.total"


class Nvml:
    """NVML, opened once; ``module`` is ``pynvml`` or a stand-in with the same functions.

    Args:
        module: the NVML binding, or None when unavailable.
        reason: why it is unavailable (used as every reading's ``unknown_reason``).
        pid: the process whose use is read (default: this one).
    """

    def __init__(self, module: Any | None, reason: str | None = None,
                 pid: int | None = None) -> None:
        self.module = module
        self.reason = reason
        self.pid = os.getpid() if pid is None else pid

    @property
    def available(self) -> bool:
        return self.module is not None

    def _handle(self, index: int) -> Any:
        return self.module.nvmlDeviceGetHandleByIndex(index)

    def _unknown(self, counter: str, reason: str | None = None) -> Reading:
        return Reading(counter, None, reason or self.reason or "NVML unavailable")

    def driver_version(self) -> str | None:
        if self.module is None:
            return None
        try:
            v = self.module.nvmlSystemGetDriverVersion()
        except Exception as exc:  # NVML raises its own NVMLError subclasses
            return f"unknown ({type(exc).__name__})"
        return v.decode() if isinstance(v, bytes) else str(v)

    def device_used(self, index: int) -> Reading:
        """Memory used on the device by every process (bytes)."""
        return self._memory_info(index, "used", DEVICE_COUNTER)

    def device_total(self, index: int) -> Reading:
        """The device's total memory (bytes), as ``nvidia-smi memory.total`` reports it."""
        return self._memory_info(index, "total", TOTAL_COUNTER)

    def _memory_info(self, index: int, field: str, counter: str) -> Reading:
        if self.module is None:
            return self._unknown(counter)
        try:
            info = self.module.nvmlDeviceGetMemoryInfo(self._handle(index))
        except Exception as exc:
            return self._unknown(counter, f"NVML error on GPU {index}: {exc}")
        return Reading(counter, int(getattr(info, field)))

    def process_used(self, index: int) -> Reading:
        """Memory this process uses on the device (bytes), or unknown with the reason."""
        if self.module is None:
            return self._unknown(PROCESS_COUNTER)
        try:
            procs = self.module.nvmlDeviceGetComputeRunningProcesses(self._handle(index))
        except Exception as exc:
            return self._unknown(PROCESS_COUNTER, f"NVML error on GPU {index}: {exc}")
        for p in procs:
            if int(p.pid) == self.pid:
                used = p.usedGpuMemory
                if used is None:
                    return self._unknown(PROCESS_COUNTER, "NVML lists the process but reports "
                                         "no usedGpuMemory (not available under this driver mode)")
                return Reading(PROCESS_COUNTER, int(used))
        return self._unknown(PROCESS_COUNTER, f"NVML does not list pid {self.pid} on GPU {index} "
                             "(a container without the host PID namespace shows other pids)")


def open_nvml(module: Any | None = None) -> Nvml:
    """Initialise NVML (``pynvml`` from nvidia-ml-py unless ``module`` is given).

    Never raises: an unavailable NVML is an :class:`Nvml` whose readings are unknown with the
    reason (no package, no driver, no GPU).
    """
    if module is None:
        try:
            import pynvml as module  # nvidia-ml-py
        except ImportError:
            return Nvml(None, f"nvidia-ml-py is not installed ({install_line('measure')})")
    try:
        module.nvmlInit()
    except Exception as exc:
        return Nvml(None, f"NVML did not initialise: {exc} (no NVIDIA driver on this machine?)")
    return Nvml(module)


def nvml_index(cuda_index: int) -> int:
    """NVML's index of CUDA device ``cuda_index``: NVML counts every GPU of the machine, CUDA only
    those ``CUDA_VISIBLE_DEVICES`` shows (``torch.cuda._get_nvml_device_index`` maps them;
    the CUDA index itself where that mapping is unavailable)."""
    import torch
    try:
        return int(torch.cuda._get_nvml_device_index(cuda_index))
    except (AttributeError, RuntimeError, ValueError):
        return cuda_index
