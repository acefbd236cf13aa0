"""lm-evaluation-harness results files as quality evidence (no torch, no lm_eval import).

A results file is what ``lm_eval --output_path`` writes (``results_<date>.json``, lm-eval 0.4):
``results[task]["<metric>,<filter>"]``, ``versions[task]``, ``n-shot[task]``,
``n-samples[task]["effective"]``, ``higher_is_better[task][metric]``, ``config.model_args``,
``config.limit``, ``lm_eval_version`` (EleutherAI/lm-evaluation-harness,
``lm_eval/evaluator.py`` and ``lm_eval/loggers/evaluation_tracker.py``).

With ``metric: lm_eval:<task>/<metric>`` the sheet's ``quality.corpus`` is the **reference
format's** results file: the task (name, version, n-shot, sample count) is the frozen corpus and
its value the reference. A candidate's file must match task, version, n-shot and sample count,
or it is rejected with the mismatch named.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import EvidenceError, LmEvalMismatchError
from ..input_files import parse_json, read_input

__all__ = ["LmEvalResult", "parse_metric", "read_lm_eval_results", "check_lm_eval_match"]


@dataclass(frozen=True)
class LmEvalResult:
    """One task's metric from a results file.

    Attributes:
        file: the results file.
        task: task name (``hellaswag``).
        version: the task's version as a string (``"1.0"``; numbers written ``1`` read ``"1.0"``).
        n_shot: few-shot examples.
        samples: documents evaluated (``n-samples[task].effective``).
        metric_key: the key read in ``results[task]`` (``acc_norm,none``).
        value: the metric's value.
        higher_is_better: from the file's ``higher_is_better``; True when the file does not say.
        model_args: ``config.model_args`` as written (string or mapping).
        lm_eval_version: the harness version, if recorded.
    """

    file: str
    task: str
    version: str
    n_shot: int
    samples: int
    metric_key: str
    value: float
    higher_is_better: bool
    model_args: Any
    lm_eval_version: str | None

    def as_dict(self) -> dict:
        return {"file": self.file, "task": self.task, "version": self.version,
                "n_shot": self.n_shot, "samples": self.samples, "metric_key": self.metric_key,
                "value": self.value, "higher_is_better": self.higher_is_better,
                "model_args": self.model_args, "lm_eval_version": self.lm_eval_version}


def parse_metric(metric: str) -> tuple[str, str]:
    """``lm_eval:<task>/<metric>`` → ``(task, metric)``.

    Raises:
        EvidenceError: not of that form.
    """
    if not metric.startswith("lm_eval:") or "/" not in metric:
        raise EvidenceError(f"expected lm_eval:<task>/<metric>, got {metric!r}",
                            field="quality.metric", value=metric)
    task, _, name = metric[len("lm_eval:"):].partition("/")
    if not task or not name:
        raise EvidenceError(f"expected lm_eval:<task>/<metric>, got {metric!r}",
                            field="quality.metric", value=metric)
    return task, name


def _version(v: Any) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, float)):
        return repr(float(v))
    return str(v)


def _need(data: dict, key: str, task: str, file: str) -> Any:
    block = data.get(key)
    if not isinstance(block, dict) or task not in block:
        got = sorted(block) if isinstance(block, dict) else None
        raise EvidenceError(f"expected {key}[{task!r}] in an lm-evaluation-harness results file "
                            f"(lm-eval >= 0.4 writes it), got {got}", file=file,
                            field=f"{key}.{task}")
    return block[task]


def read_lm_eval_results(path: Path, metric: str) -> LmEvalResult:
    """Read ``metric`` (``lm_eval:<task>/<metric>``) from a results file.

    The metric may name its filter (``exact_match,strict-match``); without one, the only filter
    the file has for it is used, and several are an error listing them.

    Raises:
        EvidenceError: unreadable JSON; the task, metric, version, n-shot or sample count absent.
    """
    task, name = parse_metric(metric)
    file = str(path)
    data = parse_json(read_input(path, "lm-eval results", EvidenceError), "lm-eval results",
                      EvidenceError, file=file)
    if not isinstance(data, dict):
        raise EvidenceError("expected a JSON object (lm-evaluation-harness results)", file=file)
    results = _need(data, "results", task, file)
    if "," in name:
        key = name
    else:
        keys = [k for k in results if isinstance(k, str) and k.split(",")[0] == name]
        if len(keys) > 1:
            raise EvidenceError(f"metric {name!r} has several filters {sorted(keys)}: name one "
                                f"in the sheet (lm_eval:{task}/<metric>,<filter>)", file=file,
                                field=f"results.{task}")
        key = keys[0] if keys else name
    value = results.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise EvidenceError(f"expected a number at results[{task!r}][{key!r}], got {value!r}; "
                            f"metrics present: {sorted(k for k in results if k != 'alias')}",
                            file=file, field=f"results.{task}")
    version = _version(_need(data, "versions", task, file))
    n_shot = _need(data, "n-shot", task, file)
    n_samples = _need(data, "n-samples", task, file)
    samples = n_samples.get("effective") if isinstance(n_samples, dict) else None
    if isinstance(n_shot, bool) or not isinstance(n_shot, int):
        raise EvidenceError(f"expected an integer n-shot, got {n_shot!r}", file=file,
                            field=f"n-shot.{task}")
    if isinstance(samples, bool) or not isinstance(samples, int):
        raise EvidenceError(f"expected an integer n-samples.{task}.effective, got {samples!r}",
                            file=file, field=f"n-samples.{task}")
    hib = (data.get("higher_is_better") or {}).get(task, {}) if isinstance(
        data.get("higher_is_better"), dict) else {}
    higher = hib.get(key.split(",")[0], True) if isinstance(hib, dict) else True
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    return LmEvalResult(file, task, version, n_shot, samples, key, float(value), bool(higher),
                        config.get("model_args"), data.get("lm_eval_version"))


def check_lm_eval_match(candidate: LmEvalResult, locked: dict) -> None:
    """Refuse a candidate whose task, version, n-shot, sample count or metric differ from the
    locked ones (``CriteriaLock.lm_eval``).

    Raises:
        LmEvalMismatchError: every mismatch named, with both values.
    """
    diffs = []
    for field, got in (("task", candidate.task), ("version", candidate.version),
                       ("n_shot", candidate.n_shot), ("samples", candidate.samples),
                       ("metric_key", candidate.metric_key)):
        want = locked.get(field)
        if got != want:
            diffs.append(f"{field} {got!r} where the locked criteria have {want!r}")
    if diffs:
        raise LmEvalMismatchError("lm-eval results do not match the locked criteria: "
                                  + "; ".join(diffs) + " — rerun the task as locked",
                                  file=candidate.file, field="lm_eval",
                                  value={"task": candidate.task, "version": candidate.version})
