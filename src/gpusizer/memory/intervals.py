"""Error intervals on the memory figures (issue 16, CONTRACT.md ``*_interval_bytes``).

Every item belongs to a *spread class*: the arithmetic of shapes (weights, KV cache, gradients,
optimizer states, buffers…) is ``exact``; what is made and freed within a phase (``activations``
in training, ``working`` memory in inference), what the caching allocator keeps beyond what is
allocated (``fragmentation``) and what lies outside PyTorch (``non_torch``: CUDA context, NCCL)
each have their own measured spread; so do the parameters, gradients and states a ZeRO / FSDP
placement divides over several GPUs (``sharded``: what each GPU really holds follows the
framework's sharding). The spread of a class is a pair of relative errors
``(low, high)`` on that class's bytes, read off the public cases by
``benchmarks/calibrate_intervals.py`` and shipped, dated, in ``data/intervals.json``.

A figure F summed at one phase has the interval::

    [F + Σ_c low_c × U_c,  F + Σ_c high_c × U_c]

with U_c the bytes of class c that F counts at that phase (floor / ceiling to whole bytes). A peak
over phases is the largest phase figure, so its interval is [max of lows, max of highs]. Adding
each class's end points is conservative when the classes' errors are not perfectly correlated;
the benchmark measures the coverage it gives, leave-one-out.

The spreads are split-conformal bounds (Vovk et al. 2005; Lei et al. 2018, "Distribution-free
predictive inference for regression"): with n residuals r_i sorted, the nominal 1 − α interval is
[r_(k), r_(n+1−k)] with k = ⌊(n + 1) α / 2⌋; for exchangeable cases it covers a new case with
probability ≥ 1 − 2k / (n + 1). With k = 0 (too few cases for the nominal level) the class is not
calibrated on its own: it borrows a calibrated class (said in the data file), or stays
uncalibrated, and then every figure it enters has a ``None`` interval (CONTRACT.md: null until
calibrated).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

__all__ = ["SpreadClass", "Spread", "Calibration", "SPREAD_CLASSES", "load_calibration",
           "conformal_bounds", "figure_interval", "FigureKind"]

SpreadClass = Literal["exact", "activations", "working", "fragmentation", "non_torch", "sharded"]
SPREAD_CLASSES: tuple[SpreadClass, ...] = ("exact", "activations", "working", "fragmentation",
                                           "non_torch", "sharded")
SHARDED_ITEMS = frozenset({"weights", "quantization_metadata", "lora_adapters", "gradients",
                           "optimizer_states", "master_weights", "master_gradients",
                           "modules_to_save", "adapter_buffers"})
"""Items a ZeRO / FSDP placement divides over its shard group: exact on one GPU, but under
sharding what each GPU holds follows how the framework really shards (flat parameters, frozen
parameters kept whole, gathered units), so their class is ``sharded`` there."""
FigureKind = Literal["allocated", "reserved", "device"]
"""What a figure sums: ``allocated`` the PyTorch items (``peak_bytes``); ``reserved`` those plus
the allocator's fragmentation (``reserved_peak_bytes``); ``device`` every item
(``device_peak_bytes``)."""

_COUNTED: dict[FigureKind, frozenset[str]] = {
    "allocated": frozenset({"exact", "activations", "working", "sharded"}),
    "reserved": frozenset({"exact", "activations", "working", "sharded", "fragmentation"}),
    "device": frozenset(SPREAD_CLASSES),
}


@dataclass(frozen=True)
class Spread:
    """One class's relative error range.

    Attributes:
        low, high: relative errors on the class's bytes (observed − predicted) / predicted at
            the nominal level's lower and upper end (low ≤ high; either may be of either sign).
        n: residuals it was read from (0 when borrowed).
        source: the scoreboard group it was read from, or ``borrowed from <class>``.
    """

    low: float
    high: float
    n: int
    source: str


@dataclass(frozen=True)
class Calibration:
    """The shipped calibration: ``spreads`` per class (a missing class is uncalibrated)."""

    date: str
    nominal: float
    spreads: dict[str, Spread]

    def spread(self, cls: str, task: str | None = None) -> Spread | None:
        """The class's spread for ``task`` (``training`` / ``inference``): the task's own
        (``"<class>:<task>"``) when calibrated, else the class's; ``exact`` is (0, 0) by
        definition; None when uncalibrated."""
        if cls == "exact":
            return Spread(0.0, 0.0, 0, "exact by construction (shapes × dtype bytes)")
        if task is not None and f"{cls}:{task}" in self.spreads:
            return self.spreads[f"{cls}:{task}"]
        return self.spreads.get(cls)


def conformal_bounds(residuals: list[float], nominal: float) -> tuple[float, float] | None:
    """Split-conformal end points of ``residuals`` at level ``nominal`` (module docstring), or
    None when there are too few (k = 0: fewer than 2 / (1 − nominal) − 1 residuals).

    >>> conformal_bounds([float(i) for i in range(19)], 0.9)
    (0.0, 18.0)
    """
    n = len(residuals)
    k = math.floor(round((n + 1) * (1 - nominal) / 2, 9))   # 20 × 0.05 is 0.99999… in floats
    if k < 1:
        return None
    r = sorted(residuals)
    return r[k - 1], r[n - k]


@cache
def load_calibration() -> Calibration | None:
    """``data/intervals.json`` (written by ``benchmarks/calibrate_intervals.py``), or None when
    the package ships none."""
    try:
        text = resources.files("gpusizer.data").joinpath("intervals.json").read_text("utf-8")
    except FileNotFoundError:
        return None
    raw = json.loads(text)
    spreads = {name: Spread(float(s["low"]), float(s["high"]), int(s["n"]), str(s["source"]))
               for name, s in raw["spreads"].items()}
    return Calibration(str(raw["date"]), float(raw["nominal"]), spreads)


def figure_interval(figure: int | None, class_bytes: dict[str, int], kind: FigureKind,
                    calibration: Calibration | None = None, *,
                    task: str | None = None) -> tuple[int, int] | None:
    """The interval of one phase figure.

    Args:
        figure: the figure (bytes), or None when unknown.
        class_bytes: bytes per spread class live in that phase (every item counted, whatever
            ``kind``; the classes ``kind`` does not count are ignored).
        kind: which figure it is (:data:`FigureKind`).
        calibration: the spreads (default: the shipped one).
        task: ``training`` or ``inference``: a class calibrated per task uses that task's.

    Returns:
        ``(low, high)`` in bytes, or None when the figure is unknown or a class it counts with
        non-zero bytes is uncalibrated.
    """
    cal = calibration if calibration is not None else load_calibration()
    if figure is None or cal is None:
        return None
    low = high = 0.0
    for cls, size in class_bytes.items():
        if cls not in _COUNTED[kind] or not size:
            continue
        spread = cal.spread(cls, task)
        if spread is None:
            return None
        low += spread.low * size
        high += spread.high * size
    return max(0, math.floor(figure + low)), math.ceil(figure + high)
