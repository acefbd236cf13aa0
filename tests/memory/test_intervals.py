"""Intervals on the memory figures (issue 16 point 3): split-conformal spreads per item class,
the interval arithmetic, the fit rule's ``borderline``, and the shipped calibration."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gpusizer.memory import intervals
from gpusizer.memory.fit_rule import judge_fit
from gpusizer.memory.intervals import (Calibration, Spread, conformal_bounds, figure_interval,
                                       load_calibration)
from gpusizer.memory.items import ITEM_KINDS, Item, MemoryEstimate

ROOT = Path(__file__).resolve().parents[2]
GIB = 2**30


def cal(**spreads: tuple[float, float]) -> Calibration:
    return Calibration("2026-12-01", 0.9,
                       {k: Spread(lo, hi, 20, "test") for k, (lo, hi) in spreads.items()})


def test_conformal_bounds_are_the_kth_order_statistics():
    # n = 19 at 90 %: k = floor(20 × 0.05) = 1 → the smallest and the largest residual
    rs = [float(i) for i in range(19)]
    assert conformal_bounds(rs, 0.9) == (0.0, 18.0)
    # n = 56: k = floor(57 × 0.05) = 2 → the 2nd smallest and the 2nd largest
    rs = [float(i) for i in range(56)]
    assert conformal_bounds(rs, 0.9) == (1.0, 54.0)
    # n = 18: k = floor(19 × 0.05) = 0 → too few for the nominal level
    assert conformal_bounds([0.0] * 18, 0.9) is None


def test_figure_interval_adds_each_class_spread_times_its_bytes():
    c = cal(activations=(-0.25, 0.5), non_torch=(0.0, 2.0))
    classes = {"exact": 10 * GIB, "activations": 4 * GIB, "non_torch": GIB}
    # allocated counts exact + activations: 14 GiB + [-0.25, 0.5] × 4 GiB
    assert figure_interval(14 * GIB, classes, "allocated", c) == (13 * GIB, 16 * GIB)
    # device adds the non-PyTorch GiB: 15 GiB + [-1 + 0, 2 + 2] GiB
    assert figure_interval(15 * GIB, classes, "device", c) == (14 * GIB, 19 * GIB)
    # a class it counts that is uncalibrated → no interval; an unknown figure → none
    assert figure_interval(15 * GIB, classes, "device", cal(activations=(0, 0))) is None
    assert figure_interval(None, classes, "allocated", c) is None


def test_a_task_calibrated_class_takes_its_tasks_spread():
    c = Calibration("2026-12-01", 0.9, {"non_torch:training": Spread(1.0, 2.0, 20, "t"),
                                        "non_torch": Spread(0.0, 0.5, 20, "t")})
    classes = {"exact": 10 * GIB, "non_torch": GIB}
    # training: 11 GiB + [1, 2] GiB; inference falls back to the class's own [0, 0.5] GiB
    assert figure_interval(11 * GIB, classes, "device", c, task="training") == (12 * GIB,
                                                                             13 * GIB)
    assert figure_interval(11 * GIB, classes, "device", c, task="inference") == (
        11 * GIB, int(11.5 * GIB))


def test_item_classes_follow_the_item_kinds():
    assert ITEM_KINDS["weights"].spread_class(training=True) == "exact"
    assert ITEM_KINDS["kv_cache"].spread_class(training=False) == "exact"
    assert ITEM_KINDS["activations"].spread_class(training=True) == "activations"
    assert ITEM_KINDS["prefill_working"].spread_class(training=False) == "working"
    assert ITEM_KINDS["cuda_context"].spread_class(training=False) == "non_torch"
    assert ITEM_KINDS["allocator_slack"].spread_class(training=False) == "fragmentation"
    assert ITEM_KINDS["optimizer_states_paged"].spread_class(training=True) == "exact"


def _estimate(working: int, *, provenance: str = "estimated") -> MemoryEstimate:
    items = (Item("weights", 60 * GIB, "estimated", ("load", "decode"), "test"),
             Item("decode_working", working, provenance, ("decode",), "test"),
             Item("cuda_context", GIB // 2, "estimated", ("load", "decode"), "test",
                  non_torch=True))
    return MemoryEstimate(weights_bytes=60 * GIB, reserve_bytes=0, items=items,
                          phase_names=("load", "decode"), lower_bound_items=items[:1],
                          lower_bound_phase="decode")


def test_peaks_carry_the_largest_phase_interval(monkeypatch):
    monkeypatch.setattr(intervals, "load_calibration",
                        lambda: cal(working=(-0.5, 1.0), non_torch=(0.0, 1.0)))
    est = _estimate(4 * GIB)
    decode = est.phases[-1]
    # decode: 64 GiB allocated + [-0.5, 1.0] × 4 GiB
    assert decode.peak_interval_bytes == (62 * GIB, 68 * GIB)
    assert est.peak_interval_bytes == (62 * GIB, 68 * GIB)
    # device: 64.5 GiB + [-2 + 0, 4 + 0.5] GiB
    assert est.device_peak_interval_bytes == (int(62.5 * GIB), 69 * GIB)
    # a measured item carries no estimate error
    measured = _estimate(4 * GIB, provenance="measured")
    assert measured.peak_interval_bytes == (64 * GIB, 64 * GIB)


def test_fit_rule_says_borderline_when_the_range_straddles_the_device(monkeypatch):
    monkeypatch.setattr(intervals, "load_calibration",
                        lambda: cal(working=(-0.5, 1.0), non_torch=(0.0, 1.0)))
    est = _estimate(4 * GIB)           # device peak 64.5 GiB, range [62.5, 69] GiB
    assert judge_fit(est, device_bytes=80 * GIB, margin_bytes=4 * GIB).state == "fits"
    j = judge_fit(est, device_bytes=70 * GIB, margin_bytes=4 * GIB)   # 68.5 fits, 73 does not
    assert j.state == "borderline" and j.headroom_bytes == int(1.5 * GIB)
    assert "straddles" in j.reason
    j = judge_fit(est, device_bytes=66 * GIB, margin_bytes=2 * GIB)   # 66.5 > 66 ≥ 64.5
    assert j.state == "borderline" and j.headroom_bytes < 0
    assert judge_fit(est, device_bytes=64 * GIB, margin_bytes=2 * GIB).state == "does_not_fit"


def test_uncalibrated_means_no_interval_and_no_borderline(monkeypatch):
    monkeypatch.setattr(intervals, "load_calibration", lambda: None)
    est = _estimate(4 * GIB)
    assert est.peak_interval_bytes is None and est.device_peak_interval_bytes is None
    assert judge_fit(est, device_bytes=70 * GIB, margin_bytes=4 * GIB).state == "fits"


def test_shipped_calibration_is_dated_and_states_its_coverage():
    raw = json.loads((ROOT / "src/gpusizer/data/intervals.json").read_text())
    assert raw["nominal"] == 0.9 and raw["date"]
    shipped = load_calibration()
    assert shipped is not None
    assert {k.split(":")[0] for k in shipped.spreads} <= set(intervals.SPREAD_CLASSES)
    assert {k.split(":")[1] for k in shipped.spreads if ":" in k} <= {"training", "inference"}
    for name, s in shipped.spreads.items():
        assert s.low <= s.high
        # calibrated on its own (n ≥ 19 at 90 %) or borrowed, saying from what
        assert s.n >= 19 or s.source.startswith("borrowed from"), name
    for counter, board in raw["coverage_leave_one_out"].items():
        if board["n"] >= 19:
            assert board["coverage"] >= 0.9, counter


def test_calibration_residuals_and_leave_one_out_coverage_by_hand():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    ci = pytest.importorskip("calibrate_intervals")
    # 20 training cases: predicted 10 GiB of which 2 GiB activations; observed 10 + i/10 GiB
    cases = [ci.CaseFigures(f"c{i}", True, 10 * GIB, 11 * GIB, None,
                            {"exact": 8 * GIB, "activations": 2 * GIB},
                            {"exact": 8 * GIB, "activations": 2 * GIB, "non_torch": GIB},
                            {"max_memory_allocated": 10 * GIB + i * GIB // 10})
             for i in range(20)]
    res = ci.residuals(cases)
    # r = (observed − predicted) / activations = (i/10 GiB) / 2 GiB = i/20
    assert res["activations"] == pytest.approx([i / 20 for i in range(20)])
    calibration, _ = ci.calibrate(cases)
    assert calibration.spreads["activations"].low == 0.0
    assert calibration.spreads["activations"].high == pytest.approx(19 / 20)
    board = ci.coverage(cases)["max_memory_allocated"]
    # leave-one-out with 19 left (k = 1): the two extreme cases fall outside their interval
    assert board["n"] == 20 and board["inside"] == 18
