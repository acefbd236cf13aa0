"""The frozen corpus (R2 quality: "frozen corpus, identified outputs"): a JSON Lines file read
whole, hashed, never truncated or sampled.

One JSON object per line; blank lines are refused (they would shift the sample indices that
identify outputs). Keys by metric:

- ``perplexity``: ``{"text": "..."}`` — the whole text is scored.
- ``exact_match``: ``{"prompt": "...", "expected": "..."}`` — greedy continuation of ``prompt``,
  compared with ``expected``.

An optional ``"id"`` (string) is carried into the per-sample outputs. A sample is identified in
every output by its 0-based ``sample`` index and the corpus file's SHA-256.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import CorpusError
from ..input_files import read_input

__all__ = ["Sample", "Corpus", "read_corpus", "file_sha256", "CORPUS_KEYS"]

CORPUS_KEYS = {"perplexity": ("text",), "exact_match": ("prompt", "expected")}
"""Required keys of a corpus line, by metric."""


@dataclass(frozen=True)
class Sample:
    """One corpus sample.

    Attributes:
        index: 0-based position in the file (the line number minus one).
        text: ``text`` (perplexity) or ``prompt`` (exact_match).
        expected: the expected output (exact_match), else None.
        id: the line's own ``id``, if it gives one.
    """

    index: int
    text: str
    expected: str | None = None
    id: str | None = None


@dataclass(frozen=True)
class Corpus:
    """A frozen corpus file: its identity and its samples.

    Attributes:
        file: the path as given.
        sha256: SHA-256 (hex) of the file's bytes.
        size_bytes: the file's size in bytes.
        samples: every sample, in file order.
    """

    file: str
    sha256: str
    size_bytes: int
    samples: tuple[Sample, ...]


def file_sha256(path: Path, kind: str = "corpus") -> tuple[str, int]:
    """``(sha256 hex, size in bytes)`` of a file.

    Raises:
        CorpusError: the file cannot be read, is not a regular file, or is over its kind's cap
            (:data:`gpusizer.input_files.SIZE_CAPS`: 64 MiB for a corpus).
    """
    data = read_input(path, kind, CorpusError)
    return hashlib.sha256(data).hexdigest(), len(data)


def read_corpus(path: Path, metric: str) -> Corpus:
    """Read and check every line of a JSON Lines corpus for ``metric``.

    Raises:
        CorpusError: unreadable file, a line that is not a JSON object, a missing or non-string
            key, an unknown key, an empty file — the line and sample index named.
    """
    if metric not in CORPUS_KEYS:
        raise CorpusError(f"a JSON Lines corpus serves perplexity or exact_match, not {metric!r}",
                          field="quality.metric", value=metric)
    p = Path(path)
    data = read_input(p, "corpus", CorpusError)
    sha, size = hashlib.sha256(data).hexdigest(), len(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(f"expected UTF-8 text: {exc}", file=str(p)) from None
    keys = CORPUS_KEYS[metric]
    allowed = set(keys) | {"id"}
    samples = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it is not an empty sample
    for i, line in enumerate(lines):
        where = f"line {i + 1} (sample {i})"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{where}: expected one JSON object per line, got {line[:60]!r} "
                              f"({exc.msg})", file=str(p)) from None
        except (RecursionError, ValueError) as exc:  # nesting or an integer beyond bounds
            reason = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
            raise CorpusError(f"{where}: refused: {reason.splitlines()[0]}",
                              file=str(p)) from None
        if not isinstance(obj, dict):
            raise CorpusError(f"{where}: expected a JSON object, got {type(obj).__name__}",
                              file=str(p))
        unknown = sorted(set(obj) - allowed)
        if unknown:
            raise CorpusError(f"{where}: unknown key(s) {unknown}; a {metric} corpus line has "
                              f"{', '.join(keys)} (and optionally id)", file=str(p))
        for k in keys:
            if not isinstance(obj.get(k), str) or not obj[k]:
                raise CorpusError(f"{where}: expected a non-empty string {k!r}, got "
                                  f"{obj.get(k)!r}", file=str(p))
        sid = obj.get("id")
        if sid is not None and not isinstance(sid, str):
            raise CorpusError(f"{where}: expected id to be a string, got {sid!r}", file=str(p))
        samples.append(Sample(i, obj[keys[0]], obj.get("expected"), sid))
    if not samples:
        raise CorpusError("the corpus has no sample: expected one JSON object per line",
                          file=str(p))
    return Corpus(str(p), sha, size, tuple(samples))
