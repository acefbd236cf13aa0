"""Measure Llama-3.1-8B and Qwen2.5-7B on one GPU with random weights, and keep the evidence.

What it runs (``benchmarks/sheets/``, configs in ``benchmarks/configs/``, bf16, random weights):
each model at two inference lengths (4096 + 256 tokens × 8 sequences; 32768 + 64 tokens × 1)
and LoRA training (rank 16, 2 × 2048 tokens, adapter export) — every sheet through the whole
ladder (short, typical, limit) with ``gpusizer measure``, then ``gpusizer estimate --card`` on
the same sheet for the comparison.

Where it writes: ``benchmarks/evidence/<UTC date>-<GPU>/<sheet>/`` (the evidence ``*.json``, the
raw notes ``*.jsonl``, what ``measure`` printed, the estimate JSON) and ``comparison.md`` beside
them; with ``--out DIR`` also ``DIR/gpu-evidence.tar.gz`` (a device run's ``$OUT``).

Running it on the project's GPU machine (torch 2.11, transformers 5.17, no pydantic, no package
registry): carry pydantic's wheels for Python 3.12 in ``.whl/`` (ignored by git), e.g. here::

    echo /.whl/ >> .git/info/exclude
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \\
        --implementation cp --platform manylinux_2_17_x86_64 -d .whl \\
        pydantic==2.13.4 pydantic-core==2.46.4 annotated-types==0.7.0 typing-inspection==0.4.2

(versions: those pydantic needs; check ``Requires-Dist`` of each wheel), then run
``python3 benchmarks/gpu_measure.py --out $OUT --card H200`` with ``.whl`` carried. The script
installs the wheels into ``/tmp/site`` when pydantic is missing.

``--smoke`` runs the same plumbing on the CPU with the tests' tiny config and tiny dimensions
(no GPU figure is produced: it checks the script, not a card).

Status: prepared; not yet run on a GPU (no GPU has been lent to this project's measure work).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHEETS = ROOT / "benchmarks" / "sheets"
WHEELS = ROOT / ".whl"
SITE = Path("/tmp/site")
TINY = ROOT / "tests" / "measure" / "data" / "tiny-llama-3.1"


def _env() -> dict[str, str]:
    """PYTHONPATH: this checkout's src (and carried wheels when pydantic is missing)."""
    paths = [str(ROOT / "src")]
    try:
        import pydantic  # noqa: F401
    except ImportError:
        wheels = sorted(WHEELS.glob("*.whl"))
        if not wheels:
            sys.exit("pydantic is missing and no wheels were carried in .whl/ (see the docstring)")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                        "--no-compile", "--no-cache-dir", "--upgrade", "--target", str(SITE),
                        *map(str, wheels)], check=True)
        paths.append(str(SITE))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths + [os.environ.get("PYTHONPATH", "")]),
            "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1"}


def _cli(env: dict, *args: str, log: Path | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "gpusizer.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if log is not None:
        log.write_text(proc.stdout + ("\n[stderr]\n" + proc.stderr if proc.stderr else ""))
    return proc


def _smoke_sheets(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    bodies = {
        "tiny-serve": "task: inference\ninference: {prompt_tokens: 160, new_tokens: 8, "
                      "concurrency: 2}\n",
        "tiny-lora": "task: lora\ntraining: {sequence_length: 140, microbatch: 2, export: "
                     "adapter, lora: {rank: 4}}\n"}
    out = []
    for name, body in bodies.items():
        p = folder / f"{name}.yaml"
        p.write_text(f"model: {{path: {TINY}}}\nweights: bf16\n{body}")
        out.append(p)
    return out


def _gib(n: int | None) -> str:
    return "—" if n is None else f"{n / 2**30:.2f}"


def _compare(name: str, evidence: dict, estimate: dict | None) -> list[str]:
    """Markdown rows: per phase of the limit rung, measured counters beside the estimate."""
    rows = []
    limit = next((r for r in evidence["rungs"] if r["name"] == "limit"), evidence["rungs"][-1])
    est_phases = {p["name"]: p for p in (estimate or {}).get("memory", {}).get("phases", [])}
    for ph in limit["phases"]:
        e = est_phases.get(ph["name"], {})
        rows.append(f"| {name} | {limit['name']} {limit['result']} | {ph['name']} | "
                    f"{_gib(ph.get('max_memory_allocated_bytes'))} | "
                    f"{_gib(ph.get('max_memory_reserved_bytes'))} | "
                    f"{_gib(ph.get('non_torch_bytes'))} | {_gib(ph.get('nvml_used_bytes'))} | "
                    f"{_gib(e.get('peak_bytes'))} | {_gib(e.get('device_peak_bytes'))} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, help="also write gpu-evidence.tar.gz here ($OUT)")
    ap.add_argument("--card", default="H200", help="card name for `estimate --card`")
    ap.add_argument("--only", nargs="*", help="sheet stems to run (default: all)")
    ap.add_argument("--smoke", action="store_true", help="tiny config on the CPU (plumbing only)")
    ap.add_argument("--dest", type=Path, help="evidence folder (default: benchmarks/evidence/…)")
    args = ap.parse_args()
    env = _env()
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    if args.smoke:
        dest = args.dest or Path("/tmp/gpusizer-smoke") / stamp
        sheets = _smoke_sheets(dest / "sheets")
        device = ["--device", "cpu"]
    else:
        probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda."
                                "get_device_name(0).replace(' ', '-'))"],
                               capture_output=True, text=True, env=env)
        if probe.returncode != 0:
            sys.exit("no CUDA device: run with --smoke for the CPU plumbing check\n"
                     + probe.stderr[-500:])
        dest = args.dest or ROOT / "benchmarks" / "evidence" / f"{stamp}-{probe.stdout.strip()}"
        sheets = sorted(SHEETS.glob("*.yaml"))
        device = []
    if args.only:
        sheets = [s for s in sheets if s.stem in args.only]
    dest.mkdir(parents=True, exist_ok=True)
    table = ["| sheet | rung | phase | max_memory_allocated GiB | max_memory_reserved GiB | "
             "non-PyTorch GiB | NVML process GiB | estimate peak_bytes GiB | "
             "estimate device_peak_bytes GiB |", "|" + "---|" * 9]
    for sheet in sheets:
        folder = dest / sheet.stem
        folder.mkdir(exist_ok=True)
        t0 = time.perf_counter()
        proc = _cli(env, "measure", str(sheet), "--random-weights", "--out", str(folder), *device,
                    log=folder / "measure.txt")
        print(f"{sheet.stem}: measure exit {proc.returncode} in {time.perf_counter() - t0:.1f} s",
              flush=True)
        if proc.returncode == 2 or not list(folder.glob("measure-*.json")):
            print(proc.stderr[-2000:], flush=True)
            continue
        evidence = json.loads(max(folder.glob("measure-*.json")).read_text())
        estimate = None
        if not args.smoke:
            est = _cli(env, "estimate", str(sheet), "--card", args.card, "--format", "json")
            if est.returncode == 0:
                (folder / "estimate.json").write_text(est.stdout)
                estimate = json.loads(est.stdout)
            else:
                (folder / "estimate.txt").write_text(est.stderr)
        table += _compare(sheet.stem, evidence, estimate)
    (dest / "comparison.md").write_text(
        f"# Measured (limit rung) vs estimate — {dest.name}\n\n"
        "Each counter in its own column, never added; estimate `peak_bytes` predicts "
        "`max_memory_allocated`, `device_peak_bytes` what NVML shows for the process.\n\n"
        + "\n".join(table) + "\n")
    print((dest / "comparison.md").read_text())
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        with tarfile.open(args.out / "gpu-evidence.tar.gz", "w:gz") as tar:
            tar.add(dest, arcname=dest.name)


if __name__ == "__main__":
    main()
