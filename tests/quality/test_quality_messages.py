"""Quality commands as a new user meets them (issue 12, point 8): a model folder without
tokenizer files is named as ``model.path``; a failed regression exits 1 after writing its
evidence (``quality run`` and ``quality import``)."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from tests.conftest import run_cli

from .conftest import TINY_CONFIG
from .test_evaluate import campaign as run_campaign
from .test_lm_eval_import import campaign as import_campaign
from .test_lm_eval_import import results


def test_quality_run_without_tokenizer_files_names_model_path(tmp_path):
    pytest.importorskip("torch", reason="the quality extra (torch) is not installed")
    pytest.importorskip("transformers")
    shutil.copytree(TINY_CONFIG.parent, tmp_path / "tiny-llama")  # config.json only
    (tmp_path / "frozen.jsonl").write_text(json.dumps({"text": "a held-out sample",
                                                       "id": "s0"}) + "\n")
    sheet = {"model": {"path": "tiny-llama"}, "task": "inference",
             "inference": {"prompt_tokens": 64, "new_tokens": 16},
             "quality": {"corpus": "frozen.jsonl", "metric": "perplexity"}}
    path = tmp_path / "sheet.yaml"
    path.write_text(yaml.safe_dump(sheet))
    run_cli("quality", "lock", str(path))
    proc = run_cli("quality", "run", str(path), "--candidate", "int8-roundtrip", "--out",
                   str(tmp_path / "ev"), "--device", "cpu", check=2)
    assert proc.stderr.startswith("error: model.path: 'tiny-llama' holds no tokenizer file")
    assert "corpus" not in proc.stderr.split(":", 3)[1]
    assert not (tmp_path / "ev").exists()


def test_quality_import_with_a_failed_regression_exits_1_after_writing(tmp_path):
    path, _ = import_campaign(tmp_path, max_regression=0.02)
    cand = tmp_path / "nf4.json"
    cand.write_text(json.dumps(results(0.57, dtype="nf4")))  # 0.60 → 0.57: −5 % > 2 %
    proc = run_cli("quality", "import", str(path), str(cand), "--candidate", "nf4", "--out",
                   str(tmp_path / "ev"), check=1)
    assert "FAILED" in proc.stdout
    (written,) = (tmp_path / "ev").glob("*.json")
    doc = json.loads(written.read_text())
    assert doc["passed"] is False and doc["regression"] == pytest.approx(0.05)
    cand.write_text(json.dumps(results(0.594, dtype="nf4")))  # −1 %: within 2 %
    run_cli("quality", "import", str(path), str(cand), "--candidate", "nf4", "--out",
            str(tmp_path / "ev2"), check=0)


def test_quality_run_with_a_failed_regression_exits_1_after_writing(tmp_path, tiny_model):
    # an int4 round-trip regresses the trained tiny model's perplexity by more than 0.01 %
    path = run_campaign(tmp_path, tiny_model, max_regression=0.0001)
    proc = run_cli("quality", "run", str(path), "--candidate", "int4-roundtrip", "--out",
                   str(tmp_path / "ev"), "--device", "cpu", check=1)
    assert "FAILED" in proc.stdout
    doc = json.loads((tmp_path / "ev" / "quality-int4-roundtrip-vs-fp32.json").read_text())
    assert doc["passed"] is False and doc["regression"] > 0.0001
