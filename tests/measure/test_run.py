"""The harness end to end on the CPU, tiny Llama-3.1 with random weights: the ladder, executed
dimensions read from the model's inputs, truncation detection, the first violation at every
phase, and the evidence that ``plan`` reads."""

from __future__ import annotations

import json

import pytest

from gpusizer.evidence import load_evidence
from gpusizer.measure import run_measurement
from gpusizer.measure.raw_notes import read_raw_notes
from gpusizer.sheet import load_sheet, sheet_sha256

from .conftest import INFERENCE, LORA, FakeNvml, write_sheet


def measure(tmp_path, body, inject=None, name="sheet.yaml"):
    sheet_path = write_sheet(tmp_path, body, name)
    sheet = load_sheet(sheet_path)
    result = run_measurement(sheet, tmp_path / "out", random_weights=True, device="cpu",
                             nvml_module=FakeNvml(), inject=inject)
    return sheet, result


@pytest.fixture(scope="module")
def inference_run(tmp_path_factory):
    body = {**INFERENCE, "measure": {"typical": {"prompt_tokens": 144}}}
    return measure(tmp_path_factory.mktemp("inf"), body)


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory):
    return measure(tmp_path_factory.mktemp("lora"), LORA)


def test_inference_ladder_runs_every_rung_at_its_dimensions(inference_run):
    sheet, r = inference_run
    ev = r.evidence
    assert [(g["name"], g["result"]) for g in ev["rungs"]] == [
        ("short", "passed"), ("typical", "passed"), ("limit", "passed")]
    short, typical, limit = ev["rungs"]
    assert short["executed"] == {"prompt_tokens": 128, "new_tokens": 6, "concurrency": 1,
                                 "decode_forwards": 5}
    assert typical["executed"]["prompt_tokens"] == 144 and typical["executed"]["concurrency"] == 2
    assert limit["executed"] == {"prompt_tokens": 160, "new_tokens": 6, "concurrency": 2,
                                 "decode_forwards": 5}
    assert [p["name"] for p in limit["phases"]] == ["load", "prefill", "decode"]
    assert ev["stopped_at"] is None and ev["sheet_sha256"] == sheet_sha256(sheet)


def test_cpu_counters_are_real_and_cuda_ones_absent(inference_run):
    _, r = inference_run
    limit = r.evidence["rungs"][-1]
    load, prefill, decode = limit["phases"]
    # load: the live tensors are exactly the parameters + buffers the model holds
    params = r.evidence["model"]["parameters"]
    assert r.evidence["model"]["dtype"] == "bf16"
    # rotary buffers inv_freq and original_inv_freq (llama3 rope): fp32, head_dim / 2 values each
    buffers = 2 * 4 * (64 // 8) // 2
    first_load = r.evidence["rungs"][0]["phases"][0]
    assert first_load["cpu_live_tensor_peak_bytes"] == 2 * params + buffers == 344_736
    # later rungs reload from scratch; a few bytes of the previous rung's scalars may live on
    assert 0 <= load["cpu_live_tensor_peak_bytes"] - (2 * params + buffers) <= 64
    # prefill holds more than the weights: the KV cache of 2 × 160 tokens at least
    # K and V × layers × sequences × tokens × KV heads × head_dim × bf16 bytes
    kv = 2 * 2 * 2 * 160 * 2 * 8 * 2
    assert prefill["cpu_live_tensor_peak_bytes"] >= load["cpu_live_tensor_peak_bytes"] + kv
    for ph in (load, prefill, decode):
        assert ph["max_memory_allocated_bytes"] is None and ph["max_memory_reserved_bytes"] is None
        assert ph["unknown"]["max_memory_reserved_bytes"].startswith("no CUDA device")
    peak = next(p for p in r.evidence["peaks"] if p["rung"] == "limit")
    assert peak["cpu_live_tensor_peak_bytes"]["phase"] == "prefill"
    assert peak["max_memory_reserved_bytes"]["bytes"] is None


def test_raw_notes_hold_every_event_in_order(inference_run):
    _, r = inference_run
    events = read_raw_notes(r.raw_notes_path)
    kinds = [e["event"] for e in events]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    assert kinds.count("phase_end") == 9 and kinds.count("rung_end") == 3
    assert [e["seq"] for e in events] == list(range(len(events)))
    ends = [e for e in events if e["event"] == "phase_end"]
    assert ends[-1]["counters"]["cpu_live_tensor_peak_bytes"] == \
        r.evidence["rungs"][-1]["phases"][-1]["cpu_live_tensor_peak_bytes"]


def test_lora_training_runs_every_phase(lora_run):
    _, r = lora_run
    limit = r.evidence["rungs"][-1]
    assert limit["result"] == "passed"
    assert limit["executed"] == {"sequence_length": 140, "microbatch": 2,
                                 "gradient_accumulation": 2, "optimizer_steps": 1,
                                 "validation_microbatch": 2}
    assert [p["name"] for p in limit["phases"]] == [
        "load", "forward", "backward", "forward", "backward", "optimizer_step", "validation",
        "export"]
    assert limit["phases_missing"] == []
    # LoRA rank 4 on PEFT's llama default targets q_proj, v_proj: 2 layers × (A + B) each
    hidden, kv_out = 64, 2 * 8
    per_layer = 4 * (hidden + hidden) + 4 * (hidden + kv_out)
    assert r.evidence["model"]["trainable_parameters"] == 2 * per_layer
    # the adapters (bf16 under precision pure) are created in the load phase
    params = r.evidence["model"]["parameters"]
    load = limit["phases"][0]["cpu_live_tensor_peak_bytes"]
    assert load >= 2 * params + 32 + 2 * 2 * per_layer


def test_evidence_loads_and_applies_to_no_card_from_a_cpu_run(inference_run):
    sheet, r = inference_run
    ev = load_evidence(r.evidence_path.parent, sheet_sha256=sheet_sha256(sheet))
    assert len(ev.docs) == 1 and ev.ignored == ()
    doc = ev.docs[0]
    assert doc.scope.card is None and doc.scope.device_bytes is None
    assert doc.rungs[-1].executed["prompt_tokens"] == 160


@pytest.mark.parametrize("body, phase, points", [
    (INFERENCE, "load", "weights"), (INFERENCE, "prefill", "concurrency"),
    (INFERENCE, "decode", "concurrency"), (LORA, "forward", "activations"),
    (LORA, "backward", "microbatch"), (LORA, "optimizer_step", "optimizer states"),
    (LORA, "validation", "validation microbatch"),
    (LORA, "export", "merge / export copy of the weights")])
def test_injected_oom_at_each_phase_stops_the_ladder_there(tmp_path, body, phase, points):
    _, r = measure(tmp_path, body, inject=f"oom@{phase}")
    ev = r.evidence
    assert [g["name"] for g in ev["rungs"]] == ["short"]
    rung = ev["rungs"][0]
    assert rung["result"] == "oom" and rung["failed_phase"] == phase
    assert points in rung["failure"]["localization"]["points_to"]
    assert rung["failure"]["localization"]["alternatives"][0] == "a card with more memory " \
                                                                 "(same sheet)"
    assert rung["failure"]["allocator"]["unknown_reason"].startswith("no CUDA allocator")
    assert rung["phases"][-1]["name"] == phase  # counters up to the failure are kept
    assert ev["stopped_at"] == {"rung": "short", "result": "oom", "phase": phase}
    assert ev["injected_fault"] == f"oom@{phase}"
    events = [e["event"] for e in read_raw_notes(r.raw_notes_path)]
    assert "phase_oom" in events and "ladder_stopped" in events


@pytest.mark.parametrize("body, dimension, executed", [
    (INFERENCE, "prompt_tokens", 127), (INFERENCE, "new_tokens", 5),
    (LORA, "sequence_length", 127)])
def test_truncation_is_detected_from_what_the_model_received(tmp_path, body, dimension, executed):
    sheet, r = measure(tmp_path, body, inject=f"truncate@{dimension}")
    rung = r.evidence["rungs"][0]
    assert rung["result"] == "truncated"
    assert rung["truncation"] == {dimension: {"executed": executed,
                                              "planned": rung["planned"][dimension]}}
    assert r.evidence["stopped_at"]["result"] == "truncated"
    # an injected run never counts for a plan
    ev = load_evidence(r.evidence_path.parent, sheet_sha256=sheet_sha256(sheet))
    assert ev.docs == () and "injected fault" in ev.ignored[0][1]


def test_a_failure_that_is_not_memory_is_recorded_as_failed(tmp_path):
    _, r = measure(tmp_path, INFERENCE, inject="crash@decode")
    rung = r.evidence["rungs"][0]
    assert rung["result"] == "failed" and rung["failed_phase"] == "decode"
    assert "localization" not in rung["failure"]
    assert rung["executed"]["prompt_tokens"] == 128  # what ran before the failure stays


def test_evidence_file_is_json_with_scope_and_versions(inference_run):
    _, r = inference_run
    doc = json.loads(r.evidence_path.read_text())
    env = doc["scope"]["environment"]
    assert doc["kind"] == "measurement" and doc["version"].startswith("gpusizer ")
    assert env["torch"].startswith("2.") and env["transformers"] and env["peft"]
    assert env["cuda"] is None and env["driver"] == "580.159"  # the NVML stand-in's driver
    assert doc["device"]["unknown_reason"] == "no CUDA device: ran on cpu"
    assert doc["placement"]["world_size"] == 1
