"""Two ranks through torchrun with gloo on the CPU: each rank records its own counters and raw
notes; the evidence records the placement."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gpusizer.measure.raw_notes import read_raw_notes
from tests.conftest import REPO_ROOT

from .conftest import write_sheet


def test_two_ranks_gloo_ddp_lora(tmp_path):
    body = {"task": "lora", "placement": {"gpus": 2, "strategy": "ddp"},
            "training": {"sequence_length": 96, "microbatch": 1, "lora": {"rank": 4}}}
    sheet = write_sheet(tmp_path, body)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc_per_node", "2", "-m", "gpusizer.cli", "measure", str(sheet),
                           "--random-weights", "--device", "cpu", "--out", str(out)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    (evidence,) = out.glob("*.json")
    doc = json.loads(evidence.read_text())
    assert doc["placement"]["strategy"] == "ddp" and doc["placement"]["world_size"] == 2
    assert doc["placement"]["backend"] == "gloo"
    assert [r["rank"] for r in doc["placement"]["ranks"]] == [0, 1]
    (limit,) = doc["rungs"]  # 96 tokens, microbatch 1: the limit is the short rung
    assert limit["result"] == "passed"
    assert [r["result"] for r in limit["ranks"]] == ["passed", "passed"]
    by_rank = {0: [], 1: []}
    for ph in limit["phases"]:
        by_rank[ph["rank"]].append(ph["name"])
    assert by_rank[0] == by_rank[1] == ["load", "forward", "backward", "optimizer_step",
                                        "validation"]
    assert {(p["rung"], p["rank"]) for p in doc["peaks"]} == {("limit", 0), ("limit", 1)}
    for rank, name in enumerate(doc["raw_notes"]):
        events = read_raw_notes(out / name)
        assert {e["rank"] for e in events} == {rank}
        assert events[0]["world_size"] == 2
