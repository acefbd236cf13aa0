"""The ladder (R9): short, then typical, then the limit — the same task at growing dimensions.

- ``short``: 128 tokens for each length (``prompt_tokens``, ``new_tokens``, ``sequence_length``),
  or the sheet's length when shorter; one sequence (``concurrency: 1``) or ``microbatch: 1``.
- ``typical``: the sheet's dimensions with ``measure.typical`` replacing those it names; absent
  when ``measure.typical`` is empty.
- ``limit``: the sheet's required dimensions (``pipeline.required_dimensions``).

A rung whose dimensions equal another's is not run twice (a sheet at most 128 tokens long with
one sequence runs the limit rung alone). The ladder stops at the first
violation (out of memory, a failure, or a truncated run) and records it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SheetError
from ..sheet import Sheet, required_dimensions

__all__ = ["RungPlan", "SHORT_TOKENS", "build_ladder", "shortfall"]

SHORT_TOKENS = 128
"""Length of the short rung (R9: "short input and small batch first"), in tokens per length."""

_LENGTHS = ("prompt_tokens", "new_tokens", "sequence_length")
_WIDTHS = ("concurrency", "microbatch")


@dataclass(frozen=True)
class RungPlan:
    """One rung to run: its name and the dimensions it must execute (tokens, sequences)."""

    name: str
    dims: dict[str, int]


def build_ladder(sheet: Sheet) -> list[RungPlan]:
    """The rungs for ``sheet`` in order (short, typical if given, limit).

    Raises:
        SheetError: the sheet has no inference or training block (nothing to run).
    """
    limit = required_dimensions(sheet)
    if not limit:
        raise SheetError("the sheet has no inference or training block: there is no workload "
                         "to run (add inference.prompt_tokens/new_tokens or a training block)",
                         field="inference")
    short = {k: (min(v, SHORT_TOKENS) if k in _LENGTHS else 1 if k in _WIDTHS else v)
             for k, v in limit.items()}
    given = {k: v for k, v in sheet.measure.typical.model_dump().items() if v is not None}
    typical = {**limit, **{k: v for k, v in given.items() if k in limit}} if given else None
    rungs = [] if short == limit else [RungPlan("short", short)]
    if typical is not None and typical not in (short, limit):
        rungs.append(RungPlan("typical", typical))
    rungs.append(RungPlan("limit", limit))
    return rungs


def shortfall(executed: dict[str, int | None], planned: dict[str, int]) -> dict[str, tuple]:
    """Planned dimensions the run did not execute in full: ``{key: (executed, planned)}``.

    A dimension absent from ``executed`` counts as not executed (never read as the plan)."""
    return {k: (executed.get(k), v) for k, v in planned.items()
            if executed.get(k) is None or executed[k] != v}
