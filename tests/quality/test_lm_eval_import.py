"""lm-evaluation-harness results as quality evidence: task version and sample count must match
the locked reference, or the file is rejected with the mismatch named."""

from __future__ import annotations

import datetime as dt
import json
import shutil

import pytest
import yaml

from gpusizer.errors import EvidenceError, LmEvalMismatchError, QualityError
from gpusizer.quality.criteria_lock import default_lock_path, lock_criteria
from gpusizer.pipeline import import_quality as import_lm_eval
from gpusizer.quality.lm_eval_import import read_lm_eval_results
from gpusizer.sheet import load_sheet
from tests.conftest import run_cli

from .conftest import TINY_CONFIG

TODAY = dt.date(2026, 11, 30)


def results(value, version=1.0, samples=10042, n_shot=0, dtype="bfloat16", **extra):
    """A results file in lm-eval 0.4's shape (lm_eval/evaluator.py, evaluation_tracker.py)."""
    return {"results": {"hellaswag": {"alias": "hellaswag", "acc,none": value - 0.2,
                                      "acc_stderr,none": 0.005, "acc_norm,none": value,
                                      "acc_norm_stderr,none": 0.004}},
            "group_subtasks": {"hellaswag": []},
            "configs": {"hellaswag": {"task": "hellaswag", "num_fewshot": n_shot,
                                      "metadata": {"version": version}}},
            "versions": {"hellaswag": version}, "n-shot": {"hellaswag": n_shot},
            "higher_is_better": {"hellaswag": {"acc": True, "acc_norm": True}},
            "n-samples": {"hellaswag": {"original": 10042, "effective": samples}},
            "config": {"model": "hf", "model_args": f"pretrained=tiny,dtype={dtype}",
                       "batch_size": 8, "limit": None},
            "lm_eval_version": "0.4.9", **extra}


def campaign(tmp_path, max_regression=0.02):
    shutil.copytree(TINY_CONFIG.parent, tmp_path / "tiny-llama")
    (tmp_path / "reference.json").write_text(json.dumps(results(0.60)))
    sheet = {"model": {"path": "tiny-llama"}, "task": "inference", "weights": "nf4",
             "inference": {"prompt_tokens": 64, "new_tokens": 16},
             "quality": {"corpus": "reference.json", "metric": "lm_eval:hellaswag/acc_norm",
                         "reference": "bf16", "max_regression": max_regression}}
    path = tmp_path / "sheet.yaml"
    path.write_text(yaml.safe_dump(sheet))
    lock = lock_criteria(load_sheet(path), lock_path=default_lock_path(path), base_dir=tmp_path)
    return path, lock.lock


def imp(path, candidate_file, candidate="nf4", out="ev"):
    return import_lm_eval(load_sheet(path), candidate_file, candidate=candidate,
                          lock_path=default_lock_path(path), out_dir=path.parent / out,
                          base_dir=path.parent, today=TODAY)


def test_lock_fixes_task_version_and_samples(tmp_path):
    _, lock = campaign(tmp_path)
    assert lock.lm_eval["task"] == "hellaswag" and lock.lm_eval["version"] == "1.0"
    assert lock.lm_eval["samples"] == 10042 and lock.lm_eval["n_shot"] == 0
    assert lock.lm_eval["metric_key"] == "acc_norm,none" and lock.lm_eval["value"] == 0.60
    assert lock.direction == "higher" and lock.corpus.samples == 10042


def test_import_within_and_beyond_tolerance(tmp_path):
    path, _ = campaign(tmp_path, max_regression=0.02)
    cand = tmp_path / "nf4.json"
    cand.write_text(json.dumps(results(0.594, dtype="nf4")))  # −1 % accuracy
    doc, out = imp(path, cand)
    assert doc["passed"] and doc["regression"] == pytest.approx(0.01)
    assert doc["lm_eval"]["version"] == "1.0" and doc["lm_eval"]["samples"] == 10042
    assert json.loads(out.read_text())["candidate_value"] == 0.594
    from gpusizer.pipeline import run_plan
    r = run_plan(load_sheet(path), evidence_dir=tmp_path / "ev", today=TODAY,
                 base_dir=tmp_path)
    c = r.decisions[0].criteria["quality"]
    assert c.state == "acceptable" and "nf4 within tolerance of bf16" in c.reason
    cand.write_text(json.dumps(results(0.57)))  # −5 %
    with pytest.raises(QualityError, match="already exists"):  # evidence is never overwritten
        imp(path, cand)
    doc, _ = imp(path, cand, out="ev2")
    assert not doc["passed"] and doc["regression"] == pytest.approx(0.05)
    r = run_plan(load_sheet(path), evidence_dir=tmp_path / "ev2", today=TODAY,
                 base_dir=tmp_path)
    assert r.decisions[0].criteria["quality"].state == "exclude"


def test_another_task_version_is_rejected(tmp_path):
    path, _ = campaign(tmp_path)
    cand = tmp_path / "nf4.json"
    cand.write_text(json.dumps(results(0.60, version=2.0)))
    with pytest.raises(LmEvalMismatchError) as exc:
        imp(path, cand)
    assert "version '2.0' where the locked criteria have '1.0'" in str(exc.value)
    assert not (tmp_path / "ev").exists()
    cand.write_text(json.dumps(results(0.60, samples=100, n_shot=5)))
    with pytest.raises(LmEvalMismatchError) as exc:
        imp(path, cand)
    assert "n_shot 5 where the locked criteria have 0" in str(exc.value)
    assert "samples 100 where the locked criteria have 10042" in str(exc.value)
    proc = run_cli("quality", "import", str(path), str(cand), "--candidate", "nf4", "--out",
                   str(tmp_path / "ev"), check=2)
    assert "samples 100 where the locked criteria have 10042" in proc.stderr


def test_malformed_results_files(tmp_path):
    f = tmp_path / "r.json"
    data = results(0.6)
    del data["versions"]
    f.write_text(json.dumps(data))
    with pytest.raises(EvidenceError, match=r"expected versions\['hellaswag'\]"):
        read_lm_eval_results(f, "lm_eval:hellaswag/acc_norm")
    data = results(0.6)
    data["results"]["hellaswag"]["acc_norm,strict"] = 0.5
    f.write_text(json.dumps(data))
    with pytest.raises(EvidenceError, match="several filters"):
        read_lm_eval_results(f, "lm_eval:hellaswag/acc_norm")
    assert read_lm_eval_results(f, "lm_eval:hellaswag/acc_norm,strict").value == 0.5
    with pytest.raises(EvidenceError, match="expected a number at results"):
        read_lm_eval_results(f, "lm_eval:hellaswag/f1")
