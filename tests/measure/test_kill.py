"""Raw notes survive a kill (R14): SIGKILL the measure process mid-run, every line written
before is intact and parses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tests.conftest import REPO_ROOT

from .conftest import INFERENCE, write_sheet


def test_sigkill_mid_decode_loses_no_note(tmp_path):
    sheet = write_sheet(tmp_path, INFERENCE)
    out = tmp_path / "out"
    env = {**os.environ, "GPUSIZER_MEASURE_INJECT": "hang@decode"}
    proc = subprocess.Popen([sys.executable, "-m", "gpusizer.cli", "measure", str(sheet),
                             "--random-weights", "--device", "cpu", "--out", str(out)],
                            cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    notes = None
    try:
        while time.monotonic() < deadline:
            found = list(out.glob("*.jsonl")) if out.is_dir() else []
            if found and "injected_hang" in found[0].read_text():
                notes = found[0]
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        assert notes is not None, "the run never reached decode"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    text = notes.read_text()
    assert text.endswith("\n")
    events = [json.loads(line) for line in text.splitlines()]
    assert [e["event"] for e in events] == [
        "run_start", "rung_start", "phase_start", "phase_end", "phase_start", "phase_end",
        "phase_start", "injected_hang"]
    assert [e.get("phase") for e in events if e["event"] == "phase_end"] == ["load", "prefill"]
    prefill = events[5]["counters"]
    assert prefill["cpu_live_tensor_peak_bytes"] > events[3]["counters"][
        "cpu_live_tensor_peak_bytes"]
    assert list(out.glob("*.json")) == []  # no summary: the run did not finish
