"""The lock: criteria fixed before comparing; a moved threshold or a changed corpus is refused."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil

import pytest
import yaml

from gpusizer.errors import CorpusError, CriteriaMovedError, QualityError
from gpusizer.quality.criteria_lock import (check_lock, default_lock_path, lock_criteria,
                                            read_lock)
from gpusizer.sheet import load_sheet, quality_sha256
from tests.conftest import run_cli

from .conftest import TINY_CONFIG

NOW = dt.datetime(2026, 11, 30, 4, 0, tzinfo=dt.timezone.utc)


def make_sheet(tmp_path, max_regression=0.02, metric="perplexity", corpus="frozen.jsonl",
               **quality):
    """A sheet on the bundled tiny config (config.json only: the lock needs no weights)."""
    folder = tmp_path / "tiny-llama"
    if not folder.exists():
        shutil.copytree(TINY_CONFIG.parent, folder)
    if not (tmp_path / "frozen.jsonl").exists():
        (tmp_path / "frozen.jsonl").write_text('{"text": "the frozen corpus"}\n'
                                               '{"text": "a second sample", "id": "b"}\n')
    sheet = {"model": {"path": "tiny-llama"}, "task": "inference",
             "inference": {"prompt_tokens": 64, "new_tokens": 16},
             "quality": {"corpus": corpus, "metric": metric, "max_regression": max_regression,
                         **quality}}
    path = tmp_path / "sheet.yaml"
    path.write_text(yaml.safe_dump(sheet))
    return path


def test_lock_records_criteria_corpus_hash_size_and_time(tmp_path):
    path = make_sheet(tmp_path)
    sheet = load_sheet(path)
    r = lock_criteria(sheet, lock_path=default_lock_path(path), base_dir=tmp_path, now=NOW)
    assert r.created and r.path == tmp_path / "sheet.quality-lock.json"
    data = (tmp_path / "frozen.jsonl").read_bytes()
    lock = read_lock(r.path)
    assert lock.corpus.sha256 == hashlib.sha256(data).hexdigest()
    assert lock.corpus.size_bytes == len(data) and lock.corpus.samples == 2
    assert lock.reference_format == "fp32"  # auto: the tiny config's torch_dtype float32
    assert lock.direction == "lower" and lock.locked_at == "2026-11-30T04:00:00+00:00"
    assert lock.criteria_sha256 == quality_sha256(sheet)
    assert lock.criteria["quality"]["max_regression"] == 0.02
    assert lock.criteria["model"]["path"] == "tiny-llama"
    # locking the same criteria again keeps the first lock (and its time)
    again = lock_criteria(sheet, lock_path=r.path, base_dir=tmp_path,
                          now=NOW + dt.timedelta(hours=1))
    assert not again.created and again.lock.locked_at == lock.locked_at


def test_lock_refuses_a_moved_threshold(tmp_path):
    path = make_sheet(tmp_path, max_regression=0.02)
    lock_path = default_lock_path(path)
    lock_criteria(load_sheet(path), lock_path=lock_path, base_dir=tmp_path, now=NOW)
    moved = load_sheet(make_sheet(tmp_path, max_regression=0.05))
    with pytest.raises(CriteriaMovedError) as exc:
        lock_criteria(moved, lock_path=lock_path, base_dir=tmp_path)
    assert "quality.max_regression: locked 0.02, sheet now 0.05" in str(exc.value)
    with pytest.raises(CriteriaMovedError):
        check_lock(moved, read_lock(lock_path), base_dir=tmp_path)
    # the lock file is untouched
    assert read_lock(lock_path).criteria["quality"]["max_regression"] == 0.02
    # through the CLI: exit 2 and the reason printed
    proc = run_cli("quality", "lock", str(path), check=2)
    assert "locked 0.02, sheet now 0.05" in proc.stderr and "fixed before comparing" in proc.stderr


def test_lock_refuses_a_changed_corpus_and_another_model(tmp_path):
    path = make_sheet(tmp_path)
    lock_path = default_lock_path(path)
    lock_criteria(load_sheet(path), lock_path=lock_path, base_dir=tmp_path, now=NOW)
    (tmp_path / "frozen.jsonl").write_text('{"text": "the frozen corpus, edited"}\n')
    with pytest.raises(CriteriaMovedError, match="frozen corpus 'frozen.jsonl' changed"):
        check_lock(load_sheet(path), read_lock(lock_path), base_dir=tmp_path)
    other = yaml.safe_load(path.read_text())
    other["model"]["revision"] = "v2"
    path.write_text(yaml.safe_dump(other))
    with pytest.raises(CriteriaMovedError, match="model.revision: locked 'main', sheet now 'v2'"):
        check_lock(load_sheet(path), read_lock(lock_path), base_dir=tmp_path)


def test_lock_cli_writes_the_file(tmp_path):
    path = make_sheet(tmp_path)
    proc = run_cli("quality", "lock", str(path))
    assert "locked:" in proc.stdout and "reference fp32" in proc.stdout
    lock = json.loads((tmp_path / "sheet.quality-lock.json").read_text())
    assert lock["kind"] == "quality_criteria" and lock["corpus"]["samples"] == 2
    assert "already locked, unchanged" in run_cli("quality", "lock", str(path)).stdout


def test_lock_input_errors(tmp_path):
    path = make_sheet(tmp_path, corpus="missing.jsonl")
    with pytest.raises(CorpusError, match="cannot read the corpus"):
        lock_criteria(load_sheet(path), lock_path=tmp_path / "l.json", base_dir=tmp_path)
    no_q = tmp_path / "noq.yaml"
    no_q.write_text(yaml.safe_dump({"model": {"parameters": 7_000_000_000}, "task": "inference",
                                    "weights": "fp16"}))
    with pytest.raises(QualityError, match="no quality block"):
        lock_criteria(load_sheet(no_q), lock_path=tmp_path / "l.json")
    bare = tmp_path / "bare.yaml"
    bare.write_text(yaml.safe_dump({"model": {"parameters": 7_000_000_000}, "task": "inference",
                                    "weights": "fp16", "quality": {"corpus": "frozen.jsonl"}}))
    with pytest.raises(QualityError, match="reference 'auto' needs a checkpoint"):
        lock_criteria(load_sheet(bare), lock_path=tmp_path / "l.json", base_dir=tmp_path)
    with pytest.raises(QualityError, match="no quality lock at"):
        read_lock(tmp_path / "absent.json")
