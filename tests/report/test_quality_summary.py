"""What the quality commands print, from the lock and the evidence they wrote."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from gpusizer.quality.criteria_lock import LockResult, lock_criteria
from gpusizer.report.quality_summary import (
    render_lm_eval_import_summary, render_lock_summary, render_quality_run_summary,
)
from gpusizer.sheet import load_sheet

from ..quality.test_lm_eval_import import campaign


def test_lock_summary_names_hash_reference_metric_and_corpus(tmp_path):
    path, lock = campaign(tmp_path)
    again = lock_criteria(load_sheet(path), lock_path=tmp_path / "sheet.quality-lock.json",
                          base_dir=tmp_path, now=dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc))
    assert again.created is False
    text = render_lock_summary(LockResult(lock, Path("/x/sheet.quality-lock.json"), True))
    assert text == (
        "locked: /x/sheet.quality-lock.json\n"
        f"  criteria_sha256 {lock.criteria_sha256} at {lock.locked_at}\n"
        "  reference bf16; metric lm_eval:hellaswag/acc_norm (higher is better); "
        "max_regression 0.02\n"
        f"  corpus reference.json: sha256 {lock.corpus.sha256}, {lock.corpus.size_bytes} B, "
        "10042 samples\n")
    assert render_lock_summary(again).startswith("already locked, unchanged: ")


def test_run_summary_in_percent_and_a_round_trip_decides_nothing():
    e = {"metric": "perplexity", "reference_format": "bf16", "reference_value": 12.3456789,
         "candidate_format": "int8-roundtrip", "candidate_value": 12.5, "regression": 0.0125,
         "max_regression": 0.02, "passed": True, "proxy_for": "int8"}
    assert render_quality_run_summary(e, Path("ev/q.json"), Path("ev/q.samples.jsonl")) == (
        "perplexity: reference bf16 12.3457, candidate int8-roundtrip 12.5; regression +1.250% "
        "vs max 2%: passed (a simulation of int8: it does not decide the criterion)\n"
        "wrote ev/q.json and ev/q.samples.jsonl\n")
    failed = {**e, "candidate_format": "nf4", "regression": 0.05, "passed": False,
              "proxy_for": None}
    assert "regression +5.000% vs max 2%: FAILED\nwrote" in render_quality_run_summary(
        failed, Path("a"), Path("b"))


def test_import_summary():
    doc = {"metric": "lm_eval:hellaswag/acc_norm", "reference_value": 0.6,
           "candidate_format": "nf4", "candidate_value": 0.594, "regression": 0.01,
           "passed": True}
    assert render_lm_eval_import_summary(doc, Path("ev/q.json")) == (
        "lm_eval:hellaswag/acc_norm: reference 0.6, candidate nf4 0.594; regression +1.000%: "
        "passed\nwrote ev/q.json\n")
