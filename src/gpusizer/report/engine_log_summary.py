"""What ``gpusizer import vllm-log|sglang-log`` prints: the figures read from the log, the lines
they came from, the settings the log left unstated, and the evidence file written."""

from __future__ import annotations

from pathlib import Path

from ..units import fmt_bytes

__all__ = ["render_engine_log_summary"]

_SHOWN = (("model", "model"), ("engine_mode", "engine mode"),
          ("tensor_parallel_size", "tensor-parallel size"),
          ("gpu_memory_utilization", "gpu_memory_utilization"),
          ("mem_fraction_static", "mem_fraction_static"), ("kv_cache_dtype", "KV dtype"),
          ("max_model_len", "max_model_len (tokens)"), ("block_size", "block size (tokens)"),
          ("kv_blocks", "KV blocks"), ("kv_tokens", "KV tokens"),
          ("max_concurrency", "maximum concurrency at max_model_len"),
          ("max_running_requests", "max_running_requests"), ("max_num_seqs", "max_num_seqs"))
_BYTES = (("weights_bytes", "weights"), ("kv_cache_bytes", "KV cache"),
          ("non_torch_bytes", "non-PyTorch"), ("total_bytes", "GPU total (CUDA)"))


def render_engine_log_summary(doc: dict, path: Path) -> str:
    """Markdown lines: one per figure found, then the line kinds found and the file written."""
    lines = [f"# gpusizer import — {doc['version']} on {doc['scope']['card']}", ""]
    if not doc["started"]:
        lines.append(f"- did not start: {doc['refusal']}")
    for key, label in _SHOWN:
        if doc.get(key) is not None:
            lines.append(f"- {label}: {doc[key]}")
    for key, label in _BYTES:
        if doc.get(key) is not None:
            lines.append(f"- {label}: {fmt_bytes(doc[key])} (as the log prints it, "
                         f"± {fmt_bytes(doc['gib_rounding_bytes'])})")
    found = ", ".join(f"{k} (line {v[0]})" for k, v in doc["lines_found"].items())
    lines += ["", f"Lines found: {found}."]
    if doc["settings_unstated"]:
        lines.append("Not in the log (taken as the sheet's): "
                     + ", ".join(doc["settings_unstated"]) + ".")
    lines += [f"Proves: {doc['proves']}.", f"Wrote {path}", ""]
    return "\n".join(lines)
