"""Speed and host memory of ``gpusizer simulate`` (issue 4): a Llama-3.1-8B training step at
2048 tokens and a Llama-3.1-70B-shaped one at 4096 tokens, each in its own process limited to 2
CPU threads; prints wall time, peak RSS, versions and the phase table (simulated vs estimate).

Goal: 70B-shaped step under 60 s and under 4 GiB RSS.

    PYTHONPATH=src python benchmarks/simulate_speed.py [--models-dir ../shared/data/models]

Not a timed test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CASES = [
    ("Llama-3.1-8B full bf16", "meta-llama--Meta-Llama-3.1-8B", 2048, "full", "bf16"),
    ("Llama-3.1-70B-shaped full bf16", "meta-llama--Meta-Llama-3.1-70B", 4096, "full", "bf16"),
    ("Llama-3.1-8B QLoRA nf4", "meta-llama--Meta-Llama-3.1-8B", 2048, "qlora", "nf4"),
]
"""(label, config folder, tokens, task, weights): one optimizer step of microbatch 1, AdamW
foreach, no checkpointing, on an H100 SXM's rules."""

_CHILD = r"""
import json, resource, sys, time
import torch
torch.set_num_threads(2)
from gpusizer.sheet import parse_sheet
from gpusizer.pipeline import run_simulate
from gpusizer.catalog.cards import require_card
sheet = parse_sheet({"model": {"path": sys.argv[1]}, "task": sys.argv[3], "weights": sys.argv[4],
                     "training": {"sequence_length": int(sys.argv[2]), "microbatch": 1}})
t0 = time.perf_counter()
r = run_simulate(sheet, card=require_card("H100 SXM"))
wall = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
print(json.dumps({"seconds": wall, "simulation_seconds": r.seconds, "rss_bytes": rss,
                  "versions": r.versions, "tracked_peak_bytes": r.tracked_peak_bytes,
                  "phases": r.comparison["phases"]}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parents[1]
    ap.add_argument("--models-dir", type=Path, default=here.parent / "shared" / "data" / "models")
    args = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS="2", MKL_NUM_THREADS="2", HF_HUB_OFFLINE="1")
    env["PYTHONPATH"] = str(here / "src") + os.pathsep + env.get("PYTHONPATH", "")
    gib = 2 ** 30
    print("| model | phase | simulated peak (GiB) | estimate peak (GiB) | difference (GiB) | "
          "seconds | peak RSS (GiB) |")
    print("|---|---|---|---|---|---|---|")
    versions = None
    for label, folder, tokens, task, weights in CASES:
        path = args.models_dir / folder
        cmd = ["taskset", "-c", "0,1"] if _has_taskset() else []
        proc = subprocess.run(cmd + [sys.executable, "-c", _CHILD, str(path), str(tokens), task,
                                     weights],
                              capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            print(f"| {label} | failed: {proc.stderr.strip().splitlines()[-1]} |")
            continue
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        versions = res["versions"]
        fmt = lambda b: "unknown" if b is None else f"{b / gib:.2f}"  # noqa: E731
        for i, p in enumerate(res["phases"]):
            secs = f"{res['seconds']:.1f}" if i == 0 else ""
            rss = f"{res['rss_bytes'] / gib:.2f}" if i == 0 else ""
            print(f"| {label} ({tokens} tokens) | {p['phase']} | {fmt(p['simulated_peak_bytes'])} "
                  f"| {fmt(p['estimate_peak_bytes'])} | {fmt(p['difference_bytes'])} | {secs} "
                  f"| {rss} |")
    print(f"\nversions: {versions}; python {sys.version.split()[0]}; 2 CPU threads"
          + (" pinned to cores 0,1" if _has_taskset() else ""))


def _has_taskset() -> bool:
    from shutil import which
    return which("taskset") is not None


if __name__ == "__main__":
    main()
