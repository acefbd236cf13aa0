"""What ``gpusizer measure`` prints: each rung's result and executed dimensions, each phase's
counters under their own names, and at the first violation where it points and the one-change
alternatives — printed, never applied (R10, R13)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["render_measure_summary"]

_SHOWN = ("max_memory_allocated_bytes", "max_memory_reserved_bytes", "non_torch_bytes",
          "nvml_used_bytes", "cpu_live_tensor_peak_bytes", "cpu_rss_peak_bytes")


def render_measure_summary(doc: dict, evidence_path: Path | None) -> str:
    """Plain text for the terminal (Markdown-compatible)."""
    scope = doc["scope"]
    where = scope.get("card") or f"no GPU ({doc['scope']['environment'].get('device_type')})"
    lines = [f"# gpusizer measure — {where}"
             + (f", device {scope['device_bytes']} B" if scope.get("device_bytes") else ""), ""]
    for rung in doc["rungs"]:
        ex = ", ".join(f"{k}={v}" for k, v in rung["executed"].items())
        lines.append(f"## rung {rung['name']}: {rung['result']}"
                     + (f" in phase {rung['failed_phase']}" if rung["failed_phase"] else ""))
        lines.append(f"- planned: {', '.join(f'{k}={v}' for k, v in rung['planned'].items())}")
        lines.append(f"- executed: {ex or 'nothing recorded'}")
        for key, gap in (rung.get("truncation") or {}).items():
            lines.append(f"- truncated: {key} executed {gap['executed']} < planned "
                         f"{gap['planned']}: this run does not validate the workload")
        for ph in rung["phases"]:
            shown = [f"{k.removesuffix('_bytes')} {ph[k]} B" for k in _SHOWN
                     if ph.get(k) is not None]
            lines.append(f"  - {ph['name']} (rank {ph.get('rank', 0)}, {ph['device']}): "
                         + ("; ".join(shown) or "no counter known"))
        loc = (rung.get("failure") or {}).get("localization")
        if rung.get("failure"):
            lines.append(f"- failure: {rung['failure']['message']}")
        if loc:
            lines.append(f"- points to: {', '.join(loc['points_to'])}")
            lines.append("- one change at a time (not applied; re-check quality and coverage):")
            lines += [f"  - {a}" for a in loc["alternatives"]]
        lines.append("")
    stop = doc.get("stopped_at")
    lines.append("ladder stopped at the first violation: " + (
        f"rung {stop['rung']} {stop['result']}" + (f" in {stop['phase']}" if stop["phase"] else "")
        if stop else "none — every rung passed"))
    lines.append("counters are never added together; CUDA counters are absent on the CPU "
                 "(no CUDA figure is invented)")
    if evidence_path is not None:
        lines.append(f"evidence: {evidence_path}")
    lines.append(f"raw notes: {', '.join(doc['raw_notes'])}")
    return "\n".join(lines) + "\n"
