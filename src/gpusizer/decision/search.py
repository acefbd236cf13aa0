"""Searches over one integer dimension (concurrency, length, microbatch) for the largest value
the fit rule accepts; used by ``gpusizer fit`` and by the alternatives."""

from __future__ import annotations

from typing import Callable

__all__ = ["largest_fitting"]


def largest_fitting(lo: int, hi: int, ok: Callable[[int], bool]) -> int | None:
    """Largest n in [lo, hi] with ok(n), ok monotone decreasing (binary search); None when
    ok(lo) fails or the range is empty."""
    if lo > hi or not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
