"""Calibrate the memory intervals on the public cases, and measure their coverage.

    python benchmarks/calibrate_intervals.py          # print spreads, coverage and width
    python benchmarks/calibrate_intervals.py --write  # also rewrite src/gpusizer/data/intervals.json

Every case of ``examples/validation/cases.yaml`` with a memory counter runs through ``estimate``
on its card. Residuals, per spread class (``gpusizer.memory.intervals``):

- ``activations`` (training) / ``working`` (inference): r = (allocated observed − peak_bytes) ÷
  the class's bytes at the peak phase (``max_memory_allocated`` cases on unsharded placements);
- ``sharded``: the same on ZeRO / FSDP placements over several GPUs, ÷ the bytes the sharding
  divides (parameters, gradients, states: ``memory.intervals.SHARDED_ITEMS``);
- ``fragmentation``: r = ((reserved − allocated) observed − predicted) ÷ predicted fragmentation
  (cases with both counters);
- ``non_torch``: r = ((nvml − reserved) observed − predicted) ÷ predicted non-PyTorch bytes;
- ``above_allocated`` (both of the last two at once): r = ((nvml − allocated) observed −
  (device_peak − peak) predicted) ÷ the predicted difference; a class with too few residuals of
  its own for the nominal level borrows it, per task (fragmentation and non_torch borrow
  above_allocated of their task, which observes exactly their sum: ``fragmentation:training``). A class still without enough residuals (19 at the nominal
  90 %) stays uncalibrated: the intervals of the figures it enters are null, never borrowed from
  another kind of memory.

Coverage is leave-one-out: each case's intervals come from spreads calibrated without it; the
board prints, per figure, the share of observations inside their interval and the mean width
relative to the observation. Nothing is tuned: the spreads are order statistics (the module
docstring of ``memory.intervals``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "src"))

from accuracy import MANIFEST, load_manifest, versions  # noqa: E402

from gpusizer.memory.intervals import (Calibration, Spread, conformal_bounds,  # noqa: E402
                                       figure_interval)

NOMINAL = 0.9
OUT = ROOT / "src" / "gpusizer" / "data" / "intervals.json"
MEMORY_COUNTERS = ("max_memory_allocated", "max_memory_reserved", "nvml")


@dataclass
class CaseFigures:
    """One case's figures and what its counters observed (bytes)."""

    case: str
    training: bool
    peak: int
    device: int
    reserved: int | None
    peak_classes: dict[str, int]
    device_classes: dict[str, int]
    observed: dict[str, int] = field(default_factory=dict)
    sharded: bool = False

    @property
    def working_class(self) -> str:
        return "activations" if self.training else "working"


def collect() -> tuple[list[CaseFigures], list[tuple[str, str]]]:
    """Run every case with a memory counter; returns the figures and (case, why) refusals."""
    from gpusizer import api
    from gpusizer.errors import GpusizerError

    out, skipped = [], []
    for case in load_manifest():
        if case.get("unexpressible"):
            continue
        obs = {o["counter"]: int(o["value"]) for o in case["observations"]
               if o["counter"] in MEMORY_COUNTERS}
        if not obs:
            continue
        try:
            est = api.estimate(MANIFEST.parent / case["sheet"], card=case.get("card")).result.estimate
        except GpusizerError as exc:
            skipped.append((case["id"], f"refused: {exc}"))
            continue
        if est.pool is not None or est.peak_bytes is None or est.device_peak_bytes is None:
            skipped.append((case["id"], "engine pool or unknown peak: no interval to calibrate"))
            continue
        peak_phase = max(est.phases, key=lambda p: p.peak_bytes)
        device_phase = max(est.phases, key=lambda p: p.device_peak_bytes)
        out.append(CaseFigures(case["id"], est.training is not None, est.peak_bytes,
                               est.device_peak_bytes, getattr(est, "reserved_peak_bytes", None),
                               dict(peak_phase.class_bytes), dict(device_phase.class_bytes), obs,
                               "sharded" in peak_phase.class_bytes))
    return out, skipped


def _frag(c: CaseFigures) -> int:
    return c.device_classes.get("fragmentation", 0)


def _non_torch(c: CaseFigures) -> int:
    return c.device_classes.get("non_torch", 0)


def residuals(cases: list[CaseFigures]) -> dict[str, list[float]]:
    """Residuals per class (module docstring)."""
    res: dict[str, list[float]] = {k: [] for k in ("activations", "working", "sharded",
                                                   "fragmentation", "non_torch",
                                                   "above_allocated:training",
                                                   "above_allocated:inference")}
    for c in cases:
        alloc, reserved, nvml = (c.observed.get(k) for k in MEMORY_COUNTERS)
        work = c.peak_classes.get(c.working_class, 0)
        shard = c.peak_classes.get("sharded", 0)
        if alloc is not None and c.sharded and shard > 0:
            # a sharded placement: the residual is read on what the sharding divides (its
            # working memory carries the unsharded cases' spread as well, in the interval)
            res["sharded"].append((alloc - c.peak) / shard)
        elif alloc is not None and work > 0:
            res[c.working_class].append((alloc - c.peak) / work)
        if alloc is not None and reserved is not None and _frag(c) > 0:
            res["fragmentation"].append(((reserved - alloc) - _frag(c)) / _frag(c))
        if reserved is not None and nvml is not None and _non_torch(c) > 0:
            res["non_torch"].append(((nvml - reserved) - _non_torch(c)) / _non_torch(c))
        above = c.device - c.peak
        if alloc is not None and nvml is not None and above > 0:
            task = "training" if c.training else "inference"
            res[f"above_allocated:{task}"].append(((nvml - alloc) - above) / above)
    return res


def calibrate(cases: list[CaseFigures]) -> tuple[Calibration, dict[str, int]]:
    """Spreads from ``cases`` (borrowing as the module docstring says); and n per residual set."""
    res = residuals(cases)
    own: dict[str, Spread] = {}
    for name, rs in res.items():
        bounds = conformal_bounds(rs, NOMINAL)
        if bounds is not None:
            own[name] = Spread(bounds[0], bounds[1], len(rs), _group(name))
    # fragmentation and non-PyTorch memory together are exactly what nvml − allocated observes,
    # per task: training's activations fragment the allocator as inference's KV cache does not
    borrow = {f"{c}:{t}": f"above_allocated:{t}" for c in ("fragmentation", "non_torch")
              for t in ("training", "inference")}
    spreads = {}
    for name in ("activations", "working", "sharded", "fragmentation", "non_torch", *borrow):
        if name in own:
            spreads[name] = own[name]
        elif borrow.get(name) in own:
            lender = own[borrow[name]]
            own_n = len(res.get(name.split(":")[0], ()))
            spreads[name] = Spread(lender.low, lender.high, 0,
                                   f"borrowed from {borrow[name]} ({own_n} residuals of its "
                                   "own, fewer than the nominal level needs)")
    return (Calibration(dt.date.today().isoformat(), NOMINAL, spreads),
            {k: len(v) for k, v in res.items()})


def _group(name: str) -> str:
    return {"activations": "training · max_memory_allocated",
            "working": "inference · max_memory_allocated",
            "sharded": "training under ZeRO / FSDP over several GPUs · max_memory_allocated",
            "fragmentation": "max_memory_reserved − max_memory_allocated",
            "non_torch": "nvml − max_memory_reserved",
            "above_allocated:training": "training · nvml − max_memory_allocated",
            "above_allocated:inference": "inference · nvml − max_memory_allocated"}[name]


def _interval(c: CaseFigures, counter: str, cal: Calibration) -> tuple[int, int] | None:
    task = "training" if c.training else "inference"
    if counter == "max_memory_allocated":
        return figure_interval(c.peak, c.peak_classes, "allocated", cal, task=task)
    if counter == "nvml":
        return figure_interval(c.device, c.device_classes, "device", cal, task=task)
    if c.reserved is None:
        return None
    return figure_interval(c.reserved, c.device_classes, "reserved", cal, task=task)


def coverage(cases: list[CaseFigures]) -> dict[str, dict]:
    """Leave-one-out coverage and mean relative width per counter."""
    board: dict[str, dict] = {}
    for counter in MEMORY_COUNTERS:
        inside, widths, n, missing = 0, [], 0, 0
        for i, c in enumerate(cases):
            if counter not in c.observed:
                continue
            cal, _ = calibrate(cases[:i] + cases[i + 1:])
            iv = _interval(c, counter, cal)
            if iv is None:
                missing += 1
                continue
            n += 1
            obs = c.observed[counter]
            inside += iv[0] <= obs <= iv[1]
            widths.append((iv[1] - iv[0]) / obs)
        board[counter] = {"n": n, "inside": inside,
                          "coverage": None if not n else round(inside / n, 4),
                          "mean_width_pct": None if not widths
                          else round(100 * statistics.fmean(widths), 2),
                          "no_interval": missing}
    return board


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite " + str(OUT.relative_to(ROOT)))
    args = ap.parse_args(argv)
    cases, skipped = collect()
    cal, counts = calibrate(cases)
    board = coverage(cases)
    print(f"{len(cases)} cases with memory counters ({len(skipped)} skipped); nominal "
          f"{NOMINAL:.0%}")
    print("| class | low | high | n | source |\n|---|---|---|---|---|")
    for name, s in cal.spreads.items():
        print(f"| {name} | {s.low:+.3f} | {s.high:+.3f} | {s.n} | {s.source} |")
    print("residuals per set:", counts)
    print("| counter | n | inside | coverage (leave-one-out) | mean width (% of observed) |")
    print("|---|---|---|---|---|")
    for counter, b in board.items():
        cov = "—" if b["coverage"] is None else f"{b['coverage']:.1%}"
        width = "—" if b["mean_width_pct"] is None else f"{b['mean_width_pct']:.1f} %"
        print(f"| {counter} | {b['n']} | {b['inside']} | {cov} | {width} |"
              + (f" ({b['no_interval']} without interval)" if b["no_interval"] else ""))
    for cid, why in skipped:
        print(f"skipped {cid}: {why}")
    if args.write:
        doc = {"date": cal.date, "nominal": NOMINAL, "versions": versions(),
               "written_by": "benchmarks/calibrate_intervals.py",
               "cases": "examples/validation/cases.yaml",
               "spreads": {k: {"low": round(s.low, 6), "high": round(s.high, 6), "n": s.n,
                               "source": s.source} for k, s in cal.spreads.items()},
               "coverage_leave_one_out": board}
        OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print("wrote", OUT.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
