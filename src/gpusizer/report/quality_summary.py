"""What the quality commands print: the lock (``quality lock``), and the comparison with the
files written (``quality run``, ``quality import``). Regressions are shown in percent."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..quality.criteria_lock import LockResult

__all__ = ["render_lock_summary", "render_quality_run_summary", "render_lm_eval_import_summary"]


def render_lock_summary(r: LockResult) -> str:
    """Whether the lock was written or found unchanged, its hash and time, the reference, the
    metric and its tolerance, and the frozen corpus (SHA-256, bytes, samples)."""
    c = r.lock
    return (f"{'locked' if r.created else 'already locked, unchanged'}: {r.path}\n"
            f"  criteria_sha256 {c.criteria_sha256} at {c.locked_at}\n"
            f"  reference {c.reference_format}; metric {c.criteria['quality']['metric']} "
            f"({c.direction} is better); max_regression "
            f"{c.criteria['quality']['max_regression']}"
            f"\n  corpus {c.corpus.file}: sha256 {c.corpus.sha256}, {c.corpus.size_bytes} B, "
            f"{c.corpus.samples} samples\n")


def render_quality_run_summary(evidence: dict[str, Any], evidence_file: Path,
                               samples_file: Path) -> str:
    """The metric of the reference and the candidate, the regression against the locked
    maximum, passed or FAILED (a round-trip says it decides nothing), and the files written."""
    e = evidence
    return (f"{e['metric']}: reference {e['reference_format']} {e['reference_value']:.6g}, "
            f"candidate {e['candidate_format']} {e['candidate_value']:.6g}; regression "
            f"{100 * e['regression']:+.3f}% vs max {100 * e['max_regression']:g}%: "
            f"{'passed' if e['passed'] else 'FAILED'}"
            + (f" (a simulation of {e['proxy_for']}: it does not decide the criterion)"
               if e.get("proxy_for") else "")
            + f"\nwrote {evidence_file} and {samples_file}\n")


def render_lm_eval_import_summary(doc: dict[str, Any], path: Path) -> str:
    """The imported comparison (reference, candidate, regression, passed or FAILED) and the
    evidence file written."""
    return (f"{doc['metric']}: reference {doc['reference_value']:.6g}, candidate "
            f"{doc['candidate_format']} {doc['candidate_value']:.6g}; regression "
            f"{100 * doc['regression']:+.3f}%: {'passed' if doc['passed'] else 'FAILED'}\n"
            f"wrote {path}\n")
