"""Reading untrusted input files with bounds: regular files only, a size cap per kind checked
before reading, and JSON with bounded depth and integer size (issue 11, point 1).

Every input path goes through :func:`read_input` (sheet, catalogs, evidence files, config.json,
safetensors index, lock files, lm-eval results, corpora), so ``/dev/zero``, a FIFO or a symlink
to either is refused with one line instead of eating memory or hanging, and a file larger than
its kind's cap is refused from its ``stat`` (at most cap + 1 bytes are ever read, in case it grows
while read). :func:`parse_json` refuses nesting deeper than :data:`MAX_JSON_DEPTH` and integers
longer than :data:`MAX_INT_DIGITS` digits with one line. The depth is measured by a linear scan
before the stdlib parser runs, so a deep document never reaches the parser's recursion (whose
``RecursionError`` or C-stack overflow would depend on the interpreter's limits and stack size).
"""

from __future__ import annotations

import json
import os
import re
import stat
from itertools import accumulate
from pathlib import Path

from .errors import GpusizerError

__all__ = ["SIZE_CAPS", "MAX_JSON_DEPTH", "MAX_INT_DIGITS", "read_input", "check_regular",
           "parse_json"]

MiB = 1 << 20

SIZE_CAPS: dict[str, int] = {
    "sheet": 1 * MiB,
    "catalog": 64 * MiB,
    "evidence file": 16 * MiB,
    "engine log": 64 * MiB,
    "quality lock": 16 * MiB,
    "lm-eval results": 16 * MiB,
    "corpus": 64 * MiB,
    "config.json": 4 * MiB,
    "safetensors index": 4 * MiB,
    "safetensors header": 100_000_000,
    "header cache entry": 1 * MiB,
    "engine log": 64 * MiB,
}
"""The largest file of each kind read, in bytes (issue 11: sheet 1 MiB, catalog 64 MiB, evidence
file 16 MiB, config.json 4 MiB, safetensors header 100 MB, engine log 64 MiB). An upload is
capped as its kind."""

MAX_JSON_DEPTH = 64
"""The deepest nesting of JSON arrays/objects accepted (real documents nest < 10 levels)."""

MAX_INT_DIGITS = 1000
"""The longest JSON integer accepted, in digits: far below the interpreter's 4,300-digit
int-str limit and its quadratic parse, far above any real value (a float's range ends at 309
digits), so a too large number reaches its field's own bound and message."""


def check_regular(path: str | Path, kind: str, error: type[GpusizerError], *,
                  sized: bool = True) -> os.stat_result:
    """``stat`` of ``path`` (symlinks resolved), refused unless a regular file within its cap.

    Args:
        path: the file.
        kind: a key of :data:`SIZE_CAPS`, or any name when ``sized`` is False.
        error: the error class raised (the caller's: SheetError, CatalogError …).
        sized: check the size cap (False for a file read in part, e.g. a safetensors file whose
            header alone is read).

    Raises:
        error: absent, unreadable, not a regular file (device, FIFO, folder), or over the cap;
            one line naming the file and the cap.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise error(f"cannot read the {kind}: {exc.strerror or exc}", file=str(path)) from None
    except ValueError as exc:  # an embedded NUL byte
        raise error(f"cannot read the {kind}: {exc}", file=str(path)) from None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"the {kind} is not a regular file (a device, FIFO or folder is never read)",
                    file=str(path))
    cap = SIZE_CAPS[kind] if sized else st.st_size
    if st.st_size > cap:
        raise error(f"the {kind} is {st.st_size} bytes, over the {cap}-byte limit for a {kind}",
                    file=str(path))
    return st


def read_input(path: str | Path, kind: str, error: type[GpusizerError]) -> bytes:
    """The bytes of one input file, read with bounds.

    Args:
        path: the file (a symlink is resolved; its target must be a regular file too).
        kind: a key of :data:`SIZE_CAPS` (``"sheet"``, ``"catalog"``, ``"evidence file"`` …).
        error: the error class raised.

    Returns:
        The whole file (at most ``SIZE_CAPS[kind]`` bytes).

    Raises:
        error: as :func:`check_regular`, or the file grew past its cap while read.
    """
    cap = SIZE_CAPS[kind]
    check_regular(path, kind, error)
    try:
        # O_NONBLOCK: a FIFO swapped in after the stat does not block the open
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise error(f"the {kind} is not a regular file", file=str(path))
            data = fh.read(cap + 1)
    except OSError as exc:
        raise error(f"cannot read the {kind}: {exc.strerror or exc}", file=str(path)) from None
    if len(data) > cap:
        raise error(f"the {kind} is over the {cap}-byte limit for a {kind}", file=str(path))
    return data


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _JsonBound(f"an integer of {digits} digits (at most {MAX_INT_DIGITS} accepted)")
    return int(text)


class _JsonBound(ValueError):
    pass


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = str.maketrans({"[": "1", "{": "1", "]": "0", "}": "0"})


def _text_depth(text: str) -> int:
    """The deepest nesting of arrays/objects in JSON ``text``, brackets inside strings ignored;
    a linear scan with no recursion (malformed text gives some number; the parser then reports
    the syntax error)."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    if not brackets:
        return 0
    return max(accumulate(1 if c == "1" else -1 for c in brackets.translate(_STEP)))


def _depth_ok(value: object) -> None:
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise _JsonBound(f"nested deeper than {MAX_JSON_DEPTH} levels")
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)


def parse_json(data: bytes | str, kind: str, error: type[GpusizerError],
               file: str | None = None) -> object:
    """Parse untrusted JSON: UTF-8 (BOM allowed), depth ≤ :data:`MAX_JSON_DEPTH`, integers of at
    most :data:`MAX_INT_DIGITS` digits.

    Raises:
        error: not UTF-8, invalid JSON (line and column), too deep or a too long integer; one
            line naming ``file`` and the ``kind``.
    """
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise error(f"the {kind} is not UTF-8 text (byte {exc.start}: {exc.reason})",
                    file=file) from None
    if _text_depth(text) > MAX_JSON_DEPTH:
        raise error(f"cannot read JSON ({kind}): refused, nested deeper than {MAX_JSON_DEPTH} "
                    "levels", file=file)
    try:
        value = json.loads(text, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        raise error(f"cannot read JSON ({kind}): {exc.msg} at line {exc.lineno}, column "
                    f"{exc.colno}", file=file) from None
    except _JsonBound as exc:
        raise error(f"cannot read JSON ({kind}): refused, {exc}", file=file) from None
    except RecursionError:
        raise error(f"cannot read JSON ({kind}): refused, nested deeper than {MAX_JSON_DEPTH} "
                    "levels", file=file) from None
    except ValueError as exc:  # e.g. the interpreter's int-str limit
        raise error(f"cannot read JSON ({kind}): refused, {str(exc).splitlines()[0]}",
                    file=file) from None
    try:
        _depth_ok(value)
    except _JsonBound as exc:
        raise error(f"cannot read JSON ({kind}): refused, {exc}", file=file) from None
    return value
