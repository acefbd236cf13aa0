"""Ops whose output size depends on values, under the simulation's fake tensors: the largest
output (every element selected), an upper bound of the memory they hold."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def test_nonzero_masked_select_and_mask_indexing_take_their_largest_output():
    from torch._subclasses.fake_tensor import FakeTensorMode

    from gpusizer.simulate.phases import _DataDependentReads
    reads = _DataDependentReads()
    with FakeTensorMode(), reads:
        x = torch.empty((3, 4), dtype=torch.bfloat16)
        mask = x > 0
        # nonzero: at most one (row, column) pair per element → (12, 2) int64
        idx = torch.nonzero(mask)
        assert tuple(idx.shape) == (12, 2) and idx.dtype == torch.int64
        # masked_select and x[mask]: at most every element → (12,)
        assert tuple(torch.masked_select(x, mask).shape) == (12,)
        assert tuple(x[mask].shape) == (12,)
        y = torch.empty((3, 4, 5))
        assert tuple(y[mask].shape) == (12, 5)   # the mask's 2 dimensions become one
    assert reads.shapes == 4
    assert "upper bound" in reads.note()
