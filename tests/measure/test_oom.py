"""First violation (R10): an out-of-memory is recognised, localised by phase, and the
alternatives change one thing at a time."""

from __future__ import annotations

import pytest
import torch

from gpusizer.measure.oom import is_oom, localize
from gpusizer.sheet import parse_sheet

INF = parse_sheet({"model": {"parameters": 8_000_000_000}, "weights": "bf16", "task": "inference",
                   "inference": {"prompt_tokens": 7168, "new_tokens": 1024, "concurrency": 8}})
# a training sheet needs an architecture (a bare count is refused); localize reads no model facts
TRAIN = parse_sheet({"model": {"id": "test/model"}, "weights": "bf16", "task": "lora",
                     "training": {"sequence_length": 4096, "microbatch": 4,
                                  "gradient_accumulation": 2, "export": "merged"}})


def test_is_oom():
    assert is_oom(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert is_oom(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to "
                               "allocate 1099511627776 bytes"))
    assert not is_oom(RuntimeError("shape mismatch"))
    assert not is_oom(ValueError("out of memory"))


@pytest.mark.parametrize("phase, sheet, points, alternative", [
    ("load", INF, "weights", "weights: int8 or nf4 (bitsandbytes) — changes outputs"),
    ("prefill", INF, "concurrency", "inference.concurrency: 8 → 4"),
    ("decode", INF, "context (KV cache of prompt + new tokens)", "inference.kv_cache_dtype: fp8"),
    ("forward", TRAIN, "activations", "training.gradient_checkpointing: true"),
    ("backward", TRAIN, "microbatch", "training.microbatch: 4 → 2 with gradient_accumulation "
                                      "2 → 4"),
    ("optimizer_step", TRAIN, "optimizer states", "training.optimizer: adamw-8bit"),
    ("validation", TRAIN, "validation microbatch", "training.validation_microbatch: 4 → 2"),
    ("export", TRAIN, "merge / export copy of the weights", "training.export: adapter"),
])
def test_localization_per_phase(phase, sheet, points, alternative):
    loc = localize(phase, sheet)
    assert points in loc.points_to
    assert any(a.startswith(alternative) for a in loc.alternatives), loc.alternatives


def test_a_shorter_length_is_offered_only_when_negotiable():
    assert not any("shorter" in a for a in localize("prefill", INF).alternatives)
    neg = parse_sheet({"model": {"parameters": 8_000_000_000}, "weights": "bf16",
                       "task": "inference", "inference": {"prompt_tokens": 7168,
                                                          "new_tokens": 1024,
                                                          "length_negotiable": True}})
    assert any("shorter prompt" in a for a in localize("prefill", neg).alternatives)
