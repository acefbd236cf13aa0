"""The CLI run in process (typer's CliRunner) and the checks every run must pass."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from typer.testing import CliRunner

from gpusizer.cli import app

TODAY = "2026-11-30"
MAX_ERROR_CHARS = 300
@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


def invoke(args: list[str]) -> Run:
    """``gpusizer ARGS`` in process; exceptions reach the caller as a failed check."""
    result = CliRunner().invoke(app, args, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"exception escaped the CLI: {result.exception!r}\n"
                             f"stderr: {result.stderr}") from result.exception
    return Run(result.exit_code, result.stdout, result.stderr)


def _no_constant(name: str) -> Any:
    raise AssertionError(f"non-finite number {name} in the JSON output")


def finite_json(text: str) -> Any:
    """The JSON, failing on NaN / Infinity tokens and on any non-finite float."""
    data = json.loads(text, parse_constant=_no_constant)

    def walk(v: Any) -> None:
        if isinstance(v, float):
            assert math.isfinite(v), v
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(data)
    return data


def check_outcome(run: Run, names: tuple[str, ...] = ()) -> Any:
    """Exit 0 (and finite JSON on stdout), or exit 2 with one stderr line under 300 characters
    that names a field or a file (``names``: words one of which the line must hold).
    Returns the parsed JSON on success, None on exit 2."""
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout, run.stderr
    assert run.code in (0, 2), (run.code, run.stderr[-2000:])
    if run.code == 0:
        return finite_json(run.stdout)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    line = lines[0]
    assert len(line) < MAX_ERROR_CHARS, (len(line), line)
    assert line.startswith("error:"), line
    # names a field or a file: "error: <file or field>: …" carries a colon-separated subject
    assert ":" in line[len("error:"):], line
    if names:
        assert any(n in line for n in names), (names, line)
    return None
