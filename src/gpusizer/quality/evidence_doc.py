"""The quality evidence document a run or an lm-eval import writes (CONTRACT.md "Evidence files",
kind ``quality``; fields in ``docs/evidence.md``). No torch.

The document carries the locked criteria (hash, time, corpus identity) so ``plan --evidence``
counts it only for a sheet with the same criteria, and it is validated by the same model
``plan`` reads (``evidence.QualityResult``) before it is written.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .. import SCHEMA_VERSION, __version__
from ..errors import QualityError
from ..evidence import EvidenceDoc
from ..sheet import Sheet, sheet_sha256
from .criteria_lock import CriteriaLock
from ..evidence.regression import relative_regression, within_tolerance

__all__ = ["quality_evidence", "write_json", "refuse_existing"]


def quality_evidence(*, sheet: Sheet, lock: CriteriaLock, candidate_format: str,
                     candidate_implementation: str, reference_implementation: str,
                     reference_value: float, candidate_value: float, document: str,
                     source: str, proxy_for: str | None = None,
                     environment: dict[str, Any] | None = None,
                     extra: dict[str, Any] | None = None,
                     today: dt.date | None = None) -> dict:
    """Build (and validate) one quality evidence document.

    Raises:
        QualityError: a reference value of 0 (no relative regression) or an inconsistent document.
    """
    assert sheet.quality is not None
    q = sheet.quality
    reg = relative_regression(reference_value, candidate_value, lock.direction)
    doc = {"schema_version": SCHEMA_VERSION, "kind": "quality", "document": document,
           "version": f"gpusizer {__version__}", "date": (today or dt.date.today()).isoformat(),
           "scope": {"environment": environment or {}},
           "sheet_sha256": sheet_sha256(sheet), "criteria_sha256": lock.criteria_sha256,
           "criteria": lock.criteria, "locked_at": lock.locked_at,
           "corpus": lock.corpus.model_dump(), "source": source,
           "metric": q.metric, "direction": lock.direction,
           "reference_format": lock.reference_format, "candidate_format": candidate_format,
           "reference_implementation": reference_implementation,
           "candidate_implementation": candidate_implementation, "proxy_for": proxy_for,
           "reference_value": reference_value, "candidate_value": candidate_value,
           "regression": reg, "max_regression": q.max_regression,
           "passed": within_tolerance(reg, q.max_regression), **(extra or {})}
    try:
        EvidenceDoc.model_validate(doc)
    except ValidationError as exc:
        raise QualityError(f"the quality evidence is inconsistent: {exc.errors()[0]['msg']}",
                           field="evidence") from None
    return doc


def write_json(doc: dict, path: Path) -> Path:
    """Write ``doc`` as indented JSON (sorted keys); an existing file is never overwritten (a
    result already written is evidence: a rerun does not replace it).

    Raises:
        QualityError: the file exists or cannot be written.
    """
    refuse_existing(Path(path))
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    except OSError as exc:
        raise QualityError(f"cannot write {str(path)!r}: {exc.strerror}", field="--out",
                           value=str(path)) from None
    return Path(path)


def refuse_existing(path: Path) -> None:
    """Refuse to overwrite evidence already written.

    Raises:
        QualityError: ``path`` exists.
    """
    if Path(path).exists():
        raise QualityError(f"{str(path)!r} already exists: a result already written is evidence "
                           "and is never overwritten; write to another --out folder",
                           field="--out", value=str(path))
