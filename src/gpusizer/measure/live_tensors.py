"""Live-tensor accounting on the CPU: bytes of tensor storages alive, and their peak.

The CPU has no ``max_memory_allocated``: PyTorch's CPU allocator keeps no statistics. This
counter is gpusizer's own and is named as such (``COUNTER``): a ``TorchDispatchMode`` sees every
ATen operator's outputs; each new storage is counted once (``nbytes``) and uncounted when Python
frees it (a ``weakref.finalize`` on the storage, which PyTorch keeps as one Python object per
storage). Views share their storage and are not counted twice.

What it does not see: storages made outside ATen dispatch (``torch.frombuffer``, memory-mapped
safetensors, numpy arrays), allocator slack, and memory libraries take for themselves (oneDNN
scratch, OpenMP stacks). It is an accounting of live tensors, not of the process's memory; the
process's resident peak is recorded beside it under its own name.

Source: ``torch.utils._python_dispatch.TorchDispatchMode`` (pytorch/pytorch,
torch/utils/_python_dispatch.py); ``torch.distributed._tools.mem_tracker`` tracks storages the
same way (weak references to ``untyped_storage()``).
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

__all__ = ["LiveTensorBytes", "COUNTER"]

COUNTER = "gpusizer.live_tensor_bytes (TorchDispatchMode storage accounting, CPU)"


class LiveTensorBytes(TorchDispatchMode):
    """Counts bytes of live CPU tensor storages; ``peak_bytes`` since the last :meth:`reset_peak`.

    Use as a context manager around everything to be counted (loading included, so the weights
    are live from the start); tensors that exist before entering can be added with :meth:`adopt`.
    """

    def __init__(self) -> None:
        super().__init__()
        self.live_bytes = 0
        self.peak_bytes = 0
        self._sizes: dict[int, int] = {}

    def adopt(self, tensors: Any) -> None:
        """Count tensors created before the mode was entered (e.g. a model's parameters)."""
        for t in tree_flatten(tensors)[0]:
            if isinstance(t, torch.Tensor):
                self._track(t)

    def reset_peak(self) -> None:
        """Start a new peak from the bytes live now (the phase start)."""
        self.peak_bytes = self.live_bytes

    def _release(self, key: int) -> None:
        self.live_bytes -= self._sizes.pop(key, 0)

    def _track(self, t: torch.Tensor) -> None:
        if t.device.type != "cpu" or t.is_meta:
            return
        try:
            storage = t.untyped_storage()
        except (RuntimeError, NotImplementedError):  # sparse / nested tensors have no storage
            return
        key = storage._cdata
        if key in self._sizes:
            return
        size = int(storage.nbytes())
        self._sizes[key] = size
        self.live_bytes += size
        self.peak_bytes = max(self.peak_bytes, self.live_bytes)
        weakref.finalize(storage, self._release, key)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self._track(t)
        return out
