"""Quality criteria fixed before comparing (R2: "threshold fixed before comparing").

``gpusizer quality lock SHEET`` writes the sheet's quality criteria — the model, the reference
format (``auto`` resolved to the checkpoint's stored format), the frozen corpus (SHA-256, size,
sample count), the metric and ``max_regression`` — with their hash and the time. Every later
run or import checks the sheet against the lock and refuses criteria that moved (a threshold
changed after a result was seen) or a corpus file that changed, naming what differs.

No torch here: locking reads config.json (for ``reference: auto``) and hashes a file.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from .. import __version__
from ..errors import CriteriaMovedError, QualityError
from ..evidence.regression import direction_of
from ..input_files import parse_json, read_input
from ..sheet import Sheet, quality_criteria, quality_sha256
from .corpus import file_sha256, read_corpus

__all__ = ["CorpusFacts", "CriteriaLock", "LockResult", "default_lock_path", "corpus_path",
           "resolve_reference", "metric_direction", "lock_criteria", "read_lock", "check_lock"]


class CorpusFacts(BaseModel):
    """The frozen corpus as locked: ``file`` (as the sheet names it), ``sha256`` (hex of its
    bytes), ``size_bytes``, ``samples`` (lines; for lm-eval, the task's documents)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    file: str
    sha256: str
    size_bytes: int
    samples: int


class CriteriaLock(BaseModel):
    """A lock file (``*.quality-lock.json``).

    Attributes:
        kind: always ``quality_criteria`` (not an evidence kind: keep it out of --evidence).
        criteria: ``sheet.quality_criteria`` — model and quality block, defaults filled in.
        criteria_sha256: ``sheet.quality_sha256``: quality evidence must carry it.
        reference_format: the reference format, ``auto`` resolved.
        direction: ``lower`` (perplexity) or ``higher`` is better.
        corpus: the frozen corpus's identity.
        lm_eval: for ``lm_eval:`` metrics, the reference results (task, version, n_shot,
            samples, metric_key, value, …) every candidate must match.
        locked_at: ISO 8601 UTC time of the lock.
        locked_by: ``gpusizer <version>``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["quality_criteria"] = "quality_criteria"
    criteria: dict[str, Any]
    criteria_sha256: str
    reference_format: str
    direction: Literal["lower", "higher"]
    corpus: CorpusFacts
    lm_eval: dict[str, Any] | None = None
    locked_at: str
    locked_by: str


@dataclass(frozen=True)
class LockResult:
    """``lock_criteria``'s answer: the lock, its file, and whether this call created it."""

    lock: CriteriaLock
    path: Path
    created: bool


def default_lock_path(sheet_path: Path) -> Path:
    """``<sheet folder>/<sheet stem>.quality-lock.json``."""
    p = Path(sheet_path)
    return p.with_name(p.stem + ".quality-lock.json")


def corpus_path(sheet: Sheet, base_dir: Path | None) -> Path:
    """The corpus file; a relative ``quality.corpus`` is read from the sheet's folder."""
    assert sheet.quality is not None
    p = Path(sheet.quality.corpus).expanduser()
    return p if p.is_absolute() or base_dir is None else Path(base_dir) / p


def metric_direction(metric: str, lm_eval_higher: bool | None = None) -> str:
    """``lower`` for perplexity; ``higher`` for exact_match and lm-eval metrics (unless the
    results file marks the metric lower-is-better): ``evidence.regression.direction_of``."""
    return direction_of(metric, lm_eval_higher)


def resolve_reference(sheet: Sheet, *, base_dir: Path | None = None) -> str:
    """The reference format: ``quality.reference``, or for ``auto`` the checkpoint's stored
    format (config.json's dtype or quantization_config).

    Raises:
        QualityError: ``auto`` with a bare parameter count or an unknown stored format.
    """
    q = _quality(sheet)
    if q.reference != "auto":
        return q.reference
    if sheet.model.parameters is not None:
        raise QualityError("reference 'auto' needs a checkpoint to read; with model.parameters "
                           "name the reference format", field="quality.reference", value="auto")
    from ..model.resolve import facts_for_sheet
    facts = facts_for_sheet(sheet, base_dir=base_dir)
    if facts is None or facts.stored_format is None:
        raise QualityError("reference 'auto': the checkpoint's stored format is unknown; name "
                           "the reference format", field="quality.reference", value="auto")
    return facts.stored_format


def _quality(sheet: Sheet):
    if sheet.quality is None:
        raise QualityError("the sheet has no quality block: declare quality.corpus, metric, "
                           "reference and max_regression first", field="quality")
    return sheet.quality


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(d, dict):
        return {prefix: d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def _diff(locked: dict, now: dict) -> list[str]:
    a, b = _flatten(locked), _flatten(now)
    return [f"{k}: locked {a.get(k)!r}, sheet now {b.get(k)!r}"
            for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _build(sheet: Sheet, base_dir: Path | None, now: dt.datetime) -> CriteriaLock:
    q = _quality(sheet)
    reference = resolve_reference(sheet, base_dir=base_dir)
    path = corpus_path(sheet, base_dir)
    lm = None
    if q.metric.startswith("lm_eval:"):
        from .lm_eval_import import read_lm_eval_results
        res = read_lm_eval_results(path, q.metric)
        sha, size = file_sha256(path, "lm-eval results")
        lm = res.as_dict()
        samples = res.samples
        direction = metric_direction(q.metric, res.higher_is_better)
    else:
        corpus = read_corpus(path, q.metric)
        sha, size, samples = corpus.sha256, corpus.size_bytes, len(corpus.samples)
        direction = metric_direction(q.metric)
    criteria = quality_criteria(sheet)
    assert criteria is not None
    return CriteriaLock(criteria=criteria, criteria_sha256=quality_sha256(sheet) or "",
                        reference_format=reference, direction=direction,
                        corpus=CorpusFacts(file=q.corpus, sha256=sha, size_bytes=size,
                                           samples=samples),
                        lm_eval=lm, locked_at=now.isoformat(timespec="seconds"),
                        locked_by=f"gpusizer {__version__}")


def read_lock(path: Path) -> CriteriaLock:
    """Read a lock file.

    Raises:
        QualityError: absent (lock first), unreadable or malformed.
    """
    p = Path(path)
    if not p.is_file():
        raise QualityError(f"no quality lock at {str(p)!r}: run `gpusizer quality lock SHEET` "
                           "before any evaluation (criteria are fixed before comparing)",
                           field="--lock", value=str(p))
    data = parse_json(read_input(p, "quality lock", QualityError), "quality lock", QualityError,
                      file=str(p))
    try:
        return CriteriaLock.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise QualityError(f"malformed quality lock: {err['msg']}", file=str(p),
                           field=".".join(str(x) for x in err["loc"])) from None


def check_lock(sheet: Sheet, lock: CriteriaLock, *, base_dir: Path | None = None) -> None:
    """Refuse a sheet whose quality criteria or corpus file differ from the lock.

    Raises:
        CriteriaMovedError: names each moved field (``quality.max_regression: locked 0.02,
            sheet now 0.05``) or the corpus file's changed hash.
        QualityError: the sheet has no quality block.
    """
    _quality(sheet)
    now = quality_criteria(sheet)
    if quality_sha256(sheet) != lock.criteria_sha256 or now != lock.criteria:
        raise CriteriaMovedError(
            f"the quality criteria moved since the lock of {lock.locked_at}: "
            + "; ".join(_diff(lock.criteria, now or {}) or ["criteria hash differs"])
            + ". Criteria are fixed before comparing (R2): restore the locked values; evidence "
            "judged on other criteria is refused", field="quality")
    sha, size = file_sha256(corpus_path(sheet, base_dir))
    if sha != lock.corpus.sha256 or size != lock.corpus.size_bytes:
        raise CriteriaMovedError(
            f"the frozen corpus {lock.corpus.file!r} changed since the lock of {lock.locked_at}: "
            f"sha256 {sha} ({size} B), locked {lock.corpus.sha256} ({lock.corpus.size_bytes} B)",
            field="quality.corpus", value=lock.corpus.file)


def lock_criteria(sheet: Sheet, *, lock_path: Path, base_dir: Path | None = None,
                  now: dt.datetime | None = None) -> LockResult:
    """Write the quality criteria to ``lock_path``, or confirm an identical existing lock.

    An existing lock with other criteria (a moved threshold) or another corpus file is never
    overwritten.

    Raises:
        QualityError: no quality block, unresolvable reference, unreadable lock path.
        CorpusError, EvidenceError: a malformed corpus or lm-eval reference file.
        CriteriaMovedError: a lock with other criteria exists.
    """
    lock_path = Path(lock_path)
    if lock_path.exists():
        existing = read_lock(lock_path)
        check_lock(sheet, existing, base_dir=base_dir)
        return LockResult(existing, lock_path, False)
    lock = _build(sheet, base_dir, now or dt.datetime.now(dt.timezone.utc))
    try:
        lock_path.write_text(json.dumps(lock.model_dump(mode="json"), indent=2, sort_keys=True)
                             + "\n", encoding="utf-8")
    except OSError as exc:
        raise QualityError(f"cannot write the lock: {exc.strerror}", field="--lock",
                           value=str(lock_path)) from None
    return LockResult(lock, lock_path, True)
