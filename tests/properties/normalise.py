"""The sheet as the plan should echo it, written from CONTRACT.md ("The workload sheet": every
value shown is the default; "Evidence files": memory sizes as integer bytes) — not from
gpusizer's code."""

from __future__ import annotations

import copy
from typing import Any

from .oracle import size_bytes

TOP = {"attention": "sdpa", "reserve": "0 B", "margin": "5%",
       "quantization": {"prequantized": "auto", "group_size": 128, "double_quant": False,
                        "compute_dtype": "bf16"},
       "placement": {"gpus": 1, "strategy": "single"}}
BLOCKS = {
    "model": {"revision": "main"},
    "inference": {"engine": "transformers", "concurrency": 1, "kv_cache_dtype": "auto",
                  "cache": "dynamic", "logits": "last", "length_negotiable": False,
                  "gpu_memory_utilization": 0.9, "max_num_batched_tokens": 8192},
    "training": {"gradient_accumulation": 1, "gradient_checkpointing": False,
                 "precision": "pure", "optimizer": "adamw", "optimizer_impl": "foreach",
                 "validation_microbatch": 0, "export": "none"},
    "quality": {"metric": "perplexity", "reference": "auto", "max_regression": 0.02},
}
SIZES = {("reserve",), ("requirements", "host_ram"), ("requirements", "storage")}


def normalise(sheet: dict[str, Any]) -> dict[str, Any]:
    """Defaults filled (blocks only when present), sizes as integer bytes; a margin in % stays
    a percentage, a margin with a unit becomes bytes."""
    out = copy.deepcopy(sheet)
    for k, v in TOP.items():
        if k not in out:
            out[k] = copy.deepcopy(v)
        elif isinstance(v, dict):
            out[k] = {**v, **out[k]}
    for block, defaults in BLOCKS.items():
        if out.get(block) is not None:
            out[block] = {**defaults, **out[block]}
    for path in SIZES:
        node = out
        for p in path[:-1]:
            node = node.get(p) or {}
        if node.get(path[-1]) is not None:
            node[path[-1]] = size_bytes(node[path[-1]])
    if isinstance(out["margin"], str) and not out["margin"].endswith("%"):
        out["margin"] = size_bytes(out["margin"])
    return out


def differences(expected: Any, echoed: Any, path: str = "") -> list[str]:
    """Where the echo differs from what was expected (keys the echo adds are extensions)."""
    if isinstance(expected, dict):
        if not isinstance(echoed, dict):
            return [f"{path}: {echoed!r} is not a mapping"]
        out = []
        for k, v in expected.items():
            if k not in echoed:
                out.append(f"{path}.{k}: missing from the echo")
            else:
                out += differences(v, echoed[k], f"{path}.{k}")
        return out
    if expected != echoed or type(expected) is bool and type(echoed) is not bool:
        return [f"{path}: echoed {echoed!r}, expected {expected!r}"]
    return []
