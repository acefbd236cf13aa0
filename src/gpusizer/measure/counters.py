"""Memory counters of one phase on one device, each under its own name, never added (R9).

On a CUDA device, per phase:

- ``max_memory_allocated_bytes`` — ``torch.cuda.max_memory_allocated`` (peak reset at the phase
  start with ``torch.cuda.reset_peak_memory_stats``);
- ``max_memory_reserved_bytes`` — ``torch.cuda.max_memory_reserved`` (same reset);
- ``mem_get_info_free_bytes`` / ``mem_get_info_total_bytes`` — ``torch.cuda.mem_get_info`` at
  the phase end (device-wide: other processes included);
- ``nvml_used_bytes`` — NVML, this process's used memory at the phase end (what ``nvidia-smi``
  lists for the process, CUDA context included);
- ``nvml_device_used_bytes`` — NVML, the device's used memory at the phase end (all processes);
- ``non_torch_bytes`` — memory the caching allocator does not hold (CONTRACT.md): NVML process
  used − ``torch.cuda.memory_reserved`` at the same instant; when NVML does not list the
  process, (total − free) from ``mem_get_info`` − ``memory_reserved`` (other processes included:
  an upper bound), and ``non_torch_source`` says which.

On the CPU, every CUDA and NVML field is ``None`` with the reason in ``unknown`` (no CUDA figure
is ever invented), and two CPU counters are recorded instead:

- ``cpu_live_tensor_peak_bytes`` — :mod:`.live_tensors` (gpusizer's own accounting);
- ``cpu_rss_peak_bytes`` — Linux ``VmHWM`` of ``/proc/self/status``, reset at the phase start by
  writing ``5`` to ``/proc/self/clear_refs`` (proc(5)); the whole process, Python included.

``counters`` maps every recorded field to the exact counter that produced it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .live_tensors import COUNTER as LIVE_COUNTER
from .live_tensors import LiveTensorBytes
from .nvml import DEVICE_COUNTER, PROCESS_COUNTER, Nvml, Reading, nvml_index

__all__ = ["PhaseCounters", "DeviceCounters", "non_torch_bytes", "rss_peak_bytes", "RSS_COUNTER",
           "CUDA_FIELDS"]

RSS_COUNTER = "linux /proc/self/status VmHWM (reset via /proc/self/clear_refs = 5)"

CUDA_FIELDS = ("max_memory_allocated_bytes", "max_memory_reserved_bytes", "memory_reserved_bytes",
               "mem_get_info_free_bytes", "mem_get_info_total_bytes")
NVML_FIELDS = ("nvml_used_bytes", "nvml_device_used_bytes")


@dataclass
class PhaseCounters:
    """Counters of one phase on one device: integer bytes or None (reason in ``unknown``)."""

    name: str
    gpu: int
    device: str
    values: dict[str, int | None] = field(default_factory=dict)
    counters: dict[str, str] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)
    non_torch_source: str | None = None

    def set(self, key: str, value: int | None, counter: str, reason: str | None = None) -> None:
        self.values[key] = None if value is None else int(value)
        self.counters[key] = counter
        if value is None:
            self.unknown[key] = reason or "not measured"

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "gpu": self.gpu, "device": self.device}
        out.update(self.values)
        out["counters"] = dict(self.counters)
        out["unknown"] = dict(self.unknown)
        out["non_torch_source"] = self.non_torch_source
        return out


def _read_status_kib(key: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024  # "VmHWM:  309728 kB"; kB here is KiB
    except OSError:
        return None
    return None


def _reset_rss_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def rss_peak_bytes() -> int | None:
    """The process's resident-set peak since the last reset (Linux), or None elsewhere."""
    return _read_status_kib("VmHWM")


def non_torch_bytes(process: Reading, reserved_now: int, free: int,
                    total: int) -> tuple[int, str, str]:
    """Memory outside the caching allocator (CONTRACT.md), measured, with its counter and source.

    ``process − reserved`` when NVML lists this process (CUDA context, NCCL, other libraries of
    this process); else ``(total − free) − reserved`` from ``mem_get_info`` (every process on
    the device: an upper bound). Clamped at 0 (the two readings are not one atomic snapshot).

    Args:
        process: NVML's used memory of this process (bytes or unknown).
        reserved_now: ``torch.cuda.memory_reserved`` at the same instant, bytes.
        free, total: ``torch.cuda.mem_get_info()``, bytes.
    """
    if process.bytes is not None:
        return (max(process.bytes - reserved_now, 0),
                "nvml_used_bytes - memory_reserved_bytes (same instant)",
                "NVML process used minus torch.cuda.memory_reserved")
    return (max(total - free - reserved_now, 0),
            "(mem_get_info total - free) - memory_reserved_bytes (same instant)",
            "device used (mem_get_info) minus torch.cuda.memory_reserved: other processes "
            "included, an upper bound; NVML: " + (process.unknown_reason or "unknown"))


class DeviceCounters:
    """Starts and reads the counters of each phase on one device.

    Args:
        device: ``torch.device`` the workload runs on (``cuda:i`` or ``cpu``).
        gpu: index recorded with the phase (the rank's GPU; 0 on the CPU).
        nvml: NVML readings (stubbed in tests).
        live: the CPU live-tensor accountant, or None on CUDA.
    """

    def __init__(self, device: torch.device, gpu: int, nvml: Nvml,
                 live: LiveTensorBytes | None = None) -> None:
        self.device = device
        self.gpu = gpu
        self.nvml = nvml
        self.live = live
        self.is_cuda = device.type == "cuda"
        self._rss_reset = False

    def start(self) -> None:
        """Reset the peaks at the phase start."""
        if self.is_cuda:
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            if self.live is not None:
                self.live.reset_peak()
            self._rss_reset = _reset_rss_peak()

    def read(self, phase: str) -> PhaseCounters:
        """Every counter at the phase end (peaks since :meth:`start`)."""
        pc = PhaseCounters(phase, self.gpu, str(self.device))
        if self.is_cuda:
            self._read_cuda(pc)
        else:
            self._read_cpu(pc)
        return pc

    def _read_cuda(self, pc: PhaseCounters) -> None:
        dev = self.device
        torch.cuda.synchronize(dev)
        pc.set("max_memory_allocated_bytes", torch.cuda.max_memory_allocated(dev),
               "torch.cuda.max_memory_allocated")
        pc.set("max_memory_reserved_bytes", torch.cuda.max_memory_reserved(dev),
               "torch.cuda.max_memory_reserved")
        reserved_now = torch.cuda.memory_reserved(dev)
        pc.set("memory_reserved_bytes", reserved_now, "torch.cuda.memory_reserved (phase end)")
        free, total = torch.cuda.mem_get_info(dev)
        pc.set("mem_get_info_free_bytes", free, "torch.cuda.mem_get_info()[0] (phase end)")
        pc.set("mem_get_info_total_bytes", total, "torch.cuda.mem_get_info()[1]")
        index = nvml_index(dev.index if dev.index is not None else torch.cuda.current_device())
        proc = self.nvml.process_used(index)
        pc.set("nvml_used_bytes", proc.bytes, PROCESS_COUNTER + " (phase end)",
               proc.unknown_reason)
        whole = self.nvml.device_used(index)
        pc.set("nvml_device_used_bytes", whole.bytes, DEVICE_COUNTER + " (phase end)",
               whole.unknown_reason)
        value, counter, source = non_torch_bytes(proc, reserved_now, free, total)
        pc.set("non_torch_bytes", value, counter)
        pc.non_torch_source = source
        for key in ("cpu_live_tensor_peak_bytes", "cpu_rss_peak_bytes"):
            pc.set(key, None, "cpu counter", "ran on CUDA: CPU counters not taken for the GPU")

    def _read_cpu(self, pc: PhaseCounters) -> None:
        why = f"no CUDA device: the phase ran on {self.device}"
        for key in CUDA_FIELDS + ("non_torch_bytes",):
            pc.set(key, None, "torch.cuda." + key.removesuffix("_bytes"), why)
        for key in NVML_FIELDS:
            pc.set(key, None, PROCESS_COUNTER if key == "nvml_used_bytes" else DEVICE_COUNTER,
                   why)
        if self.live is not None:
            pc.set("cpu_live_tensor_peak_bytes", self.live.peak_bytes, LIVE_COUNTER)
        else:
            pc.set("cpu_live_tensor_peak_bytes", None, LIVE_COUNTER, "accountant not active")
        rss = rss_peak_bytes() if self._rss_reset else None
        pc.set("cpu_rss_peak_bytes", rss, RSS_COUNTER,
               None if rss is not None else "/proc/self/clear_refs or VmHWM unavailable "
               "(not Linux, or not permitted)")
