"""``gpusizer quality``: lock the criteria, evaluate a candidate format, or import
lm-evaluation-harness results as quality evidence. ``run`` needs the quality extra (torch),
imported only when called; lock and import never import torch."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import QualityError
from ..quality.criteria_lock import LockResult, check_lock, lock_criteria, read_lock
from ..quality.evidence_doc import quality_evidence, refuse_existing, write_json
from ..quality.lm_eval_import import check_lm_eval_match, read_lm_eval_results
from ..sheet import WEIGHT_FORMATS, Sheet

if TYPE_CHECKING:
    from ..quality.evaluate import QualityRun

__all__ = ["lock_quality", "run_quality", "import_quality"]


def lock_quality(sheet: Sheet, *, lock_path: Path, base_dir: Path | None = None,
                 now: dt.datetime | None = None) -> LockResult:
    """``gpusizer quality lock``: write the criteria to ``lock_path`` or confirm an identical
    lock (``quality.criteria_lock.lock_criteria``, whose errors it raises)."""
    return lock_criteria(sheet, lock_path=lock_path, base_dir=base_dir, now=now)


def run_quality(sheet: Sheet, *, candidate: str, lock_path: Path, out_dir: Path,
                base_dir: Path | None = None, device: str | None = None,
                today: dt.date | None = None) -> QualityRun:
    """``gpusizer quality run``: evaluate the locked reference and ``candidate`` on the frozen
    corpus (``quality.evaluate.run_quality``, the quality extra, whose errors it raises)."""
    from ..quality.evaluate import run_quality as evaluate
    return evaluate(sheet, candidate=candidate, lock_path=lock_path, out_dir=out_dir,
                    base_dir=base_dir, device=device, today=today)


def import_quality(sheet: Sheet, results: Path, *, candidate: str, lock_path: Path, out_dir: Path,
                   base_dir: Path | None = None, today=None) -> tuple[dict, Path]:
    """Turn a candidate format's lm-eval results file into quality evidence.

    The reference value is the locked one (the results file named by ``quality.corpus``).

    Returns:
        ``(evidence document, file written)``: ``out_dir/quality-<candidate>-vs-<reference>.json``.

    Raises:
        QualityError: no lock, a metric that is not ``lm_eval:``, an unknown candidate format.
        CriteriaMovedError: the sheet's criteria moved since the lock.
        LmEvalMismatchError: task, version, n-shot, sample count or metric key differ.
        EvidenceError: a malformed results file.
    """
    lock = read_lock(lock_path)
    check_lock(sheet, lock, base_dir=base_dir)
    metric = sheet.quality.metric
    if not metric.startswith("lm_eval:") or lock.lm_eval is None:
        raise QualityError(f"quality import reads lm-evaluation-harness results; the sheet's "
                           f"metric is {metric}: use `gpusizer quality run`",
                           field="quality.metric", value=metric)
    if candidate not in WEIGHT_FORMATS:
        raise QualityError(f"expected one of {', '.join(WEIGHT_FORMATS)}, got {candidate!r}",
                           field="--candidate", value=candidate)
    if candidate == lock.reference_format:
        raise QualityError(f"the candidate is the reference format {candidate}: nothing to "
                           "compare", field="--candidate", value=candidate)
    refuse_existing(Path(out_dir) / f"quality-{candidate}-vs-{lock.reference_format}.json")
    res = read_lm_eval_results(Path(results), metric)
    check_lm_eval_match(res, lock.lm_eval)
    version = f" {res.lm_eval_version}" if res.lm_eval_version else ""
    doc = quality_evidence(
        sheet=sheet, lock=lock, candidate_format=candidate,
        candidate_implementation=f"lm-evaluation-harness{version}, model_args {res.model_args!r}"
                                 " (format as declared by the importer)",
        reference_implementation=f"lm-evaluation-harness, model_args "
                                 f"{lock.lm_eval.get('model_args')!r}",
        reference_value=float(lock.lm_eval["value"]), candidate_value=res.value,
        document=str(results), source="lm-evaluation-harness results import",
        extra={"lm_eval": res.as_dict(), "samples": res.samples}, today=today)
    path = write_json(doc, Path(out_dir) / f"quality-{candidate}-vs-{lock.reference_format}.json")
    return doc, path
