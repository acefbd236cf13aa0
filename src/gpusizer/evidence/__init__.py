"""Evidence files (``--evidence DIR``): what was documented or measured, with version and scope (R4).

Read from a folder (:func:`read_evidence_folder`) or given as documents
(:func:`load_evidence_docs`), then selected for one sheet (:func:`select_evidence`, no I/O).

Format: CONTRACT.md "Evidence files"; the kind-specific fields gpusizer reads are listed in
``docs/evidence.md``. Evidence counts for a plan only when its ``sheet_sha256`` matches the plan's
sheet, and for an offer only within its scope: the same canonical card and device bytes, and for
compatibility the offer's own provider and image (or its ``offer_id``).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, model_validator

from ..bounds import MAX_BYTES, MAX_METRIC, bounded_float
from ..errors import EvidenceError, GpusizerError, shown
from ..input_files import parse_json, read_input
from ..memory.items import ONE_SHOT_PHASES

__all__ = ["Scope", "EvidenceDoc", "MeasuredPhase", "Rung", "load_evidence", "EvidenceSet",
           "QualityResult", "quality_result", "measurement_set_aside", "read_evidence_folder",
           "load_evidence_docs", "read_evidence", "select_evidence", "EvidenceSource",
           "citation_key"]


NonNegative = Annotated[int, Field(strict=True, ge=0, le=MAX_BYTES)]
"""Counters and dimensions: integers in [0, 2**128] (a negative byte count is malformed
evidence; ``gpusizer.bounds``)."""
MetricValue = bounded_float(minimum=-MAX_METRIC, maximum=MAX_METRIC)
"""A metric's value or a relative regression: finite (NaN and ±inf are malformed evidence)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Environment(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    image: str | None = None
    torch: str | None = None
    cuda: str | None = None
    driver: str | None = None


class Scope(_Strict):
    """Where the evidence holds: an offer, a provider, a card with its device bytes, an image."""

    offer_id: str | None = None
    provider: str | None = None
    card: str | None = None
    device_bytes: Annotated[int, Field(strict=True, gt=0, le=MAX_BYTES)] | None = None
    environment: Environment = Environment()


class MeasuredPhase(BaseModel):
    """One phase's counters on one GPU, each under its own name, never added together (R9)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    name: str
    gpu: NonNegative = 0
    max_memory_allocated_bytes: NonNegative | None = None
    max_memory_reserved_bytes: NonNegative | None = None
    non_torch_bytes: NonNegative | None = None
    nvml_used_bytes: NonNegative | None = None


class Rung(BaseModel):
    """One rung of the ladder (R9): short, typical or limit."""

    model_config = ConfigDict(extra="allow", frozen=True)
    name: Literal["short", "typical", "limit"]
    result: Literal["passed", "oom", "failed", "truncated"]
    executed: dict[str, NonNegative] = {}
    failed_phase: str | None = None
    phases: list[MeasuredPhase] = []


class EvidenceDoc(BaseModel):
    """One evidence file. Kind-specific fields are kept in ``model_extra``."""

    model_config = ConfigDict(extra="allow", frozen=True)
    kind: Literal["commercial", "measurement", "quality", "compatibility", "placement",
                  "engine_log"]
    document: str
    version: str
    date: dt.date | None = None
    scope: Scope = Scope()
    sheet_sha256: str | None = None
    rungs: list[Rung] = []
    result: Literal["passed", "failed"] | None = None
    file: str = Field("", exclude=True)

    @model_validator(mode="after")
    def _kind_fields(self) -> "EvidenceDoc":
        if self.kind in ("compatibility", "placement") and self.result is None:
            raise ValueError(f"a {self.kind} document needs result: passed or failed")
        if self.kind == "measurement" and not self.rungs:
            raise ValueError("a measurement document needs rungs (short / typical / limit)")
        if self.kind == "quality":
            quality_result(self)
        if self.kind == "engine_log":
            from .engine_log import engine_log_fields
            engine_log_fields(self.model_extra or {})
        return self

    def extra(self, key: str, default: Any = None) -> Any:
        """A kind-specific field."""
        return (self.model_extra or {}).get(key, default)

    def citation(self) -> dict[str, str]:
        """``{"document", "version", "scope"}`` as the JSON output lists evidence."""
        s = self.scope
        parts = [f"{k}={v}" for k, v in (("offer", s.offer_id), ("provider", s.provider),
                                          ("card", s.card), ("device_bytes", s.device_bytes),
                                          ("image", s.environment.image)) if v is not None]
        return {"document": self.document, "version": self.version,
                "scope": ", ".join(parts) or "unscoped"}


class QualityResult(BaseModel):
    """The fields a ``quality`` document must give (``gpusizer quality run`` / ``import`` write
    them; ``docs/evidence.md``). Other fields (per-sample file, corpus, lm-eval facts) are kept.

    Attributes:
        criteria_sha256: ``sheet.quality_sha256`` of the criteria it was judged on.
        metric: the sheet's ``quality.metric``.
        direction: ``lower`` or ``higher`` is better.
        reference_format, candidate_format: the formats compared (sheet vocabulary, or
            ``int8-roundtrip`` / ``int4-roundtrip`` for the PyTorch round-trips).
        candidate_implementation: what produced the candidate (dtype cast, bitsandbytes,
            round-trip, an lm-eval run).
        proxy_for: for a round-trip, the sheet format it only approximates; it never validates
            that format.
        reference_value, candidate_value: the metric on the corpus.
        regression: relative, in the worse direction (``evidence.regression``).
        max_regression: the locked tolerance.
        passed: ``regression <= max_regression``; checked against the values.
    """

    model_config = ConfigDict(extra="allow", frozen=True)
    criteria_sha256: str
    metric: str
    direction: Literal["lower", "higher"]
    reference_format: str
    candidate_format: str
    candidate_implementation: str
    proxy_for: str | None = None
    reference_value: MetricValue  # type: ignore[valid-type]
    candidate_value: MetricValue  # type: ignore[valid-type]
    regression: MetricValue  # type: ignore[valid-type]
    max_regression: bounded_float(minimum=0, maximum=1)  # type: ignore[valid-type]
    passed: StrictBool

    @model_validator(mode="after")
    def _consistent(self) -> "QualityResult":
        from .regression import relative_regression, within_tolerance
        try:
            reg = relative_regression(self.reference_value, self.candidate_value, self.direction)
        except GpusizerError as exc:
            raise ValueError(exc.reason) from None
        if abs(reg - self.regression) > 1e-9 * max(1.0, abs(reg)):
            raise ValueError(f"regression {self.regression!r} does not follow from "
                             f"reference_value {self.reference_value!r} and candidate_value "
                             f"{self.candidate_value!r} ({self.direction} is better): {reg!r}")
        if within_tolerance(reg, self.max_regression) != self.passed:
            raise ValueError(f"passed {self.passed} contradicts regression {reg!r} vs "
                             f"max_regression {self.max_regression!r}")
        return self


def quality_result(doc: "EvidenceDoc") -> QualityResult:
    """The quality fields of a ``quality`` document (ValueError when missing or inconsistent)."""
    try:
        return QualityResult.model_validate(doc.model_extra or {})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        raise ValueError(f"a quality document {('field ' + loc + ': ') if loc else ''}{msg}"
                         ) from None


def _moved_criteria(judged: Any, now: dict | None) -> str:
    """``quality.max_regression: judged on 0.02, sheet now 0.05; …`` (empty when unknown)."""
    if not isinstance(judged, dict) or not isinstance(now, dict):
        return ""

    def flat(d: Any, prefix: str = "") -> dict:
        if not isinstance(d, dict):
            return {prefix: d}
        out: dict = {}
        for k, v in d.items():
            out.update(flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out

    a, b = flat(judged), flat(now)
    return "; ".join(f"{k}: judged on {a.get(k)!r}, sheet now {b.get(k)!r}"
                     for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))


@dataclass(frozen=True)
class EvidenceSet:
    """Evidence of one plan: the documents that match the sheet, and those set aside (with why)."""

    docs: tuple[EvidenceDoc, ...]
    ignored: tuple[tuple[str, str], ...]

    def of_kind(self, kind: str) -> list[EvidenceDoc]:
        return [d for d in self.docs if d.kind == kind]


def measurement_set_aside(doc: EvidenceDoc) -> str | None:
    """Why a ``measurement`` document must not count, or None.

    Set aside: a run with an injected fault (``injected_fault``, the protocol's own tests), a
    document that names a rung twice (one run has one short, one typical and one limit rung: two
    limit rungs are several runs merged, and reading the first would hide the other), and a run
    whose rungs name a phase twice on the same GPU for a one-shot phase (a corrupted or merged
    file). Its ``sheet_sha256`` is checked by :func:`load_evidence` like every kind's.
    """
    fault = doc.extra("injected_fault")
    if fault:
        return (f"measurement with an injected fault ({fault}): a test of the protocol, not of "
                "the workload")
    names = [rung.name for rung in doc.rungs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        return (f"rung {twice[0]} appears {names.count(twice[0])} times: not one run (merge of "
                "several files?)")
    for rung in doc.rungs:
        seen: set[tuple[str, int]] = set()
        for ph in rung.phases:
            key = (ph.name, ph.gpu)
            if ph.name in ONE_SHOT_PHASES and key in seen and rung.result == "passed":
                return (f"rung {rung.name} records phase {ph.name} twice on GPU {ph.gpu}: not one "
                        "run (merge of several files?)")
            seen.add(key)
    return None


EvidenceSource = Union["os.PathLike[str]", Sequence[Union[Mapping[str, Any], EvidenceDoc]]]
"""Evidence as given: a folder of ``*.json`` files, or the documents themselves."""


LOCK_SKIPPED = ("a quality lock (kind quality_criteria), not evidence: skipped (keep it beside "
                "the sheet, out of --evidence)")
"""Why a lock file found in an evidence folder is skipped (the plan goes on)."""


def read_evidence_folder(directory: str | Path, *,
                         skipped: list[tuple[str, str]] | None = None) -> tuple[EvidenceDoc, ...]:
    """Every ``*.json`` in ``directory`` (sorted by name), validated; each keeps its file. A
    quality lock file (``kind: quality_criteria``, written by ``gpusizer quality lock``) is not
    evidence: it is skipped, and ``(file, why)`` appended to ``skipped`` when given.

    Raises:
        EvidenceError: not a folder, a file that is not regular or over 16 MiB, unreadable or
            too deep JSON, or a malformed document (file and field named).
    """
    d = Path(directory)
    if not d.is_dir():
        raise EvidenceError(f"expected a folder of evidence *.json files, got {str(d)!r}",
                            field="--evidence", value=str(d))
    docs = []
    for path in sorted(d.glob("*.json")):
        raw = parse_json(read_input(path, "evidence file", EvidenceError), "evidence file",
                         EvidenceError, file=str(path))
        if isinstance(raw, dict) and raw.get("kind") == "quality_criteria":
            if skipped is not None:
                skipped.append((str(path), LOCK_SKIPPED))
            continue
        docs.append(_validated(raw, str(path)))
    return tuple(docs)


def load_evidence_docs(documents: Sequence[Mapping[str, Any] | EvidenceDoc]
                       ) -> tuple[EvidenceDoc, ...]:
    """Evidence documents given as values (each a mapping in the evidence file's shape, as
    ``json.load`` returns it, or an :class:`EvidenceDoc`), validated as files are; the i-th is
    named ``evidence[i]`` in messages and in the report (unless an EvidenceDoc has its file).

    Raises:
        EvidenceError: a malformed document or one that is not a mapping (its name and field).
    """
    docs = []
    for i, raw in enumerate(documents):
        name = f"evidence[{i}]"
        if isinstance(raw, EvidenceDoc):
            docs.append(raw if raw.file else raw.model_copy(update={"file": name}))
        elif isinstance(raw, Mapping):
            docs.append(_validated(dict(raw), name))
        else:
            raise EvidenceError(f"expected an evidence document (a mapping), got "
                                f"{type(raw).__name__}", field=name)
    return tuple(docs)


def read_evidence(source: EvidenceSource | None, *,
                  skipped: list[tuple[str, str]] | None = None) -> tuple[EvidenceDoc, ...]:
    """Evidence from a folder (``os.PathLike``) or documents (a sequence of mappings); none for
    None. A ``str`` is refused: a folder is given as a path (``pathlib.Path``). Files of a folder
    that are not evidence (a quality lock) are skipped into ``skipped``
    (:func:`read_evidence_folder`).

    Raises:
        EvidenceError: as :func:`read_evidence_folder` and :func:`load_evidence_docs`, or a
            source of another kind (field ``evidence``).
    """
    if source is None:
        return ()
    if isinstance(source, os.PathLike):
        return read_evidence_folder(source, skipped=skipped)
    if isinstance(source, Sequence) and not isinstance(source, (str, bytes)):
        return load_evidence_docs(source)
    raise EvidenceError("expected a folder (os.PathLike, e.g. pathlib.Path) or a list of "
                        f"evidence documents (mappings), got {type(source).__name__}",
                        field="evidence")


def _validated(raw: object, file: str) -> EvidenceDoc:
    """One document validated, or EvidenceError naming its file and the first bad field."""
    try:
        return EvidenceDoc.model_validate({**raw, "file": file} if isinstance(raw, dict)
                                          else raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise EvidenceError(f"{err['msg']} (got {shown(err.get('input'))})", file=file,
                            field=loc) from None


def select_evidence(docs: Sequence[EvidenceDoc], *, sheet_sha256: str,
                    quality_sha256: str | None = None,
                    quality_criteria: dict | None = None) -> EvidenceSet:
    """The documents that count for the sheet, and those set aside with the reason (no I/O).

    Evidence whose ``sheet_sha256`` differs from the plan's is set aside (it measured another
    workload); quality evidence may instead match the hash of the sheet's quality criteria
    (``criteria_sha256``, see ``sheet.quality_sha256``). Commercial documents are not tied to a
    sheet. A measurement with an injected fault or a merged file is set aside
    (:func:`measurement_set_aside`).
    """
    kept, ignored = [], []
    for doc in docs:
        if doc.kind == "quality":
            if doc.sheet_sha256 != sheet_sha256 and (
                    quality_sha256 is None or doc.extra("criteria_sha256") != quality_sha256):
                moved = _moved_criteria(doc.extra("criteria"), quality_criteria)
                ignored.append((doc.file, "quality evidence matches neither this sheet's "
                                f"sha256 {sheet_sha256} nor its quality criteria's "
                                f"{quality_sha256}: it judged other criteria"
                                + (f" ({moved})" if moved else "")))
                continue
        elif doc.kind == "measurement" and (why := measurement_set_aside(doc)) is not None:
            ignored.append((doc.file, why))
            continue
        elif doc.kind != "commercial" and doc.sheet_sha256 != sheet_sha256:
            ignored.append((doc.file, f"sheet_sha256 {doc.sheet_sha256!r} is not this sheet's "
                                      f"{sheet_sha256}: it documents another workload"))
            continue
        kept.append(doc)
    return EvidenceSet(tuple(kept), tuple(ignored))


def load_evidence(directory: str | Path | None, *, sheet_sha256: str,
                  quality_sha256: str | None = None,
                  quality_criteria: dict | None = None) -> EvidenceSet:
    """Read every ``*.json`` in ``directory`` and keep those that count for the sheet:
    :func:`read_evidence_folder`, then :func:`select_evidence`. None → no evidence.

    Raises:
        EvidenceError: unreadable JSON or a malformed document (file and field named).
    """
    if directory is None:
        return EvidenceSet((), ())
    return select_evidence(read_evidence_folder(directory), sheet_sha256=sheet_sha256,
                           quality_sha256=quality_sha256, quality_criteria=quality_criteria)


def citation_key(citation: dict) -> tuple:
    """A hashable key of an evidence citation (``EvidenceDoc.citation()`` or a criterion's
    ``evidence`` entry), to tell which documents an offer's criteria cited."""
    return tuple(sorted(citation.items()))
