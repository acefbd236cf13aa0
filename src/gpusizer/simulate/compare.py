"""The difference between the simulation and ``estimate``, phase by phase and item by item.

Both sides are per GPU. A phase compares the two ``peak_bytes`` (null where the estimate does not
know it, e.g. training items the estimate does not size yet). An item compares a simulated
category with the sum of the estimate items it corresponds to (:data:`ITEM_MAPPING`); null when
the estimate has none of them or one of them is unknown. ``difference_bytes`` is simulated −
estimated.
"""

from __future__ import annotations

from ..memory.items import ItemName, MemoryEstimate

__all__ = ["ITEM_MAPPING", "compare_estimates", "no_estimate"]

ITEM_MAPPING: dict[ItemName, tuple[ItemName, ...]] = {
    "weights": ("weights", "prepare_kbit_upcast"),
    "quantization_metadata": ("quantization_metadata",),
    "lora_adapters": ("lora_adapters", "modules_to_save"),
    "buffers": ("rotary_cache", "adapter_buffers"),
    "gradients": ("gradients",),
    "optimizer_states": ("optimizer_states",),
    "kv_cache": ("kv_cache",),
    "recurrent_state": ("recurrent_state",),
    "activations": ("activations", "logits", "autocast_weight_copies", "adapter_activations"),
    "temporaries": ("backward_working", "optimizer_step_temporary", "validation_working",
                    "prefill_working", "decode_working", "kv_cache_growth_transient",
                    "load_conversion_transient"),
}
"""Simulated item (one tracker category) → the ``estimate`` items that size the same memory.

``activations`` (what outlives the phase that made it: saved for backward, logits) and
``temporaries`` (made and freed within the phase) split the live set by lifetime; the estimate's
``*_working`` items are working sets freed within their phase, so they map to temporaries. Where
the two split a phase differently, compare ``working_total`` (activations + temporaries against
all of those items)."""


def _sum(est: MemoryEstimate, names: tuple[str, ...], phase: str | None) -> tuple[int | None, list]:
    found = [it for it in est.items if it.name in names]
    if not found:
        return None, []
    total = 0
    for it in found:
        b = it.bytes if phase is None else it.bytes_in(phase)
        if b is None:
            return None, [it.name for it in found]
        total += b
    return total, [it.name for it in found]


def compare_estimates(simulated: MemoryEstimate, estimated: MemoryEstimate) -> dict:
    """Phase by phase and item by item, simulated − estimated (bytes, ints; null when unknown)."""
    est_phases = {p.name: p for p in estimated.phases}
    phases = []
    for p in simulated.phases:
        e = est_phases.get(p.name)
        e_peak = e.peak_bytes if e is not None else None
        phases.append({"phase": p.name, "simulated_peak_bytes": p.peak_bytes,
                       "estimate_peak_bytes": e_peak,
                       "difference_bytes": _diff(p.peak_bytes, e_peak),
                       "estimate_unknown_items": list(e.unknown_items) if e else []})
    for name, e in est_phases.items():
        if name not in {p.name for p in simulated.phases}:
            phases.append({"phase": name, "simulated_peak_bytes": None,
                           "estimate_peak_bytes": e.peak_bytes, "difference_bytes": None,
                           "estimate_unknown_items": list(e.unknown_items),
                           "note": "not simulated"})
    items = []
    sim_names = [it.name for it in simulated.items if it.provenance == "simulated"]
    for name in list(ITEM_MAPPING) + ["working_total"]:
        if name == "working_total":
            group_sim = ("activations", "temporaries")
            group_est = ITEM_MAPPING["activations"] + ITEM_MAPPING["temporaries"]
        else:
            if name not in sim_names:
                continue
            group_sim, group_est = (name,), ITEM_MAPPING[name]
        for phase in [p.name for p in simulated.phases]:
            s_items = [it for it in simulated.items if it.name in group_sim]
            if not s_items:
                continue
            s = sum(it.bytes_in(phase) or 0 for it in s_items)
            e, used = _sum(estimated, group_est, phase)
            if s == 0 and not e:
                continue
            items.append({"item": name, "phase": phase, "simulated_bytes": s,
                          "estimate_items": used, "estimate_bytes": e,
                          "difference_bytes": _diff(s, e)})
    return {"phases": phases, "items": items,
            "item_mapping": {k: list(v) for k, v in ITEM_MAPPING.items()}}


def no_estimate(note: str) -> dict:
    """The comparison of a simulation without an estimate (no family knows the architecture):
    no phase nor item to compare, and ``note`` saying why."""
    return {"phases": [], "items": [], "item_mapping": {k: list(v) for k, v in ITEM_MAPPING.items()},
            "note": note}


def _diff(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a - b
