"""The summary evidence file of a measurement (CONTRACT.md "Evidence files", kind
``measurement``; the fields gpusizer adds are in docs/evidence.md).

The raw notes stay the record (R14); this file summarises them: sheet hash, scope (card, device
bytes, environment with versions), placement, rungs with executed dimensions, failures and
per-phase counters, and the peaks — each counter on its own, never two added together.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from .. import SCHEMA_VERSION

__all__ = ["peaks", "build_evidence", "write_evidence", "PEAK_FIELDS"]

PEAK_FIELDS = ("max_memory_allocated_bytes", "max_memory_reserved_bytes", "non_torch_bytes",
               "nvml_used_bytes", "nvml_device_used_bytes", "cpu_live_tensor_peak_bytes",
               "cpu_rss_peak_bytes")


def peaks(rungs: list[dict]) -> list[dict]:
    """Per rung and per GPU (rank), each counter's largest value over the phases and the phase
    it came from; a counter unknown in every phase is ``None`` with the reason."""
    out = []
    for rung in rungs:
        by_gpu: dict[tuple[int, int], list[dict]] = {}
        for ph in rung["phases"]:
            by_gpu.setdefault((ph.get("rank", 0), ph["gpu"]), []).append(ph)
        for (rank, gpu), phs in sorted(by_gpu.items()):
            entry: dict = {"rung": rung["name"], "rank": rank, "gpu": gpu}
            for key in PEAK_FIELDS:
                known = [(ph[key], ph["name"]) for ph in phs if ph.get(key) is not None]
                if known:
                    value, phase = max(known, key=lambda kv: kv[0])
                    entry[key] = {"bytes": value, "phase": phase,
                                  "counter": phs[0]["counters"].get(key)}
                else:
                    entry[key] = {"bytes": None,
                                  "unknown_reason": phs[0]["unknown"].get(key, "not measured")}
            out.append(entry)
    return out


def build_evidence(*, sheet_sha256: str, version: str, raw_notes: list[str], identity: dict,
                   environment: dict, provider: str | None, offer_id: str | None,
                   model: dict, placement: dict, rungs: list[dict], stopped: dict | None,
                   injected: str | None, date: dt.date | None = None) -> dict:
    """The evidence document (a plain dict, JSON-ready)."""
    scope = {"offer_id": offer_id, "provider": provider, "card": identity.get("card"),
             "device_bytes": identity.get("device_bytes"), "environment": environment}
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "measurement",
        "document": raw_notes[0],
        "raw_notes": raw_notes,
        "version": version,
        "date": (date or dt.datetime.now(dt.timezone.utc).date()).isoformat(),
        "scope": scope,
        "sheet_sha256": sheet_sha256,
        "device": identity,
        "model": model,
        "placement": placement,
        "rungs": rungs,
        "stopped_at": stopped,
        "peaks": peaks(rungs),
        "injected_fault": injected,
    }


def write_evidence(doc: dict, path: Path) -> Path:
    """Write ``doc`` as JSON atomically (a temporary file renamed over ``path``)."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
