"""PyTorch's CUDA caching allocator, as rules: what ``torch.cuda.max_memory_reserved`` holds
beyond what tensors hold (``max_memory_allocated``).

Source: PyTorch ``c10/cuda/CUDACachingAllocator.cpp`` (the native backend, unchanged in these
rules from torch 1.10 to 2.9: ``round_size``, ``get_allocation_size``, ``get_free_block``,
``should_split``, ``free_block`` / ``try_merge_blocks``) and the docs page "CUDA semantics:
memory management" (``PYTORCH_CUDA_ALLOC_CONF``: ``max_split_size_mb``,
``expandable_segments``). The rules:

- a request is rounded up to a multiple of 512 B (``kMinBlockSize``);
- requests of at most 1 MiB (``kSmallSize``) come from the small pool, whose segments are
  2 MiB (``kSmallBuffer``); larger ones from the large pool, where a request under 10 MiB
  (``kMinLargeAlloc``) opens a 20 MiB segment (``kLargeBuffer``) and a larger one a segment of
  its own size rounded up to 2 MiB (``kRoundLarge``);
- a request takes the smallest free cached block of its pool that holds it (best fit, lowest
  address on ties); that block is split when what remains is at least 512 B (small pool) or
  more than 1 MiB (large pool), else handed out whole;
- a freed block merges with its free neighbours of the same segment; segments are never merged
  and never returned to the driver (only ``empty_cache`` or an out-of-memory retry does), so
  ``memory_reserved`` only grows;
- ``max_split_size_mb`` (default unlimited): blocks at least that large are never split, and
  serve a request only when it is also that large and within 20 MiB of the block;
- ``expandable_segments:True``: each pool has one segment that grows where it ends by pages of
  2 MiB (small pool) or 20 MiB (large pool; ``SegmentRange``, ``get_or_create_expandable_
  segment``), so a request that no free block holds extends it by what is missing.

``torch.cuda.memory_allocated`` counts the blocks handed out (rounded, and whole when not
split), not the requested bytes; this model keeps both.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from functools import lru_cache

from ..units import MiB

__all__ = ["MIN_BLOCK_BYTES", "SMALL_SIZE_BYTES", "SMALL_BUFFER_BYTES", "LARGE_BUFFER_BYTES",
           "MIN_LARGE_ALLOC_BYTES", "ROUND_LARGE_BYTES", "ALLOCATOR_SOURCE", "rounded_request",
           "segment_bytes", "AllocatorReplay", "resident_reserved_bytes",
           "cat_growth_reserved_bytes"]

MIN_BLOCK_BYTES = 512           # kMinBlockSize: every request is rounded up to 512 B
SMALL_SIZE_BYTES = 1 * MiB      # kSmallSize: the largest request of the small pool
SMALL_BUFFER_BYTES = 2 * MiB    # kSmallBuffer: a small-pool segment
LARGE_BUFFER_BYTES = 20 * MiB   # kLargeBuffer: the segment of a 1-10 MiB request
MIN_LARGE_ALLOC_BYTES = 10 * MiB  # kMinLargeAlloc: from here a request gets its own segment
ROUND_LARGE_BYTES = 2 * MiB     # kRoundLarge: such a segment is rounded up to 2 MiB
_GAP_BYTES = 2 * MiB            # address gap between segments (they are never adjacent)

ALLOCATOR_SOURCE = ("PyTorch c10/cuda/CUDACachingAllocator.cpp (round_size, "
                    "get_allocation_size, get_free_block, should_split, try_merge_blocks: "
                    "kMinBlockSize 512 B, kSmallSize 1 MiB, kSmallBuffer 2 MiB, kLargeBuffer "
                    "20 MiB, kMinLargeAlloc 10 MiB, kRoundLarge 2 MiB); docs 'CUDA semantics: "
                    "memory management'")


def _up(n: int, to: int) -> int:
    return -(-n // to) * to


def rounded_request(size_bytes: int) -> int:
    """``round_size``: a request rounded up to a whole number of 512 B blocks (at least one)."""
    return MIN_BLOCK_BYTES if size_bytes < MIN_BLOCK_BYTES else _up(size_bytes, MIN_BLOCK_BYTES)


def segment_bytes(rounded_bytes: int) -> int:
    """``get_allocation_size``: the segment cudaMalloc'd for a rounded request no cached block
    holds: 2 MiB up to 1 MiB, 20 MiB under 10 MiB, else the request rounded up to 2 MiB."""
    if rounded_bytes <= SMALL_SIZE_BYTES:
        return SMALL_BUFFER_BYTES
    if rounded_bytes < MIN_LARGE_ALLOC_BYTES:
        return LARGE_BUFFER_BYTES
    return _up(rounded_bytes, ROUND_LARGE_BYTES)


@dataclass
class _Block:
    addr: int
    size: int
    segment: int
    small: bool
    free: bool = True
    prev: _Block | None = field(default=None, repr=False)
    next: _Block | None = field(default=None, repr=False)


class AllocatorReplay:
    """Replays ``malloc`` / ``free`` under the caching allocator's rules (one device, one
    stream) and keeps the counters PyTorch keeps.

    Attributes:
        allocated_bytes: blocks handed out now (``torch.cuda.memory_allocated``).
        requested_bytes: bytes the live requests asked for.
        reserved_bytes: segments held (``torch.cuda.memory_reserved``).
        max_allocated_bytes, max_reserved_bytes: their peaks (``max_memory_*``).
        max_requested_bytes: the peak of ``requested_bytes``.
        cached_segment_bytes: segments now wholly free: what an out-of-memory retry gives back
            to the driver (``release_cached_blocks`` frees the blocks that are not split).
        max_held_bytes: the peak of reserved minus ``cached_segment_bytes``: what the
            allocator cannot give back, the reservation a card must hold. (With expandable
            segments no segment is counted as given back.)
        segments: segments opened (cudaMalloc calls).

    Args:
        max_split_size_bytes: ``max_split_size_mb`` in bytes, or None (unlimited, the default).
        expandable_segments: ``expandable_segments:True``.
    """

    def __init__(self, *, max_split_size_bytes: int | None = None,
                 expandable_segments: bool = False) -> None:
        self._max_split = max_split_size_bytes
        self._expandable = expandable_segments
        self._free: dict[bool, list[tuple[int, int]]] = {True: [], False: []}
        self._blocks: dict[int, _Block] = {}
        self._live: dict[int, tuple[_Block, int]] = {}
        self._tail: dict[bool, _Block | None] = {True: None, False: None}
        self._next_addr = 0
        self._handles = 0
        self.allocated_bytes = self.requested_bytes = self.reserved_bytes = 0
        self.max_allocated_bytes = self.max_reserved_bytes = self.max_requested_bytes = 0
        self.cached_segment_bytes = self.max_held_bytes = 0
        self.segments = 0

    # -- free-block index ---------------------------------------------------------------
    def _index(self, b: _Block) -> None:
        bisect.insort(self._free[b.small], (b.size, b.addr))

    def _unindex(self, b: _Block) -> None:
        pool = self._free[b.small]
        del pool[bisect.bisect_left(pool, (b.size, b.addr))]

    def _find(self, size: int, small: bool) -> _Block | None:
        pool = self._free[small]
        i = bisect.bisect_left(pool, (size, -1))
        if i == len(pool):
            return None
        b = self._blocks[pool[i][1]]
        ms = self._max_split
        if ms is not None and not small:
            if size < ms <= b.size:
                return None   # an oversize block does not serve a small request
            if size >= ms and b.size >= size + LARGE_BUFFER_BYTES:
                return None   # nor a large one more than 20 MiB smaller than it
        return b

    def _new_segment(self, size: int, small: bool) -> _Block:
        if self._expandable:
            return self._expand(size, small)
        seg = segment_bytes(size)
        b = _Block(self._next_addr, seg, self.segments, small)
        self._next_addr += seg + _GAP_BYTES
        self.segments += 1
        self.reserved_bytes += seg
        self._blocks[b.addr] = b
        return b

    def _expand(self, size: int, small: bool) -> _Block:
        page = SMALL_BUFFER_BYTES if small else LARGE_BUFFER_BYTES
        tail = self._tail[small]
        if tail is None:
            base = self._next_addr
            self._next_addr += 1 << 50   # room for the pool's segment to grow
            self.segments += 1
            grow = _up(size, page)
            b = _Block(base, grow, self.segments - 1, small)
        elif tail.free:
            grow = _up(size - tail.size, page)
            self._unindex(tail)
            tail.size += grow
            b = tail
        else:
            grow = _up(size, page)
            b = _Block(tail.addr + tail.size, grow, tail.segment, small, prev=tail)
            tail.next = b
        self.reserved_bytes += grow
        self._blocks[b.addr] = b
        self._tail[small] = b
        return b

    def _should_split(self, b: _Block, size: int) -> bool:
        remaining = b.size - size
        if b.small:
            return remaining >= MIN_BLOCK_BYTES
        if self._max_split is not None and size >= self._max_split:
            return False
        return remaining > SMALL_SIZE_BYTES

    # -- the two calls -----------------------------------------------------------------
    def malloc(self, size_bytes: int) -> int:
        """Allocate ``size_bytes``; returns a handle for :meth:`free`."""
        size = rounded_request(size_bytes)
        small = size <= SMALL_SIZE_BYTES
        b = self._find(size, small)
        if b is not None:
            self._unindex(b)
            if self._whole(b):
                self.cached_segment_bytes -= b.size
        else:
            b = self._new_segment(size, small)
        if self._should_split(b, size):
            rest = _Block(b.addr + size, b.size - size, b.segment, small, prev=b, next=b.next)
            if b.next is not None:
                b.next.prev = rest
            b.next, b.size = rest, size
            self._blocks[rest.addr] = rest
            if self._tail[small] is b:
                self._tail[small] = rest
            self._index(rest)
        b.free = False
        self._handles += 1
        self._live[self._handles] = (b, size_bytes)
        self.allocated_bytes += b.size
        self.requested_bytes += size_bytes
        self.max_allocated_bytes = max(self.max_allocated_bytes, self.allocated_bytes)
        self.max_reserved_bytes = max(self.max_reserved_bytes, self.reserved_bytes)
        self.max_requested_bytes = max(self.max_requested_bytes, self.requested_bytes)
        self.max_held_bytes = max(self.max_held_bytes,
                                  self.reserved_bytes - self.cached_segment_bytes)
        return self._handles

    def free(self, handle: int) -> None:
        """Free the block ``handle`` names, merging it with its free neighbours.

        Raises:
            KeyError: a handle not live.
        """
        b, asked = self._live.pop(handle)
        self.allocated_bytes -= b.size
        self.requested_bytes -= asked
        b.free = True
        for other in (b.prev, b.next):
            if other is not None and other.free:
                self._unindex(other)
                first, second = (other, b) if other is b.prev else (b, other)
                first.size += second.size
                first.next = second.next
                if second.next is not None:
                    second.next.prev = first
                del self._blocks[second.addr]
                if self._tail[b.small] is second:
                    self._tail[b.small] = first
                b = first
        if self._whole(b):
            self.cached_segment_bytes += b.size
        self._index(b)

    def _whole(self, b: _Block) -> bool:
        """A free block that is a whole segment (given back on an out-of-memory retry)."""
        return not self._expandable and b.prev is None and b.next is None


def resident_reserved_bytes(tensor_sizes: list[tuple[int, int | tuple[int, ...]]]
                            ) -> tuple[int, int]:
    """Reserved and requested bytes of tensors allocated one after another and kept (the
    resident weights, gradients, optimizer states): :class:`AllocatorReplay` of each
    ``(count, bytes)`` pair in order, nothing freed; ``bytes`` may be a tuple of sizes
    allocated in turn ``count`` times (a packed weight then its scales).

    Returns:
        ``(reserved_bytes, requested_bytes)``; their difference is the allocator's slack over
        that set.
    """
    replay = AllocatorReplay()
    for count, size in tensor_sizes:
        sizes = size if isinstance(size, tuple) else (size,)
        for _ in range(count):
            for one in sizes:
                replay.malloc(one)
    return replay.reserved_bytes, replay.requested_bytes


@lru_cache(maxsize=256)
def cat_growth_reserved_bytes(*, tensors: int, bytes_per_token: int, start_tokens: int,
                              steps: int, whole_cache: bool = False) -> AllocatorReplay:
    """Peak reserved and peak allocated bytes while ``tensors`` cached tensors each grow by one
    token per step with ``torch.cat`` (transformers ``DynamicLayer.update``: the new, longer
    tensor is allocated, then the old one freed), replayed under the allocator's rules.

    Each step, for each tensor in turn: ``malloc((t + 1) × bytes_per_token)`` then ``free`` of
    the ``t``-token one, from ``t = start_tokens`` for ``steps`` steps; the tensors start at
    ``start_tokens`` tokens, allocated one after another. With ``whole_cache`` (transformers'
    legacy tuple cache, before 4.36), every tensor's longer copy is allocated before any
    shorter one is freed: the previous tuple lives until the forward returns.

    Args:
        tensors: growing tensors on the GPU (K and V of each layer: 2 × layers).
        bytes_per_token: bytes one token adds to one tensor (batch × kv_heads × head_dim ×
            dtype bytes).
        start_tokens: tokens each tensor holds before the first step (the prompt).
        steps: decode steps (each adds one token).
        whole_cache: the legacy tuple cache's order (see above).

    Returns:
        The replay after the last step (its ``max_reserved_bytes``, ``max_held_bytes``,
        ``max_requested_bytes``…). A pure function of its arguments, cached (``cards`` and
        ``plan`` size the same growth on every card): read the replay, never replay on it.
    """
    replay = AllocatorReplay()
    live = [replay.malloc(start_tokens * bytes_per_token) for _ in range(tensors)]
    for step in range(steps):
        t = start_tokens + step
        if whole_cache:
            new = [replay.malloc((t + 1) * bytes_per_token) for _ in range(tensors)]
            for old in live:
                replay.free(old)
            live = new
            continue
        for i in range(tensors):
            new_one = replay.malloc((t + 1) * bytes_per_token)
            replay.free(live[i])
            live[i] = new_one
    return replay
