"""The other ways a sheet can run: real safetensors weights, full fine-tuning under amp with
checkpointing, LoRA on all linear layers with Adafactor, a static cache with every logit."""

from __future__ import annotations

import torch

from gpusizer.measure import run_measurement
from gpusizer.sheet import parse_sheet

from .conftest import TINY

BUFFERS = 32  # rotary inv_freq + original_inv_freq: 2 × fp32 × head_dim / 2 (head_dim 8)
PARAMS = 172_352  # the tiny model's parameters (checked below against the model itself)


def run(tmp_path, body, *, model=None, random_weights=True):
    sheet = parse_sheet({"model": model or {"path": str(TINY)}, **body})
    return run_measurement(sheet, tmp_path / "out", random_weights=random_weights,
                           device="cpu").evidence


def test_real_weights_are_read_from_safetensors_and_counted(tmp_path):
    from transformers import AutoConfig, AutoModelForCausalLM
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(TINY),
                                             dtype=torch.bfloat16)
    assert sum(p.numel() for p in model.parameters()) == PARAMS
    model.save_pretrained(tmp_path / "ckpt", safe_serialization=True)
    assert not list((tmp_path / "ckpt").glob("*.bin"))
    ev = run(tmp_path, {"task": "inference", "inference": {"prompt_tokens": 64,
                                                            "new_tokens": 3}},
             model={"path": str(tmp_path / "ckpt")}, random_weights=False)
    (limit,) = ev["rungs"]
    assert ev["model"]["weights"] == "real" and limit["result"] == "passed"
    # memory-mapped safetensors are adopted into the live-tensor count once loaded
    assert limit["phases"][0]["cpu_live_tensor_peak_bytes"] == 2 * PARAMS + BUFFERS


def test_full_fine_tuning_under_amp_keeps_fp32_parameters(tmp_path):
    ev = run(tmp_path, {"task": "full", "weights": "bf16",
                        "training": {"sequence_length": 96, "microbatch": 1, "precision": "amp",
                                     "gradient_checkpointing": True,
                                     "optimizer": "sgd-momentum"}})
    (limit,) = ev["rungs"]
    assert limit["result"] == "passed"
    assert ev["model"]["dtype"] == "fp32" and ev["model"]["compute_dtype"] == "bf16"
    assert ev["model"]["trainable_parameters"] == PARAMS
    assert limit["phases"][0]["cpu_live_tensor_peak_bytes"] == 4 * PARAMS + BUFFERS
    # SGD momentum: one fp32 buffer per parameter appears at the first update
    step = next(p for p in limit["phases"] if p["name"] == "optimizer_step")
    assert step["cpu_live_tensor_peak_bytes"] >= 4 * PARAMS + 4 * PARAMS + 4 * PARAMS


def test_lora_all_linear_with_adafactor(tmp_path):
    ev = run(tmp_path, {"task": "lora", "training": {
        "sequence_length": 96, "microbatch": 2, "optimizer": "adafactor",
        "lora": {"rank": 2, "targets": "all-linear"}}})
    assert [r["result"] for r in ev["rungs"]] == ["passed", "passed"]
    # rank × (in + out) per linear: q 64+64, k 64+16, v 64+16, o 64+64, gate/up 64+224,
    # down 224+64 → 1280 per layer per rank; 2 layers, rank 2
    assert ev["model"]["trainable_parameters"] == 2 * 2 * 1280


def test_static_cache_with_every_logit(tmp_path):
    ev = run(tmp_path, {"task": "inference", "inference": {
        "prompt_tokens": 64, "new_tokens": 4, "concurrency": 2, "cache": "static",
        "logits": "all"}})
    short, limit = ev["rungs"]
    assert limit["executed"] == {"prompt_tokens": 64, "new_tokens": 4, "concurrency": 2,
                                 "decode_forwards": 3}
    # logits of every prompt position: 2 × 64 × 512 vocabulary in bf16 at least, at prefill
    prefill = limit["phases"][1]
    assert prefill["cpu_live_tensor_peak_bytes"] >= 2 * PARAMS + 2 * 64 * 512 * 2
