"""Live tensor bytes, counted per storage, by phase and by category (a ``TorchDispatchMode``).

Every tensor an operator returns is looked up by its *storage*: a view shares its base's storage
and is not counted again. A storage's size is rounded as the CUDA caching allocator rounds a
request (``max(512, ⌈bytes / 512⌉ × 512)``; c10/cuda/CUDACachingAllocator.cpp ``round_size``,
``kMinBlockSize = 512``); an empty storage costs nothing. A storage stops counting when Python
drops its last reference (a weak reference callback), which is when the caching allocator gets
the block back on a GPU.

The tracker works the same over real CPU tensors and over fake tensors
(``torch._subclasses.fake_tensor.FakeTensorMode``), which is what lets a test on the CPU check the
simulation against a real run.

Phases: :meth:`LiveTracker.phase` opens a phase; its peak is the largest live total reached while
it is open (live bytes when it opens included). At the phase's end every storage live at the peak
is put in one category (:data:`CATEGORIES`) by a classifier the caller gives, with what the
tracker knows (allocated in this phase or before, still alive or freed).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

__all__ = ["CATEGORIES", "BLOCK_BYTES", "allocator_bytes", "StorageRecord", "PhasePeak",
           "LiveTracker"]

CATEGORIES = ("parameters", "buffers", "activations", "gradients", "optimizer_states",
              "temporaries", "kv_cache", "recurrent_state", "lora_adapters",
              "quantization_metadata")
"""What a live storage is, at a phase's peak.

- ``parameters`` / ``buffers``: the model's; ``lora_adapters`` are the trainable LoRA
  parameters and ``quantization_metadata`` the absmax buffers of 4-bit layers (the caller names
  them).
- ``gradients``: ``.grad`` of parameters.
- ``optimizer_states``: tensors in ``optimizer.state``.
- ``kv_cache``: the tensors the generation cache holds.
- ``recurrent_state``: the conv and SSM / linear-attention states the cache holds for the
  Mamba and linear-attention layers (``conv_states``, ``recurrent_states``).
- ``activations``: anything else that outlives the phase it was made in (saved for backward,
  outputs, logits), or that was made in an earlier phase.
- ``temporaries``: made in this phase and freed before it ends.
"""

BLOCK_BYTES = 512
"""The CUDA caching allocator's smallest block and rounding step (``kMinBlockSize``)."""


def allocator_bytes(nbytes: int, block: int = BLOCK_BYTES) -> int:
    """Bytes the CUDA caching allocator books for a request of ``nbytes``.

    ``0`` → 0; otherwise ``max(512, ⌈nbytes / 512⌉ × 512)`` (``round_size`` in
    pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp). Large blocks that are not split can book
    more (up to the 2 MiB / 20 MiB segment rules); that slack is allocator caching, which the
    simulation reports as unseen.
    """
    if nbytes <= 0:
        return 0
    return max(block, -(-nbytes // block) * block)


@dataclass(eq=False)
class StorageRecord:
    """One storage the tracker has seen.

    Attributes:
        key: ``id`` of the Python storage object while it lives.
        nbytes: allocator bytes (rounded).
        born: sequence number of the allocation.
        phase: the phase open when it was made ("" outside any phase).
        died: sequence number of its release, or None while it lives.
        ref: weak reference to the storage (None once released).
    """

    key: int
    nbytes: int
    born: int
    phase: str
    died: int | None = None
    ref: weakref.ref | None = field(default=None, repr=False)


@dataclass(frozen=True)
class PhasePeak:
    """The peak of one phase.

    Attributes:
        name: the phase.
        peak_bytes: largest live total while the phase was open (allocator bytes).
        by_category: that peak split by category (sums to ``peak_bytes``).
        end_bytes: live total when the phase closed.
    """

    name: str
    peak_bytes: int
    by_category: dict[str, int]
    end_bytes: int


KnownStorages = Callable[[], dict[int, str]]
"""Called when a phase closes: ``id(storage) -> category`` for the storages the caller can name
(parameters, buffers, gradients, optimizer states, KV cache); every other storage gets
:func:`default_category`."""


class LiveTracker(TorchDispatchMode):
    """Counts live tensor storages made by operators while it is active.

    Use it inside ``FakeTensorMode`` (or alone on real tensors)::

        tracker = LiveTracker()
        with FakeTensorMode(), tracker:
            with tracker.phase("forward", classify):
                ...
        tracker.peaks  # [PhasePeak, ...]
    """

    def __init__(self, block_bytes: int = BLOCK_BYTES) -> None:
        """``block_bytes``: the rounding step (512 as the CUDA allocator; 1 counts exact bytes,
        as a CPU run's own counters do)."""
        super().__init__()
        self.block_bytes = block_bytes
        self.live_bytes = 0
        self.seq = 0
        self._by_key: dict[int, StorageRecord] = {}
        self._records: list[StorageRecord] = []
        self._phase = ""
        self._names_at_open: dict[int, str] = {}
        self._peak = 0
        self._peak_seq = 0
        self.peaks: list[PhasePeak] = []
        self._paused = False

    # -- counting -------------------------------------------------------------------------------
    def track(self, t: torch.Tensor) -> None:
        """Count ``t``'s storage if it is new (views and in-place results are not new)."""
        st = t.untyped_storage()
        key = id(st)
        rec = self._by_key.get(key)
        nbytes = allocator_bytes(st.nbytes(), self.block_bytes)
        if rec is not None and rec.ref is not None and rec.ref() is st:
            if nbytes != rec.nbytes:  # resized in place (resize_, set_)
                self._add(nbytes - rec.nbytes)
                rec.nbytes = nbytes
            return
        self.seq += 1
        rec = StorageRecord(key, nbytes, self.seq, self._phase)
        rec.ref = weakref.ref(st, self._released(rec))
        self._by_key[key] = rec
        self._records.append(rec)
        self._add(nbytes)

    def _released(self, rec: StorageRecord) -> Callable[[weakref.ref], None]:
        def callback(_ref: weakref.ref) -> None:
            self.seq += 1
            rec.died = self.seq
            rec.ref = None
            if self._by_key.get(rec.key) is rec:
                del self._by_key[rec.key]
            self.live_bytes -= rec.nbytes
        return callback

    def _add(self, nbytes: int) -> None:
        self.live_bytes += nbytes
        if self.live_bytes > self._peak:
            self._peak = self.live_bytes
            self._peak_seq = self.seq

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Operators run uncounted (storages made meanwhile count only once :meth:`track`ed)."""
        self._paused = True
        try:
            yield
        finally:
            self._paused = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self._paused:
            return out
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self.track(t)
        return out

    # -- phases ---------------------------------------------------------------------------------
    @contextmanager
    def phase(self, name: str, known: KnownStorages | None = None) -> Iterator[None]:
        """Open phase ``name``; on exit, record its peak split by category (``known`` names the
        storages it can)."""
        previous = self._phase
        self._phase = name
        self._names_at_open = known() if known is not None else {}
        self._peak = self.live_bytes
        self._peak_seq = self.seq
        try:
            yield
        finally:
            self._phase = previous
        self.peaks.append(self._close(name, known))

    def live_records(self) -> list[StorageRecord]:
        """Records of the storages alive now."""
        return [r for r in self._records if r.died is None]

    def _close(self, name: str, known: KnownStorages | None) -> PhasePeak:
        at = self._peak_seq
        names = known() if known is not None else {}
        split: dict[str, int] = {}
        for r in self._records:
            if r.born <= at and (r.died is None or r.died > at):
                if r.died is None:
                    cat = names.get(r.key)
                elif r.phase != name:  # made before the phase opened, released during it
                    cat = self._names_at_open.get(r.key)
                else:
                    cat = None
                cat = cat or default_category(r, r.died is None, name)
                split[cat] = split.get(cat, 0) + r.nbytes
        # records dead before this phase's start are no longer needed
        self._records = [r for r in self._records if r.died is None]
        return PhasePeak(name, self._peak, split, self.live_bytes)


def default_category(rec: StorageRecord, alive: bool, phase: str) -> str:
    """Made in this phase and freed before its end → temporaries; else activations."""
    if rec.phase == phase and not alive:
        return "temporaries"
    return "activations"
