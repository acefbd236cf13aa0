"""Whole-process time of ``gpusizer plan --format json -o FILE`` on a 10 000-row SkyPilot catalog
(goal: under 1.5 s on 2 cores; issue 12, "Speed").

The catalog is generated from the three SkyPilot ``vms.csv`` copies in the shared data
(``shared/data/catalogs/skypilot-catalog_v8_{hyperstack,jarvislabs,vast}_vms.csv``, 110 rows):
their rows are repeated, each copy with its own region (``<Region>-<copy>``) so every offer id is
unique, until the file holds 10 000 rows, under vast's header order. Accelerator names, GpuInfo
cells and prices are the files' own, so the card names stay the ~40 distinct ones a real
catalog has.

Run: ``python benchmarks/plan_speed.py [N] [--rows R] [--sheet SHEET]``; prints the median and
best wall time of N runs (default 3), the median CPU time and the ratio to the goal. Not a test:
times depend on the machine.
"""

from __future__ import annotations

import argparse
import csv
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "catalogs"
SOURCES = ("skypilot-catalog_v8_hyperstack_vms.csv", "skypilot-catalog_v8_jarvislabs_vms.csv",
           "skypilot-catalog_v8_vast_vms.csv")
HEADER = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "GpuInfo",
          "Price", "SpotPrice", "Region")
GOAL_S = 1.5


def source_rows(shared: Path = SHARED) -> list[dict[str, str]]:
    """Every row of the shared vms.csv copies, keyed by header name."""
    rows: list[dict[str, str]] = []
    for name in SOURCES:
        with open(shared / name, newline="", encoding="utf-8") as fh:
            rows += list(csv.DictReader(fh))
    return rows


def write_catalog(path: Path, rows: int, shared: Path = SHARED, *,
                  price_step: float = 0.0) -> None:
    """Write a ``rows``-row SkyPilot vms.csv at ``path`` from the shared copies (see above);
    ``price_step`` > 0 adds ``price_step × row`` USD/h to each row's price (every row its own
    price: benchmarks/campaign_scale.py's worst case)."""
    base = source_rows(shared)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(HEADER)
        for i in range(rows):
            row = dict(base[i % len(base)])
            row["Region"] = f"{row.get('Region') or 'region'}-{i // len(base)}"
            if price_step and row.get("Price"):
                row["Price"] = f"{float(row['Price']) + price_step * i:.4f}"
            out.writerow([row.get(k) or "" for k in HEADER])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=3)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--sheet", default="examples/llama-3.1-8b-serving.yaml")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        catalog = Path(tmp) / "bench_vms.csv"
        write_catalog(catalog, args.rows)
        out = Path(tmp) / "plan.json"
        cmd = [sys.executable, "-m", "gpusizer.cli", "plan", args.sheet, "--catalog",
               str(catalog), "--format", "json", "-o", str(out), "--today", "2026-12-01"]
        times, cpu = [], []
        for _ in range(args.n):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            times.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        size = out.stat().st_size
    med = statistics.median(times)
    print(f"plan --format json on {args.rows} SkyPilot rows ({args.sheet}): median {med:.2f} s, "
          f"best {min(times):.2f} s over {args.n} runs (CPU user+sys median "
          f"{statistics.median(cpu):.2f} s: other load on the machine shows as wall > CPU); "
          f"JSON {size / 2**20:.1f} MiB; "
          f"{med / GOAL_S:.2f} × the {GOAL_S} s goal")


if __name__ == "__main__":
    main()
