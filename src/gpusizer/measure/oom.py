"""The first violation (R10, R13): recognise an out-of-memory, localise it, list one-change
alternatives — printed, never applied.

Localisation by phase (R10): at ``load`` the weights, their format or a temporary allocation; at
``prefill`` / ``decode`` the context and the concurrency; at ``forward`` / ``backward`` the
microbatch, the activations and the compute strategy (checkpointing); at ``optimizer_step`` the
optimizer states; at ``validation`` the validation microbatch; at ``export`` the merge's copy.

Each alternative changes exactly one thing and keeps the output requirements (R13): a shorter
length is offered only when ``inference.length_negotiable`` is true; a different format carries
the reminder that quality must be re-checked.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..formats import FORMATS
from ..memory.engines import ENGINES
from ..sheet import Sheet

__all__ = ["is_oom", "Localization", "localize", "allocator_numbers"]


def is_oom(exc: BaseException) -> bool:
    """True for ``torch.OutOfMemoryError`` (CUDA) and the CPU allocator's refusal.

    The CPU allocator raises a plain ``RuntimeError`` whose message starts
    ``DefaultCPUAllocator: can't allocate memory`` (c10/core/impl/alloc_cpu.cpp).
    """
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    return isinstance(exc, (RuntimeError, MemoryError)) and (
        isinstance(exc, MemoryError) or "can't allocate memory" in str(exc)
        or "out of memory" in str(exc).lower())


@dataclass(frozen=True)
class Localization:
    """Where an out-of-memory points (R10) and the one-change alternatives (R13)."""

    phase: str
    points_to: tuple[str, ...]
    alternatives: tuple[str, ...]

    def as_json(self) -> dict:
        return {"phase": self.phase, "points_to": list(self.points_to),
                "alternatives": list(self.alternatives)}


_POINTS_TO = {
    "load": ("weights", "weight format", "temporary allocation while loading"),
    "prefill": ("context (prompt tokens)", "concurrency"),
    "decode": ("context (KV cache of prompt + new tokens)", "concurrency"),
    "forward": ("microbatch", "activations", "compute strategy (gradient checkpointing)"),
    "backward": ("microbatch", "activations", "compute strategy (gradient checkpointing)"),
    "optimizer_step": ("optimizer states", "trained parameters"),
    "validation": ("validation microbatch", "activations"),
    "export": ("merge / export copy of the weights",),
}


def _quantized_successors(weights: str) -> tuple[str, ...]:
    """The quantized formats one step lower than a 16/32-bit ``weights`` (the registry's
    ``lower``; ``auto``: those every 16/32-bit format lists), else ()."""
    dense = [r for r in FORMATS.values() if r.dense]
    if weights == "auto":
        common = [n for n in dense[0].lower if all(n in r.lower for r in dense)]
    elif FORMATS[weights].dense:
        common = list(FORMATS[weights].lower)
    else:
        return ()
    return tuple(n for n in common if not FORMATS[n].dense)


def localize(phase: str, sheet: Sheet) -> Localization:
    """The causes ``phase`` points to and the one-change alternatives for ``sheet``."""
    alts: list[str] = ["a card with more memory (same sheet)"]
    quality = " — changes outputs: re-check quality (R10)"
    if phase == "load":
        lower = _quantized_successors(sheet.weights)
        if lower:
            families = sorted({FORMATS[n].family for n in lower})
            alts.append(f"weights: {' or '.join(lower)} ({', '.join(families)})" + quality)
        alts.append("load with a smaller temporary footprint (safetensors straight to the GPU, "
                    "no fp32 copy)")
        if sheet.placement.gpus == 1:
            alts.append("placement: 2 GPUs (tensor-parallel or device-map; a documented "
                        "placement is then needed)")
    elif phase in ("prefill", "decode") and sheet.inference is not None:
        inf = sheet.inference
        if inf.concurrency > 1:
            half = max(inf.concurrency // 2, 1)
            alts.append(f"inference.concurrency: {inf.concurrency} → {half}"
                        " (the other sequences queue: throughput changes, the need does not)")
        if not inf.kv_cache_dtype.startswith("fp8"):
            alts.append("inference.kv_cache_dtype: fp8" + quality)
        if "cache" in ENGINES[inf.engine].KEYS and inf.cache == "dynamic":
            alts.append("inference.cache: static (no growth copies during decode)")
        if inf.length_negotiable:
            alts.append("a shorter prompt (length_negotiable is true)")
    elif phase in ("forward", "backward", "validation") and sheet.training is not None:
        t = sheet.training
        if phase == "validation":
            vm = t.validation_microbatch or t.microbatch
            if vm > 1:
                alts.append(f"training.validation_microbatch: {vm} → {max(vm // 2, 1)}")
        else:
            if t.microbatch > 1:
                alts.append(f"training.microbatch: {t.microbatch} → {t.microbatch // 2} with "
                            f"gradient_accumulation {t.gradient_accumulation} → "
                            f"{t.gradient_accumulation * 2} (same examples per update)")
            if not t.gradient_checkpointing:
                alts.append("training.gradient_checkpointing: true (recompute activations)")
            if sheet.attention == "eager":
                alts.append("attention: sdpa (no attention-probability matrix kept)")
    elif phase == "optimizer_step" and sheet.training is not None:
        t = sheet.training
        if t.optimizer in ("adamw", "paged-adamw-32bit"):
            alts.append("training.optimizer: adamw-8bit (bitsandbytes)" + quality)
        if t.optimizer_impl == "foreach":
            alts.append("training.optimizer_impl: for-loop (no foreach temporaries)")
    elif phase == "export" and sheet.training is not None:
        alts.append("training.export: adapter (save the adapter; merge elsewhere)")
    return Localization(phase, _POINTS_TO.get(phase, ("unknown phase",)), tuple(alts))


def allocator_numbers(device: torch.device) -> dict[str, int | str | None]:
    """The allocator's own figures at the failure (``torch.cuda.memory_stats`` keys kept verbatim,
    bytes), or why there are none (CPU)."""
    if device.type != "cuda":
        return {"unknown_reason": f"no CUDA allocator on {device}: see the CPU counters"}
    stats = torch.cuda.memory_stats(device)
    keep = ("allocated_bytes.all.current", "allocated_bytes.all.peak",
            "reserved_bytes.all.current", "reserved_bytes.all.peak",
            "inactive_split_bytes.all.current", "num_alloc_retries", "num_ooms")
    out: dict[str, int | str | None] = {k: int(stats[k]) for k in keep if k in stats}
    free, total = torch.cuda.mem_get_info(device)
    out["mem_get_info_free_bytes"] = int(free)
    out["mem_get_info_total_bytes"] = int(total)
    return out
