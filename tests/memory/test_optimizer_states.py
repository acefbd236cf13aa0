"""Optimizer states and step temporaries: each optimizer's constant, by hand."""

from __future__ import annotations

import pytest

from gpusizer.memory.optimizer_states import optimizer_memory

# Llama-3.1-8B-like tensors: the embedding (128256 × 4096) and 32 q_proj (4096 × 4096)
TENSORS = [(1, 128256, 4096), (32, 4096, 4096)]
N = 128256 * 4096 + 32 * 4096 * 4096
LARGEST = 128256 * 4096


def test_adamw_foreach_keeps_two_states_and_one_sqrt_copy():
    m = optimizer_memory("adamw", "foreach", TENSORS, 2)
    assert m.state_bytes == 2 * N * 2           # exp_avg, exp_avg_sq in bf16
    assert m.step_temporary_bytes == N * 2      # _foreach_sqrt(exp_avg_sqs)
    assert m.paged_bytes == 0


def test_adamw_for_loop_and_fused_temporaries():
    assert optimizer_memory("adamw", "for-loop", TENSORS, 4).step_temporary_bytes == \
        2 * LARGEST * 4                         # sqrt and quotient of the largest tensor
    fused = optimizer_memory("adamw", "fused", TENSORS, 4)
    assert fused.step_temporary_bytes == 0
    assert fused.state_bytes == 2 * N * 4 + 33 * 512   # device step counters, one block each


def test_adamw_8bit_blockwise_states():
    m = optimizer_memory("adamw-8bit", "foreach", [(1, 1000, 1000), (2, 1000, 1)], 2)
    # 1e6 values >= 4096: 2 × (1e6 uint8 + ceil(1e6 / 256) = 3907 fp32 absmax)
    # two 1000-value tensors < 4096: 2 fp32 states each
    assert m.state_bytes == 2 * (1_000_000 + 4 * 3907) + 2 * 1000 * 2 * 4
    assert m.step_temporary_bytes == 0


def test_paged_optimizers_move_big_tensors_out_of_pytorch():
    m = optimizer_memory("paged-adamw-8bit", "foreach", [(1, 1000, 1000), (1, 256, 256)], 2)
    assert m.paged_bytes == 2 * (1_000_000 + 4 * 3907)   # >= 1e5 values: cudaMallocManaged
    assert m.state_bytes == 2 * (65536 + 4 * 256)         # 65536 values: ordinary allocation
    p32 = optimizer_memory("paged-adamw-32bit", "foreach", [(1, 1000, 1000)], 2)
    assert (p32.paged_bytes, p32.state_bytes) == (8_000_000, 0)


@pytest.mark.parametrize("opt,expected", [
    ("sgd", 0),
    ("sgd-momentum", N * 2),
    # factored fp32 second moment: rows + cols per matrix
    ("adafactor", (128256 + 4096) * 4 + 32 * (4096 + 4096) * 4),
])
def test_other_optimizers(opt, expected):
    assert optimizer_memory(opt, "foreach", TENSORS, 2).state_bytes == expected


def test_step_temporary_has_its_own_formula():
    m = optimizer_memory("adamw", "foreach", TENSORS, 2)
    assert m.step_formula == f"foreach step: _foreach_sqrt copy of every exp_avg_sq {N} × 2 B = {N * 2} B"
    assert "foreach" not in m.formula
