"""The caching-allocator model against sequences whose reserved bytes are derived by hand from
PyTorch's rules (c10/cuda/CUDACachingAllocator.cpp; constants in ``memory.allocator``).

torch 2.13's CPU build exposes no caching-allocator statistics: ``torch.cuda.memory_stats``
needs a CUDA device, ``torch.accelerator.memory_stats`` an accelerator, and CPU tensors go
through the plain CPU allocator, which keeps no reserved pool. So the hand derivations are
the check here; the same sequences are replayed on a real CUDA device where one is present
(``test_replay_matches_cuda``, skipped otherwise).
"""

from __future__ import annotations

import pytest

from gpusizer.memory.allocator import (AllocatorReplay, cat_growth_reserved_bytes,
                                       resident_reserved_bytes, rounded_request, segment_bytes)
from gpusizer.units import MiB


def test_rounding_and_segment_sizes():
    assert rounded_request(1) == 512                    # kMinBlockSize
    assert rounded_request(513) == 1024
    assert segment_bytes(rounded_request(100)) == 2 * MiB        # small pool: 2 MiB segments
    assert segment_bytes(1 * MiB) == 2 * MiB                     # <= kSmallSize is small
    assert segment_bytes(1 * MiB + 512) == 20 * MiB              # 1-10 MiB: 20 MiB segment
    assert segment_bytes(10 * MiB - 512) == 20 * MiB
    assert segment_bytes(10 * MiB) == 10 * MiB                   # >= kMinLargeAlloc: own size
    assert segment_bytes(12 * MiB + 512) == 14 * MiB             # ... rounded up to 2 MiB


def test_a_sequence_derived_by_hand():
    a = AllocatorReplay()
    small = a.malloc(100)            # 512 B block of a new 2 MiB small segment
    assert (a.allocated_bytes, a.reserved_bytes) == (512, 2 * MiB)
    a.malloc(3 * MiB // 2)           # 1.5 MiB: a 20 MiB segment, split (18.5 MiB > 1 MiB left)
    assert a.reserved_bytes == 22 * MiB
    big = a.malloc(12 * MiB)         # best fit: the 18.5 MiB free rest holds it, 6.5 MiB left
    assert a.reserved_bytes == 22 * MiB and a.segments == 2
    a.malloc(7 * MiB)                # 6.5 MiB is too small: a second 20 MiB segment
    assert a.reserved_bytes == 42 * MiB
    a.free(big)                      # merges with the free 6.5 MiB after it: 18.5 MiB free
    a.malloc(37 * MiB // 2 + 1)      # 1 B too large for it: rounded to 18.5 MiB + 512 B,
    assert a.reserved_bytes == 62 * MiB      # >= 10 MiB: its own segment, 2 MiB-rounded: 20
    a.free(small)
    # allocated: 1.5 + 7 + (18.5 MiB + 512 B); reserved never shrinks
    assert a.allocated_bytes == 3 * MiB // 2 + 7 * MiB + 37 * MiB // 2 + 512
    assert a.max_reserved_bytes == 62 * MiB
    assert a.max_allocated_bytes == a.allocated_bytes + 512   # before the small block's free


def test_unsplit_remainder_counts_as_allocated():
    a = AllocatorReplay()
    h = a.malloc(12 * MiB)           # own segment of exactly 12 MiB
    a.free(h)
    a.malloc(11 * MiB + 512)         # fits the 12 MiB block; 512 KiB left <= 1 MiB: not split
    assert a.allocated_bytes == 12 * MiB and a.requested_bytes == 11 * MiB + 512
    assert a.reserved_bytes == 12 * MiB


def test_max_split_size_keeps_oversize_blocks_whole():
    a = AllocatorReplay(max_split_size_bytes=20 * MiB)
    h = a.malloc(40 * MiB)
    a.free(h)
    a.malloc(4 * MiB)                # may not take the oversize 40 MiB block: a 20 MiB segment
    assert a.reserved_bytes == 60 * MiB
    a.malloc(30 * MiB)               # >= max_split and within 20 MiB of 40: served, not split
    assert a.reserved_bytes == 60 * MiB and a.allocated_bytes == 4 * MiB + 40 * MiB


def test_expandable_segments_grow_by_pages():
    a = AllocatorReplay(expandable_segments=True)
    first = a.malloc(3 * MiB)        # the large pool's segment maps one 20 MiB page
    assert a.reserved_bytes == 20 * MiB
    a.malloc(16 * MiB)               # the 17 MiB free rest holds it; 1 MiB left: not split
    assert a.reserved_bytes == 20 * MiB and a.allocated_bytes == 20 * MiB
    a.malloc(5 * MiB)                # nothing free: the segment grows by one page at its end
    assert a.reserved_bytes == 40 * MiB and a.segments == 1
    a.free(first)                    # a 3 MiB hole at the start
    a.malloc(25 * MiB)               # 15 MiB free at the end + one more page (25 - 15 -> 20)
    assert a.reserved_bytes == 60 * MiB
    a.malloc(100)                    # the small pool has its own segment of 2 MiB pages
    assert a.reserved_bytes == 62 * MiB


def test_resident_tensors():
    # three 8 MiB tensors: 20 MiB segment holds two (12 then 4 MiB left), a second holds one
    assert resident_reserved_bytes([(3, 8 * MiB)]) == (40 * MiB, 24 * MiB)
    # a packed weight and its scales in turn: 768 KiB + 96 KiB twice per 2 MiB small segment
    reserved, requested = resident_reserved_bytes([(4, (768 * 1024, 96 * 1024))])
    assert requested == 4 * (768 + 96) * 1024
    assert reserved == 2 * 2 * MiB   # 2 × 864 KiB = 1728 KiB <= 2048 KiB; the third needs more


def test_large_growing_tensors_leave_whole_segments_to_give_back():
    # one tensor of 4 MiB per token from 3 tokens, 2 steps: 12, then 16 and 20 MiB segments;
    # each shorter one is freed whole, so it is cached (given back on an OOM retry), not held
    r = cat_growth_reserved_bytes(tensors=1, bytes_per_token=4 * MiB, start_tokens=3, steps=2)
    assert r.max_reserved_bytes == (12 + 16 + 20) * MiB
    assert r.max_requested_bytes == (16 + 20) * MiB      # old and new while cat runs
    assert r.max_held_bytes == (16 + 20) * MiB           # the 12 MiB segment is wholly free
    assert r.cached_segment_bytes == (12 + 16) * MiB


def test_middle_sized_growing_tensors_fragment_a_shared_segment():
    # two tensors of 1 MiB per token from 2 tokens, 2 steps, all in one 20 MiB segment:
    # start  A[0,2) B[2,4) free[4,20)
    # t=2    A'[4,7), A freed → [0,2); B'[7,10) (best fit 13 MiB), B freed → [0,4)
    # t=3    A''[0,4) exact fit, A' freed → [4,7); B'' takes [10,14) of the 10 MiB rest,
    #        B' freed → [4,10). Peak requested: A'' 4 + B' 3 + B'' 4 = 11 MiB; held 20 MiB
    r = cat_growth_reserved_bytes(tensors=2, bytes_per_token=1 * MiB, start_tokens=2, steps=2)
    assert r.segments == 1 and r.max_reserved_bytes == 20 * MiB
    assert r.max_requested_bytes == 11 * MiB
    assert r.max_held_bytes - r.max_requested_bytes == 9 * MiB


def test_legacy_tuple_cache_makes_every_copy_first():
    # the same two tensors, every longer copy allocated before the shorter ones are freed:
    # t=2: A'[4,7) B'[7,10), then A, B freed; t=3: A''4 MiB best fit [0,4) (merged A+B),
    # B'' 4 MiB from [10,20); peak requested A' 3 + B' 3 + A'' 4 + B'' 4 = 14 MiB
    r = cat_growth_reserved_bytes(tensors=2, bytes_per_token=1 * MiB, start_tokens=2, steps=2,
                                  whole_cache=True)
    assert r.max_requested_bytes == 14 * MiB and r.max_reserved_bytes == 20 * MiB


@pytest.mark.skipif("not __import__('torch').cuda.is_available()",
                    reason="no CUDA device: torch's CPU build keeps no caching-allocator stats")
def test_replay_matches_cuda():   # pragma: no cover - needs a GPU
    import torch
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_reserved()
    sizes = [100, 3 * MiB // 2, 12 * MiB, 7 * MiB]
    a = AllocatorReplay()
    live = [torch.empty(s, dtype=torch.uint8, device="cuda") for s in sizes]
    for s in sizes:
        a.malloc(s)
    assert torch.cuda.memory_reserved() - base == a.reserved_bytes
    del live
