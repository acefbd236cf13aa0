"""One check of every number read at an edge: the right type, finite, within bounds.

Sheet fields, catalog rows (YAML, CSV and SkyPilot ``vms.csv`` cells), evidence documents and
config.json values all pass through :func:`check_number` (or :func:`number_from_text` for text
cells), so the same input gets the same answer wherever it is read:

- a boolean is never a number (YAML ``true`` is not 1, and 1 is not ``true``);
- NaN and ±infinity are refused (they are not JSON, RFC 8259 §6, and they make every sum and
  comparison meaningless);
- every number has an upper bound, so that no later step overflows (a float conversion, a tuple
  of that many layers) and a typo is refused rather than sized.

The callers turn :class:`NumberProblem` into their own error class (``SheetError``,
``CatalogError``, ``EvidenceError``, ``ModelError``) with the field and the value.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

__all__ = [
    "MAX_COUNT", "MAX_BYTES", "MAX_PARAMETERS", "MAX_USD", "MAX_DAYS", "MAX_METRIC",
    "NumberProblem",
    "check_number", "number_from_text", "bounded_float", "bounded_int",
]

MAX_COUNT = 2**31 - 1
"""Counts (tokens, sequences, layers, heads, GPUs): CUDA kernels index with 32-bit integers in
places, and no real workload or config comes near."""
MAX_BYTES = 2**128
"""Memory sizes: far beyond any machine, yet exact integers whose sums over every item and phase
stay finite floats when shown in GiB (float's range ends near 2**1024)."""
MAX_PARAMETERS = 10**15
"""Parameter counts (a quadrillion, 500 × the largest published models)."""
MAX_USD = 10**12
"""Prices and budgets in USD (a trillion)."""
MAX_DAYS = 36_525
"""Days of rental or of a campaign (100 years)."""
MAX_METRIC = 10**15
"""A quality metric's value or relative regression (a perplexity is at most the vocabulary size;
accuracies are at most 1 or 100)."""


class NumberProblem(ValueError):
    """A number at the edge is of the wrong type, not finite or out of bounds.

    Attributes:
        expected: what was expected (``"expected a number <= 100"``), without the value, for
            callers whose message adds the value themselves.
        value: the value refused.

    ``str(self)`` is ``"<expected>, got <value>"`` (a long value shortened).
    """

    def __init__(self, expected: str, value: object) -> None:
        super().__init__(f"{expected}, got {_shown(value)}")
        self.expected, self.value = expected, value


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}…({len(text)} characters)"


def _bound(x: float) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def check_number(value: object, *, minimum: float | None = None, maximum: float | None = None,
                 exclusive_minimum: bool = False, whole: bool = False) -> int | float:
    """``value`` itself when it is a finite int or float within the bounds.

    Args:
        value: the value as parsed (YAML, JSON, pydantic input).
        minimum, maximum: inclusive bounds (``minimum`` exclusive with ``exclusive_minimum``).
        whole: an integer is required (an integral float such as ``2.0`` is refused too: a
            count is written as a count).

    Raises:
        NumberProblem: a bool, a non-number, NaN or ±inf, a fraction where a whole number is
            required, or a value beyond a bound (the message names the bound).
    """
    kind = "an integer" if whole else "a number"
    if isinstance(value, bool):
        raise NumberProblem(f"expected {kind}, not true/false", value)
    if whole and isinstance(value, float) and math.isfinite(value):
        raise NumberProblem("expected a whole number (an integer)", value)
    if not isinstance(value, int) and (whole or not isinstance(value, float)):
        raise NumberProblem(f"expected {kind}, not {type(value).__name__}", value)
    if isinstance(value, float) and not math.isfinite(value):
        raise NumberProblem("expected a finite number", value)
    if minimum is not None and (value <= minimum if exclusive_minimum else value < minimum):
        raise NumberProblem(f"expected {kind} {'>' if exclusive_minimum else '>='} "
                            f"{_bound(minimum)}", value)
    if maximum is not None and value > maximum:
        raise NumberProblem(f"expected {kind} <= {_bound(maximum)}", value)
    return value


def number_from_text(text: str, **bounds: Any) -> int | float:
    """A number written as text (a CSV cell): decimal notation only, then :func:`check_number`.

    ``"2.49"`` → 2.49, ``"8"`` → 8; ``"nan"``, ``"inf"``, ``"1e400"`` (beyond a bound) and
    ``"true"`` are refused.

    Raises:
        NumberProblem: not a decimal number, or as :func:`check_number`.
    """
    try:
        exact = Decimal(text.strip())
    except InvalidOperation:
        raise NumberProblem("expected a number", text) from None
    if not exact.is_finite():
        raise NumberProblem("expected a finite number", text)
    maximum = bounds.get("maximum")
    if maximum is not None and exact > maximum:   # before float(): 1e400 would become inf
        raise NumberProblem(f"expected a number <= {_bound(maximum)}", text)
    value: int | float = int(exact) if exact == exact.to_integral_value() and "." not in text \
        and "e" not in text.lower() else float(exact)
    return check_number(value, **bounds)


def _validator(**bounds: Any) -> BeforeValidator:
    return BeforeValidator(partial(check_number, **bounds))


def bounded_float(*, minimum: float | None = None, maximum: float,
                  exclusive_minimum: bool = False) -> Any:
    """A pydantic type for a finite float in bounds (bools and NaN/inf refused, ints accepted).

    The JSON Schema keeps the bounds (``minimum``/``exclusiveMinimum``, ``maximum``).
    """
    low = {"gt" if exclusive_minimum else "ge": minimum} if minimum is not None else {}
    return Annotated[float, Field(le=maximum, allow_inf_nan=False, **low),
                     _validator(minimum=minimum, maximum=maximum,
                                exclusive_minimum=exclusive_minimum)]


def bounded_int(*, minimum: int, maximum: int) -> Any:
    """A pydantic type for an integer in bounds (bools and floats refused)."""
    return Annotated[int, Field(strict=True, ge=minimum, le=maximum),
                     _validator(minimum=minimum, maximum=maximum, whole=True)]
