"""One phase of one rung: reset the peaks, note the start, run, read every counter, note the end.

An out-of-memory inside a phase is caught here with the counters as they stand (the peaks up to
the failure) and the allocator's own numbers, noted, and re-raised as :class:`PhaseFailure` so the
rung stops at its first violation (R10). Every note is flushed before the harness goes on.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import torch

from ..errors import GpusizerError
from .counters import DeviceCounters, PhaseCounters
from .faults import Injection
from .oom import allocator_numbers, is_oom
from .raw_notes import RawNotes

__all__ = ["PhaseFailure", "PhaseRunner"]


class PhaseFailure(Exception):
    """A phase stopped: ``oom`` (out of memory) or ``failed`` (any other error)."""

    def __init__(self, phase: str, result: str, message: str, counters: PhaseCounters,
                 allocator: dict) -> None:
        super().__init__(f"{phase}: {message}")
        self.phase, self.result, self.message = phase, result, message
        self.counters, self.allocator = counters, allocator


class PhaseRunner:
    """Runs phases of one rung and keeps their counters in order (``records``)."""

    def __init__(self, notes: RawNotes, counters: DeviceCounters, rung: str,
                 inject: Injection | None = None) -> None:
        self.notes, self.counters, self.rung, self.inject = notes, counters, rung, inject
        self.records: list[PhaseCounters] = []

    def run(self, phase: str, fn: Callable[[], Any], **info: Any) -> Any:
        """Run ``fn`` as ``phase``; returns its value.

        Raises:
            PhaseFailure: ``fn`` ran out of memory or failed (noted with its counters first).
        """
        self.counters.start()
        self.notes.note("phase_start", rung=self.rung, phase=phase, **info)
        t0 = time.perf_counter()
        try:
            if self.inject is not None and self.inject.where == phase:
                if self.inject.kind == "oom":
                    raise torch.OutOfMemoryError(f"injected out-of-memory at {phase} "
                                                 f"({self.inject})")
                if self.inject.kind == "crash":
                    raise RuntimeError(f"injected crash at {phase} ({self.inject})")
                if self.inject.kind == "hang":
                    self.notes.note("injected_hang", rung=self.rung, phase=phase)
                    while True:
                        time.sleep(3600)
            value = fn()
        except GpusizerError as exc:  # an input the harness cannot run: not a workload failure
            self.notes.note("phase_refused", rung=self.rung, phase=phase, error=str(exc))
            raise
        except Exception as exc:
            pc = self.counters.read(phase)
            self.records.append(pc)
            result = "oom" if is_oom(exc) else "failed"
            alloc = allocator_numbers(self.counters.device)
            if self.counters.live is not None:
                alloc["cpu_live_tensor_bytes_at_failure"] = self.counters.live.live_bytes
            self.notes.note("phase_" + result, rung=self.rung, phase=phase,
                            error=f"{type(exc).__name__}: {exc}"[:2000], allocator=alloc,
                            seconds=round(time.perf_counter() - t0, 6), counters=pc.as_json())
            raise PhaseFailure(phase, result, f"{type(exc).__name__}: {exc}"[:2000], pc,
                               alloc) from exc
        pc = self.counters.read(phase)
        self.records.append(pc)
        self.notes.note("phase_end", rung=self.rung, phase=phase,
                        seconds=round(time.perf_counter() - t0, 6), counters=pc.as_json())
        return value
