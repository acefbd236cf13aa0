"""Whole-process time of ``gpusizer estimate`` on a local/registry config (goal: well under 0.5 s).

Prints the median and best of N runs, the bare interpreter start-up for reference, and the ratio
to the 0.5 s goal. Run: ``python benchmarks/estimate_startup.py [N]``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 0.5


def _time(cmd: list[str], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    base = _time([sys.executable, "-c", "pass"], n)
    cases = {
        "estimate llama-3.1-8b (registry)": ["estimate", "examples/llama-3.1-8b-serving.yaml"],
        "estimate llama-3.1-8b --card H100-SXM": ["estimate", "examples/llama-3.1-8b-serving.yaml",
                                                   "--card", "H100-SXM"],
        "plan llama-3.1-8b (seed catalog)": ["plan", "examples/llama-3.1-8b-serving.yaml"],
    }
    print(f"python start-up: median {statistics.median(base):.3f} s")
    for name, args in cases.items():
        t = _time([sys.executable, "-m", "gpusizer.cli", *args], n)
        med = statistics.median(t)
        print(f"{name}: median {med:.3f} s, best {min(t):.3f} s over {n} runs; "
              f"{med / GOAL_S:.2f} × the {GOAL_S} s goal")


if __name__ == "__main__":
    main()
