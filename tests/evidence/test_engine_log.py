"""Engine start-up logs as evidence (issue 15 point 5): every figure is checked against the
public log it was quoted from (the fixture's first line gives the URL) with the arithmetic shown;
foreign, truncated and contradictory logs are refused with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpusizer import api
from gpusizer.catalog.cards import require_card
from gpusizer.errors import EngineLogError, EvidenceError
from gpusizer.evidence import load_evidence_docs
from gpusizer.evidence.engine_log import (LINE_KINDS, check_engine_log, log_proof, model_matches,
                                          parse_engine_log)
from gpusizer.pipeline.importing import engine_log_evidence, import_engine_log
from gpusizer.sheet import parse_sheet

from ..conftest import run_cli

LOGS = Path(__file__).resolve().parents[1] / "data" / "engine_logs"
GIB = 2**30


def _facts(name: str, engine: str | None = None) -> dict:
    text = (LOGS / name).read_text()
    return check_engine_log(parse_engine_log(text, engine or name.split("-")[0] + "-log"))


def _sheet(prompt: int, new: int, concurrency: int = 1, **inference) -> object:
    return parse_sheet({"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"}, "task": "inference",
                        "weights": "bf16",
                        "inference": {"engine": "vllm", "prompt_tokens": prompt,
                                      "new_tokens": new, "concurrency": concurrency,
                                      **inference}})


def test_every_fixture_names_its_public_source():
    logs = sorted(LOGS.glob("*.log"))
    assert logs
    for path in logs:
        assert path.name.split("-")[0] in ("vllm", "sglang"), path.name
        assert path.read_text().splitlines()[0].startswith("# https://"), path.name   # its public source


def test_vllm_v0_log_10517_figures():
    # https://github.com/vllm-project/vllm/issues/10517: Llama-3.1-8B-Instruct, RTX 3090, 20k
    f = _facts("vllm-10517-llama31-8b-rtx3090-20k.log")
    assert f["engine_mode"] == "V0"
    assert f["kv_blocks"] == 1952 and f["kv_tokens"] == 1952 * 16 == 31232
    assert f["max_model_len"] == 20000 and f["max_concurrency"] == 1.56   # 31232 / 20000 = 1.5616
    assert f["gpu_memory_utilization"] == 0.90
    assert f["weights_bytes"] == round(14.9888 * GIB)       # "took 14.9888 GB" is GiB
    assert f["kv_cache_bytes"] == round(3.81 * GIB)
    # Llama-3.1-8B: 32 layers x 8 KV heads x 128 x (K and V) x 2 B = 131072 B per token
    assert abs(31232 * 131072 - f["kv_cache_bytes"]) <= f["gib_rounding_bytes"] + 16 * 131072
    assert f["total_bytes"] == round(23.58 * GIB) and f["started"] is True
    assert set(f["lines_found"]) == {"weights_gb", "profile_v0", "gpu_blocks", "max_concurrency"}


def test_vllm_refusal_10517_29k():
    f = _facts("vllm-10517-llama31-8b-rtx3090-29k-refused.log")
    assert f["started"] is False and f["max_model_len"] == 29000
    assert f["kv_tokens"] == 1478 * 16 == 23648 < 29000     # the refusal's own figure
    assert "29000" in f["refusal"]


def test_vllm_v1_wordings():
    # PR 12569 (V1, Jan 2025): blocks, and the command pasted with the log names the model
    f = _facts("vllm-12569-llama31-70b-w8a8-v1.log")
    assert f["engine_mode"] == "V1" and f["model"].endswith("quantized.w8a8")
    assert f["kv_tokens"] == 1381 * 16 == 22096 and f["max_model_len"] == 2048
    assert f["gpu_memory_utilization"] == 0.98 and f["max_concurrency"] == 10.79  # 22096/2048
    # PR 13596: "GPU KV cache size: 2,042,016 tokens" with thousands separators
    f = _facts("vllm-13596-v1-token-counts.log")
    assert f["kv_tokens"] == 2042016 and f["max_model_len"] == 2048
    assert f["max_concurrency"] == 997.08                   # 2042016 / 2048 = 997.078
    # PR 20707 (v0.10, EngineCore_0 prefixes): tokens and the blocks of the metrics logger
    f = _facts("vllm-20707-v1-engine-core.log")
    assert f["kv_tokens"] == 922496 == 57656 * 16 and f["block_size"] == 16
    assert f["max_model_len"] == 40000 and f["kv_cache_bytes"] == round(112.61 * GIB)
    # issue 21348: a multi-line command (backslash continuations) gives model and TP
    f = _facts("vllm-21348-qwen3-235b-fp8-tp4.log")
    assert f["tensor_parallel_size"] == 4 and f["model"] == "/path/to/Qwen3-235B-A22B-FP8"
    assert f["kv_tokens"] == 178880 and f["max_model_len"] is None


def test_sglang_logs():
    # issue vllm#21348, SGLang side: Qwen3-235B-A22B on TP 4 keeps 1 of 4 KV heads per GPU:
    # K bytes per token = 94 layers x 1 head x 128 x 2 B = 24064; 367404 x 24064 B = 8.23 GiB
    f = _facts("sglang-vllm21348-qwen3-235b-fp8-tp4.log")
    assert f["kv_tokens"] == 367404 and f["tensor_parallel_size"] == 4
    assert f["mem_fraction_static"] == 0.93
    assert f"{367404 * 24064 / GIB:.2f}" == "8.23"
    assert f["kv_cache_bytes"] == round(2 * 8.23 * GIB)
    # ktransformers#1870: both ranks print the same pool; the scheduler line gives the limits
    f = _facts("sglang-ktransformers1870-qwen35-moe-tp2.log")
    assert f["kv_tokens"] == 580364 and f["max_running_requests"] == 1
    assert f["max_model_len"] == 8192 and f["weights_bytes"] == round(3.76 * GIB)
    assert f["ranks"] == [0, 1]


@pytest.mark.parametrize(("name", "engine", "words"), [
    ("vllm-24162-qwen25-05b-tp2-truncated.log", "vllm-log", "truncated vLLM log"),
    ("sglang-vllm21348-qwen3-235b-fp8-tp4.log", "vllm-log", "not a vLLM log"),
    ("vllm-20707-v1-engine-core.log", "sglang-log", "not a SGLang log"),
])
def test_truncated_and_foreign_logs_are_refused(name, engine, words):
    with pytest.raises(EngineLogError, match=words):
        check_engine_log(parse_engine_log((LOGS / name).read_text(), engine))


def test_contradictory_logs_are_refused():
    base = (LOGS / "vllm-13596-v1-token-counts.log").read_text()
    # two start-ups pasted into one file
    with pytest.raises(EngineLogError, match="contradictory log: kv_tokens"):
        check_engine_log(parse_engine_log(base + base.replace("2,042,016", "1,000,000"),
                                          "vllm-log"))
    # a concurrency that does not follow from tokens / length (997.08x, not 99.71x)
    with pytest.raises(EngineLogError, match="maximum concurrency"):
        check_engine_log(parse_engine_log(base.replace("997.08x", "99.71x"), "vllm-log"))
    with pytest.raises(EngineLogError, match="K size"):
        check_engine_log(parse_engine_log(
            "KV Cache is allocated. #tokens: 10, K size: 1.00 GB, V size: 2.00 GB", "sglang-log"))


def test_line_kinds_are_one_table_with_sources():
    assert len({k.name for k in LINE_KINDS}) == len(LINE_KINDS)
    assert all(k.source for k in LINE_KINDS)


def test_model_names_compared_by_last_component():
    assert model_matches("/mnt/models/models--meta-llama--llama-3-1-70b-instruct",
                         "meta-llama/Llama-3.1-70B-Instruct")
    assert model_matches("/path/to/Qwen3-235B-A22B-FP8", "Qwen/Qwen3-235B-A22B-FP8")
    assert not model_matches("neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w8a8",
                             "meta-llama/Llama-3.1-70B-Instruct")


def test_proof_rule_on_the_10517_pool():
    doc = _facts("vllm-10517-llama31-8b-rtx3090-20k.log")
    doc["block_size"] = 16
    # 31232 tokens // 20000 (1250 blocks of 16) = 1 sequence
    assert log_proof(doc, tokens_per_sequence=20000, sequences=1, block_tokens=16).state == \
        "proves"
    # two sequences at exactly the logged length and utilization: 1 < 2, disproved
    p = log_proof(doc, tokens_per_sequence=20000, sequences=2, block_tokens=16)
    assert p.state == "disproves" and p.sequences_held == 1
    # a shorter need: 31232 // 8000 = 3 sequences, but the log ran 20000: 2 are proved, 4 not
    assert log_proof(doc, tokens_per_sequence=8000, sequences=3, block_tokens=16).state == \
        "proves"
    assert log_proof(doc, tokens_per_sequence=8000, sequences=4, block_tokens=16).state == \
        "silent"
    # a longer need than the log ran proves nothing
    assert log_proof(doc, tokens_per_sequence=30000, sequences=1, block_tokens=16).state == \
        "silent"


def test_sheet_mismatches_are_refused():
    card = require_card("RTX 3090")
    text = (LOGS / "vllm-10517-llama31-8b-rtx3090-20k.log").read_text()
    with pytest.raises(EngineLogError, match="gpu_memory_utilization 0.9; the sheet asks 0.8"):
        engine_log_evidence(text, "vllm-log", _sheet(19000, 1000, gpu_memory_utilization=0.8), card,
                            document="x.log")
    with pytest.raises(EngineLogError, match="23.58 GiB"):   # an RTX 3090 log is not an H100
        engine_log_evidence(text, "vllm-log", _sheet(19000, 1000), require_card("H100 SXM"),
                            document="x.log")
    w8a8 = (LOGS / "vllm-12569-llama31-70b-w8a8-v1.log").read_text()
    with pytest.raises(EngineLogError, match="another model"):
        engine_log_evidence(w8a8, "vllm-log", _sheet(1000, 1000), card, document="x.log")
    with pytest.raises(EngineLogError, match="inference.engine sglang"):
        engine_log_evidence(text, "sglang-log", _sheet(19000, 1000), card, document="x.log")


def _plan_memory(sheet, docs):
    cat = "- {id: a3090, provider: acme, card: RTX 3090, cards: 1, days: 3, total_usd: 20}\n"
    report = api.plan(sheet.model_dump(mode="json", exclude_defaults=True), catalogs=[cat],
                      evidence=docs).to_json()
    (offer,) = report["offers"]
    return offer["criteria"]


def test_plan_memory_acceptable_from_the_log_never_workload(tmp_path):
    sheet = _sheet(19000, 1000)           # prompt + new = 20000 = the log's max_model_len
    doc, path = import_engine_log("vllm-log", LOGS / "vllm-10517-llama31-8b-rtx3090-20k.log",
                                  sheet, card=require_card("RTX 3090"), out=tmp_path)
    assert path.name == "vllm-10517-llama31-8b-rtx3090-20k.engine-log.json"
    assert json.loads(path.read_text())["kind"] == "engine_log"
    assert doc["settings_unstated"] == ["model", "tensor_parallel_size", "kv_cache_dtype",
                                        "block_size"]
    crit = _plan_memory(sheet, [doc])
    assert crit["memory"]["state"] == "acceptable"
    assert "holds 1 sequence(s) of 20,000 tokens >= 1 required" in crit["memory"]["reason"]
    assert crit["workload"]["state"] == "to_confirm"
    # two sequences: the log at exactly this length and utilization holds one
    sheet2 = _sheet(19000, 1000, concurrency=2)
    doc2 = engine_log_evidence((LOGS / "vllm-10517-llama31-8b-rtx3090-20k.log").read_text(),
                               "vllm-log", sheet2, require_card("RTX 3090"), document="l.log")
    assert _plan_memory(sheet2, [doc2])["memory"]["state"] == "exclude"


def test_plan_memory_exclude_from_a_refusal_and_condition_names_import():
    sheet = _sheet(28000, 1000)
    doc = engine_log_evidence(
        (LOGS / "vllm-10517-llama31-8b-rtx3090-29k-refused.log").read_text(), "vllm-log", sheet,
        require_card("RTX 3090"), document="refused.log")
    assert _plan_memory(sheet, [doc])["memory"]["state"] == "exclude"
    crit = _plan_memory(sheet, [])
    assert crit["memory"]["state"] == "to_confirm"
    assert "gpusizer import vllm-log" in crit["memory"]["condition"]
    assert "gpusizer import vllm-log" in crit["workload"]["condition"]


def test_engine_log_document_fields_are_checked():
    good = {"kind": "engine_log", "document": "l.log", "version": "vLLM", "log_kind": "vllm-log",
            "started": True, "kv_tokens": 10, "max_model_len": 5}
    load_evidence_docs([good])
    for bad in ({"log_kind": "tgi-log"}, {"started": "yes"}, {"kv_tokens": -1},
                {"max_concurrency": float("nan")}):
        with pytest.raises(EvidenceError):
            load_evidence_docs([{**good, **bad}])


def test_cli_import_exit_codes(tmp_path):
    sheet = tmp_path / "s.yaml"
    sheet.write_text("model: {id: meta-llama/Llama-3.1-8B-Instruct}\ntask: inference\n"
                     "weights: bf16\ninference: {engine: vllm, prompt_tokens: 19000, "
                     "new_tokens: 1000}\n")
    ok = run_cli("import", "vllm-log", str(LOGS / "vllm-10517-llama31-8b-rtx3090-20k.log"),
                 "--sheet", str(sheet), "--card", "RTX 3090", "--out", str(tmp_path / "ev"))
    assert "KV tokens: 31232" in ok.stdout
    bad = run_cli("import", "vllm-log", str(LOGS / "vllm-24162-qwen25-05b-tp2-truncated.log"),
                  "--sheet", str(sheet), "--card", "RTX 3090", "--out", str(tmp_path / "ev"),
                  check=2)
    assert bad.stderr.count("\n") == 1 and "truncated vLLM log" in bad.stderr
    dev = run_cli("import", "vllm-log", "/dev/zero", "--sheet", str(sheet), "--card",
                  "RTX 3090", "--out", str(tmp_path / "ev"), check=2)
    assert "not a regular file" in dev.stderr


def test_the_pool_must_fit_the_sheet_models_kv_layout(tmp_path):
    # vllm#10517: 31 232 tokens in 3.81 GiB = 131 072 B per token, Llama-3.1-8B's layout
    # (32 layers x 8 KV heads x 128 x 2 x 2 B); Llama-2-7B keeps 32 KV heads: 524 288 B per
    # token, 31 232 x 524 288 B = 15.25 GiB > 3.81 GiB: not this model's pool
    log = LOGS / "vllm-10517-llama31-8b-rtx3090-20k.log"
    doc, _ = import_engine_log("vllm-log", log, _sheet(19000, 1000),
                               card=require_card("RTX 3090"), out=tmp_path)
    assert doc["kv_layout_check"].startswith("31,232 tokens × 131,072 B per token")
    llama2 = parse_sheet({"model": {"id": "meta-llama/Llama-2-7b-hf"}, "task": "inference",
                          "weights": "bf16", "inference": {"engine": "vllm",
                                                           "prompt_tokens": 3000,
                                                           "new_tokens": 1000}})
    with pytest.raises(EngineLogError, match="need 15.25 GiB at the sheet model's 524,288 B"):
        import_engine_log("vllm-log", log, llama2, card=require_card("RTX 3090"), out=tmp_path)
