"""Injected faults, for the protocol's own tests (never set in a real measurement).

``GPUSIZER_MEASURE_INJECT`` (or the ``inject`` argument) holds ``KIND@WHERE``:

- ``oom@PHASE`` — raise ``torch.OutOfMemoryError`` at the start of ``PHASE`` (after its peaks
  are reset), to test the first-violation path at every phase;
- ``truncate@DIMENSION`` — the runner feeds one token (or one sequence) less than planned for
  ``DIMENSION``, as a buggy data path would; the harness must detect it from the shapes the
  model actually received;
- ``hang@PHASE`` — sleep at the start of ``PHASE`` until killed, to test that a ``SIGKILL``
  loses no raw note already written;
- ``crash@PHASE`` — raise a plain ``RuntimeError`` (a failure that is not an out-of-memory).

A run with an injected fault says so in its raw notes and its evidence (``injected_fault``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import SheetError

__all__ = ["Injection", "parse_injection", "ENV_VAR"]

ENV_VAR = "GPUSIZER_MEASURE_INJECT"
_KINDS = ("oom", "truncate", "hang", "crash")


@dataclass(frozen=True)
class Injection:
    kind: str
    where: str

    def __str__(self) -> str:
        return f"{self.kind}@{self.where}"

    def at(self, kind: str, where: str) -> bool:
        return self.kind == kind and self.where == where


def parse_injection(text: str | None = None) -> Injection | None:
    """``KIND@WHERE`` (default: the environment variable), or None.

    Raises:
        SheetError: a malformed value (names the variable, the value and the expected form).
    """
    text = os.environ.get(ENV_VAR) if text is None else text
    if not text:
        return None
    kind, sep, where = text.partition("@")
    if not sep or kind not in _KINDS or not where:
        raise SheetError(f"expected KIND@WHERE with KIND one of {', '.join(_KINDS)}",
                         field=ENV_VAR, value=text)
    return Injection(kind, where)
