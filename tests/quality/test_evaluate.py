"""Quality runs on a tiny model trained here from TinyLlama's config (see conftest.py).

Checks: training halves the perplexity; per-sample outputs carry index and corpus hash; an int4
round-trip regresses more than an int8 one; a run against a moved threshold is refused; a
sample longer than the context is an error naming it; bitsandbytes formats say plainly that
bitsandbytes is missing; the quality criterion follows the evidence written.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import shutil
import sys

import pytest
import yaml

from gpusizer.errors import CriteriaMovedError, FormatUnavailableError, SampleTooLongError
from gpusizer.quality.criteria_lock import default_lock_path, lock_criteria
from gpusizer.sheet import load_sheet
from tests.conftest import REPO_ROOT, run_cli

pytest.importorskip("torch", reason="the quality extra (torch) is not installed")

TODAY = dt.date(2026, 11, 30)


def campaign(tmp_path, tiny, max_regression=0.02, weights=None, corpus=None):
    """A sheet on the trained tiny model, its criteria locked."""
    shutil.copytree(tiny.folder, tmp_path / "tiny-llama")
    shutil.copy(corpus or tiny.corpus, tmp_path / "frozen.jsonl")
    sheet = {"model": {"path": "tiny-llama"}, "task": "inference",
             "inference": {"prompt_tokens": 64, "new_tokens": 16},
             "quality": {"corpus": "frozen.jsonl", "metric": "perplexity",
                         "max_regression": max_regression}}
    if weights:
        sheet["weights"] = weights
    path = tmp_path / "sheet.yaml"
    path.write_text(yaml.safe_dump(sheet))
    lock_criteria(load_sheet(path), lock_path=default_lock_path(path), base_dir=tmp_path)
    return path


def run(path, candidate, out):
    from gpusizer.quality.evaluate import run_quality
    return run_quality(load_sheet(path), candidate=candidate, lock_path=default_lock_path(path),
                       out_dir=out, base_dir=path.parent, device="cpu", today=TODAY)


def test_training_halves_the_perplexity(tiny_model):
    assert tiny_model.untrained_ppl > 200  # ~uniform over 256 byte values before training
    assert tiny_model.trained_ppl < tiny_model.untrained_ppl / 2


def test_int4_roundtrip_regresses_more_than_int8(tmp_path, tiny_model):
    path = campaign(tmp_path, tiny_model)
    r8 = run(path, "int8-roundtrip", tmp_path / "ev")
    r4 = run(path, "int4-roundtrip", tmp_path / "ev")
    ref = r8.reference.value
    assert r4.reference.value == ref  # the same fp32 reference, deterministic
    assert abs(ref - tiny_model.trained_ppl) < 1e-6 * ref
    assert r4.evidence["regression"] > r8.evidence["regression"] >= -1e-3
    assert r4.evidence["regression"] == pytest.approx((r4.candidate.value - ref) / ref)
    assert r8.evidence["proxy_for"] == "int8" and r4.evidence["proxy_for"] == "int4"
    assert "simulation" in r4.evidence["candidate_implementation"]
    # per-sample outputs: one row per format and sample, with index and corpus hash
    rows = [json.loads(line) for line in r4.samples_file.read_text().splitlines()]
    n = r4.evidence["samples"]
    assert len(rows) == 2 * n and [r["sample"] for r in rows[:n]] == list(range(n))
    assert {r["corpus_sha256"] for r in rows} == {r4.evidence["corpus"]["sha256"]}
    assert {r["format"] for r in rows} == {"fp32", "int4-roundtrip"}
    assert all(r["scored_tokens"] == r["tokens"] - 1 for r in rows)


def test_run_refuses_a_moved_threshold(tmp_path, tiny_model):
    path = campaign(tmp_path, tiny_model, max_regression=0.02)
    data = yaml.safe_load(path.read_text())
    data["quality"]["max_regression"] = 0.5
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CriteriaMovedError, match="locked 0.02, sheet now 0.5"):
        run(path, "int4-roundtrip", tmp_path / "ev")
    assert not (tmp_path / "ev").exists()


def test_a_sample_longer_than_the_context_is_an_error(tmp_path, tiny_model):
    long = tmp_path / "long.jsonl"
    long.write_text(json.dumps({"text": "short enough"}) + "\n"
                    + json.dumps({"text": "x" * 300, "id": "too-long"}) + "\n")
    path = campaign(tmp_path, tiny_model, corpus=long)
    with pytest.raises(SampleTooLongError) as exc:
        run(path, "bf16", tmp_path / "ev")
    msg = str(exc.value)
    assert "sample 1 (id too-long) needs 300 tokens" in msg and "= 256" in msg
    assert "never truncated" in msg


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is not None,
                    reason="bitsandbytes is installed here")
def test_bitsandbytes_formats_say_it_is_missing(tmp_path, tiny_model):
    path = campaign(tmp_path, tiny_model)
    with pytest.raises(FormatUnavailableError, match="bitsandbytes, which is not installed"):
        run(path, "nf4", tmp_path / "ev")


def test_criterion_follows_the_evidence(tmp_path, tiny_model):
    from gpusizer.pipeline import run_plan
    path = campaign(tmp_path, tiny_model, max_regression=0.02)
    ev = tmp_path / "ev"
    bf16 = run(path, "bf16", ev)
    run(path, "int4-roundtrip", ev)
    assert bf16.evidence["passed"] and abs(bf16.evidence["regression"]) < 0.02

    def quality_of(weights):
        data = yaml.safe_load(path.read_text())
        data["weights"] = weights
        path.write_text(yaml.safe_dump(data))
        r = run_plan(load_sheet(path), evidence_dir=ev, today=TODAY, base_dir=tmp_path)
        return r.decisions[0].criteria["quality"]

    c = quality_of("bf16")
    assert c.state == "acceptable" and "bf16 within tolerance of fp32" in c.reason
    assert c.evidence[0]["document"] == str(bf16.samples_file)
    c = quality_of("fp32")
    assert c.state == "acceptable" and "reference format fp32 unchanged" in c.reason
    c = quality_of("fp16")
    assert c.state == "to_confirm" and "format fp16 not yet evaluated" in c.reason
    c = quality_of("int4")  # only a round-trip exists: reported, never decides
    assert c.state == "to_confirm" and "int4-roundtrip simulation regressed" in c.reason
    # the same evidence under a moved threshold is set aside with the reason
    data = yaml.safe_load(path.read_text())
    data["weights"] = "bf16"
    data["quality"]["max_regression"] = 0.5
    path.write_text(yaml.safe_dump(data))
    r = run_plan(load_sheet(path), evidence_dir=ev, today=TODAY, base_dir=tmp_path)
    assert r.decisions[0].criteria["quality"].state == "to_confirm"
    assert all("other criteria" in why for _, why in r.evidence.ignored)
    assert "quality.max_regression: judged on 0.02, sheet now 0.5" in r.evidence.ignored[0][1]


def test_quality_run_cli(tmp_path, tiny_model):
    path = campaign(tmp_path, tiny_model)
    proc = run_cli("quality", "run", str(path), "--candidate", "int8-roundtrip", "--out",
                   str(tmp_path / "ev"), "--device", "cpu")
    assert "candidate int8-roundtrip" in proc.stdout and "a simulation of int8" in proc.stdout
    doc = json.loads((tmp_path / "ev" / "quality-int8-roundtrip-vs-fp32.json").read_text())
    assert doc["kind"] == "quality" and doc["reference_format"] == "fp32"
    proc = run_cli("quality", "run", str(path), "--candidate", "gptq-int4", "--out",
                   str(tmp_path / "ev"), check=2)
    assert "--candidate: expected one of fp32" in proc.stderr


def test_missing_extra_exits_1_naming_the_install(tmp_path, tiny_model):
    import subprocess
    path = campaign(tmp_path, tiny_model)
    code = ("import sys; sys.modules['torch'] = None; from gpusizer.cli import main; "
            f"sys.argv = ['gpusizer', 'quality', 'run', {str(path)!r}, '--candidate', 'bf16', "
            f"'--out', {str(tmp_path / 'ev')!r}]; main()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert ('pip install "gpusizer[quality]" (from a checkout: pip install -c constraints.txt '
            '-e ".[quality]")') in " ".join(proc.stderr.split())


def test_exact_match_counts_greedy_continuations(tmp_path, tiny_model):
    """Expected outputs: the fp32 model's own greedy 3-byte continuations for four prompts (so
    those match by construction) and one the model never writes: reference exact match 4/5."""
    import torch
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(tiny_model.folder, dtype=torch.float32)
    prompts = ["The memory ", "offer", "## R1", "quality "]
    lines = []
    for p in prompts:
        ids = torch.tensor([list(p.encode())])
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                             max_new_tokens=3, do_sample=False, pad_token_id=0)
        lines.append({"prompt": p, "expected": bytes(out[0, ids.shape[1]:].tolist()).decode()})
    lines.append({"prompt": "budget", "expected": "ZQX"})
    corpus = tmp_path / "em.jsonl"
    corpus.write_text("".join(json.dumps(x) + "\n" for x in lines))
    shutil.copytree(tiny_model.folder, tmp_path / "tiny-llama")
    shutil.copy(corpus, tmp_path / "frozen.jsonl")
    sheet = {"model": {"path": "tiny-llama"}, "task": "inference",
             "inference": {"prompt_tokens": 64, "new_tokens": 16},
             "quality": {"corpus": "frozen.jsonl", "metric": "exact_match"}}
    path = tmp_path / "sheet.yaml"
    path.write_text(yaml.safe_dump(sheet))
    lock_criteria(load_sheet(path), lock_path=default_lock_path(path), base_dir=tmp_path)
    r = run(path, "bf16", tmp_path / "ev")
    assert r.reference.value == 0.8
    assert [row["match"] for row in r.reference.samples] == [True, True, True, True, False]
    assert r.evidence["direction"] == "higher"
    assert r.candidate.value == sum(row["match"] for row in r.candidate.samples) / 5
    assert r.evidence["regression"] == pytest.approx((0.8 - r.candidate.value) / 0.8)
