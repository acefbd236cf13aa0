"""``gpusizer measure`` as a user runs it: exit codes, the printed summary, the missing extra,
and the evidence read back by ``plan``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from gpusizer.cli import exit_code_for
from gpusizer.errors import MeasureUnsupportedError, SheetError
from gpusizer.measure import run_measurement
from gpusizer.measure.faults import parse_injection
from gpusizer.sheet import load_sheet

from tests.conftest import REPO_ROOT, run_cli

from .conftest import INFERENCE, write_sheet


def test_measure_then_plan_reads_the_evidence(tmp_path):
    sheet = write_sheet(tmp_path, {**INFERENCE, "inference": {"prompt_tokens": 100,
                                                              "new_tokens": 4}})
    out = tmp_path / "out"
    proc = run_cli("measure", str(sheet), "--random-weights", "--device", "cpu", "--out",
                   str(out), "--provider", "acme", "--image", "acme/pytorch:2.5")
    assert "## rung limit: passed" in proc.stdout
    assert "executed: prompt_tokens=100, new_tokens=4, concurrency=1" in proc.stdout
    assert "no CUDA figure is invented" in proc.stdout
    (ev,) = out.glob("*.json")
    doc = json.loads(ev.read_text())
    assert doc["scope"]["provider"] == "acme"
    assert doc["scope"]["environment"]["image"] == "acme/pytorch:2.5"
    planned = json.loads(run_cli("plan", str(sheet), "--evidence", str(out), "--format",
                                 "json").stdout)
    ignored = {e["file"]: e["reason"] for e in planned["evidence"]["ignored"]}
    assert "in scope of no offer" in ignored[str(ev)]  # a CPU run is on no card


def test_oom_exits_1_and_prints_the_alternatives_not_applied(tmp_path):
    sheet = write_sheet(tmp_path, {**INFERENCE, "inference": {"prompt_tokens": 100,
                                                              "new_tokens": 4,
                                                              "concurrency": 4}})
    env = {**os.environ, "GPUSIZER_MEASURE_INJECT": "oom@prefill"}
    proc = subprocess.run([sys.executable, "-m", "gpusizer.cli", "measure", str(sheet),
                           "--random-weights", "--device", "cpu", "--out", str(tmp_path / "o")],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "## rung short: oom in phase prefill" in proc.stdout
    assert "- points to: context (prompt tokens), concurrency" in proc.stdout
    assert "one change at a time (not applied" in proc.stdout
    assert "  - inference.concurrency: 4 → 2" in proc.stdout


@pytest.mark.parametrize("body, random_weights, message", [
    ({"model": {"parameters": 7_000_000_000}, "weights": "bf16"}, True,
     "model.parameters: a bare parameter count has no architecture to run"),
    ({}, False, "no *.safetensors in"),
    ({"attention": "flash"}, True, "attention: flash attention needs a CUDA device"),
    ({"weights": "fp8"}, True, "weights: weights fp8 need quantization kernels"),
    ({"inference": {"prompt_tokens": 64, "new_tokens": 2, "engine": "vllm"}}, True,
     "inference.engine: the harness runs transformers"),
    ({"task": "lora", "inference": None, "training": {"sequence_length": 64, "microbatch": 1},
      "placement": {"gpus": 2, "strategy": "fsdp"}}, True,
     "placement.strategy: placement fsdp is not implemented by the harness"),
    ({"placement": {"gpus": 2, "strategy": "ddp"}}, True,
     "placement.gpus: the sheet places the workload on 2 GPU(s) but 1 process(es) run"),
])
def test_what_the_harness_cannot_run_is_refused_before_running(tmp_path, body, random_weights,
                                                                message):
    sheet = load_sheet(write_sheet(tmp_path, {**INFERENCE, **body}))
    with pytest.raises(MeasureUnsupportedError, match=re.escape(message)) as exc:
        run_measurement(sheet, tmp_path / "o", random_weights=random_weights, device="cpu")
    assert exit_code_for(exc.value) == 2
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())


def test_missing_extra_says_what_to_install(tmp_path):
    sheet = write_sheet(tmp_path, INFERENCE)
    code = ("import sys; sys.modules['torch'] = None; from gpusizer.cli import main; "
            f"sys.argv = ['gpusizer', 'measure', {str(sheet)!r}, '--out', 'x']; main()")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1
    assert ('the measure extra is not installed (torch is missing): pip install '
            '"gpusizer[measure]" (from a checkout: pip install -c constraints.txt -e '
            '".[measure]")') in " ".join(proc.stderr.split())


def test_a_malformed_injection_is_invalid_input():
    with pytest.raises(SheetError, match="GPUSIZER_MEASURE_INJECT: expected KIND@WHERE"):
        parse_injection("explode")
    assert str(parse_injection("oom@decode")) == "oom@decode"
