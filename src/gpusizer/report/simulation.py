"""The ``gpusizer simulate`` document: ``estimate``'s JSON with simulated items, plus the
``simulation`` block (kernels, rules, what the simulation cannot see, difference to estimate)."""

from __future__ import annotations

from typing import Any

from .. import SCHEMA_VERSION, __version__
from .sections import Section

__all__ = ["simulate_document", "simulation_sections"]


def simulate_document(r) -> dict[str, Any]:
    """``gpusizer simulate --format json`` from a ``simulate.engine.SimulationResult``."""
    from ..stack import applied_versions
    from .json_report import REGISTRY_NOTE, memory_dict, model_dict
    trainable = r.trainable_parameters if r.sheet.task != "inference" else 0
    model = model_dict(r.sheet, r.facts, trainable)  # a model no family counts: the simulation's
    return {
        "schema_version": SCHEMA_VERSION,
        "gpusizer": {"version": __version__, "catalogs": [], "registry": REGISTRY_NOTE,
                     "stack": applied_versions(r.sheet.stack)},
        "sheet": r.sheet.model_dump(mode="json"),
        "model": {**model, "parameters": model["parameters"] or r.parameters or None},
        "card": r.card.name if r.card else None,
        "memory": memory_dict(r.memory),
        "offers": [],
        "simulation": {
            "engine": "gpusizer.simulate: transformers model code on torch FakeTensorMode (CPU), "
                      "live storages counted by a TorchDispatchMode, 512-byte CUDA rounding",
            "versions": r.versions,
            "config_source": r.config_source,
            "compute_capability": r.compute_capability,
            "attention": r.attention,
            "gpu_rules": ["sdpa routed to the card's kernel (flash / memory-efficient / math)",
                          "packed-sequence check answered as on a GPU (not packed)",
                          f"optimizer implementation {r.sheet.training.optimizer_impl}"
                          if r.sheet.training else "no optimizer (inference)"],
            "tracked_peak_bytes": r.tracked_peak_bytes,
            "seconds": round(r.seconds, 2),
            "not_seen": list(_not_seen()),
            "difference_to_estimate": r.comparison,
            "estimate_peak_bytes": r.estimate.peak_bytes if r.estimate is not None else None,
        },
    }


def _not_seen():
    from ..simulate.engine import NOT_SEEN
    return NOT_SEEN


def _cc(value: list[int] | None) -> str:
    """``[8, 0]`` as ``8.0`` (a compute capability in words, never a list)."""
    return "unknown" if not value else ".".join(str(v) for v in value)


def _b(n: int | None) -> str:
    from ..units import fmt_bytes
    return "unknown" if n is None else fmt_bytes(n)


def simulation_sections(doc: dict[str, Any]) -> list[Section]:
    """Markdown sections of the simulation block."""
    s = doc["simulation"]
    diff = s["difference_to_estimate"]
    rows = [(p["phase"], _b(p["simulated_peak_bytes"]), _b(p["estimate_peak_bytes"]),
             _b(p["difference_bytes"]))
            for p in diff["phases"]]
    item_rows = [(i["item"], i["phase"], _b(i["simulated_bytes"]),
                  ", ".join(i["estimate_items"]) or "none", _b(i["estimate_bytes"]))
                 for i in diff["items"]]
    kernels = [f"attention: {a['kernel']} × {a['calls']} calls ({a['reason']})"
               for a in s["attention"]] or ["attention: no SDPA call (eager attention)"]
    versions = ", ".join(f"{k} {v}" for k, v in s["versions"].items())
    lines = [f"versions: {versions}", f"config.json: {s['config_source']}",
             f"compute capability {_cc(s['compute_capability']['value'])}: "
             f"{s['compute_capability']['source']}", *kernels,
             *(f"GPU rule: {g}" for g in s["gpu_rules"]), f"simulated in {s['seconds']} s",
             *([diff["note"]] if diff.get("note") else [])]
    return [
        Section("Simulation vs estimate, per phase (per GPU)",
                ("phase", "simulated peak", "estimate peak", "difference (simulated − estimate)"),
                tuple(rows), tuple(lines)),
        Section("Simulation vs estimate, per item (per GPU)",
                ("item", "phase", "simulated", "estimate items", "estimate"), tuple(item_rows)),
        Section("What the simulation cannot see", (), (), tuple(s["not_seen"])),
    ]
