"""Shared fixtures. ``../shared`` (beside the checkout) holds the real configs, truths, catalogs
and public validation cases; tests that read it skip, saying so, when it is absent (a user's
clone)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Tests never reach the Hub (CI sets this too, in .ci/run).
os.environ["HF_HUB_OFFLINE"] = "1"

REPO_ROOT = Path(__file__).resolve().parents[1]
# ``GPUSIZER_SHARED`` points elsewhere when the checkout is not beside ../shared (a worktree).
SHARED = Path(os.environ.get("GPUSIZER_SHARED", REPO_ROOT.parent / "shared"))
EXAMPLES = REPO_ROOT / "examples"


@pytest.fixture
def shared_dir() -> Path:
    """``<repo>/../shared``, or skip with the reason."""
    if not SHARED.is_dir():
        pytest.skip(f"../shared not found at {SHARED}: real configs, truths and validation cases "
                    "live there (CI has it beside the checkout)")
    return SHARED


def run_cli(*args: str, check: int | None = 0) -> subprocess.CompletedProcess:
    """Run ``python -m gpusizer.cli ARGS`` as a whole process (what a user runs)."""
    proc = subprocess.run([sys.executable, "-m", "gpusizer.cli", *args], capture_output=True,
                          text=True, cwd=REPO_ROOT, timeout=120)
    if check is not None:
        assert proc.returncode == check, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    return proc


def cli_json(*args: str) -> dict:
    """Run a command with ``--format json`` and parse its output."""
    return json.loads(run_cli(*args, "--format", "json").stdout)


def load_benchmark(name: str):
    """Import ``benchmarks/<name>.py`` as a module (benchmarks/ is not a package), registered
    in ``sys.modules`` so its dataclasses resolve."""
    import importlib.util

    if f"benchmarks_{name}" in sys.modules:
        return sys.modules[f"benchmarks_{name}"]
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}",
                                                  REPO_ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
