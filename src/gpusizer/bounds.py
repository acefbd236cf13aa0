"""One check of every number read at an edge: the right type, finite, within bounds.

Sheet fields, catalog rows (YAML, CSV and SkyPilot ``vms.csv`` cells), evidence documents and
config.json values all pass through :func:`check_number` (or :func:`number_from_text` for text
cells), so the same input gets the same answer wherever it is read:

- a boolean is never a number (YAML ``true`` is not 1, and 1 is not ``true``);
- NaN and ±infinity are refused (they are not JSON, RFC 8259 §6, and they make every sum and
  comparison meaningless);
- every number has an upper bound, so that no later step overflows (a float conversion, a tuple
  of that many layers) and a typo is refused rather than sized.

Text read at an edge passes :func:`unsafe_character`: a C0/C1 control character or a bidi
override/isolate would rewrite a terminal (ANSI escapes), reorder what a reader sees (U+202E) or
break a table row (a newline), so it is refused, never shown.

The callers turn :class:`NumberProblem` into their own error class (``SheetError``,
``CatalogError``, ``EvidenceError``, ``ModelError``) with the field and the value.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

__all__ = [
    "MAX_COUNT", "MAX_BYTES", "MAX_PARAMETERS", "MAX_USD", "MAX_DAYS", "MAX_METRIC",
    "NumberProblem",
    "check_number", "number_from_text", "bounded_float", "bounded_int",
    "unsafe_character", "first_unsafe_text",
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
        whole: an integer is required; a whole-number float (``7000000000.0``, ``7.0e+9``)
            and a decimal-exponent string that YAML 1.1 leaves as text (``'7e9'``) are taken
            as that integer (:func:`_whole`); a fraction is refused.

    Raises:
        NumberProblem: a bool, a non-number, NaN or ±inf, a fraction where a whole number is
            required, or a value beyond a bound (the message names the bound).
    """
    kind = "an integer" if whole else "a number"
    if isinstance(value, bool):
        raise NumberProblem(f"expected {kind}, not true/false", value)
    if isinstance(value, float) and not math.isfinite(value):
        raise NumberProblem("expected a finite number", value)
    if whole:
        value = _whole(value)
    if not isinstance(value, int) and (whole or not isinstance(value, float)):
        raise NumberProblem(f"expected {kind}, not {type(value).__name__}", value)
    if minimum is not None and (value <= minimum if exclusive_minimum else value < minimum):
        raise NumberProblem(f"expected {kind} {'>' if exclusive_minimum else '>='} "
                            f"{_bound(minimum)}", value)
    if maximum is not None and value > maximum:
        raise NumberProblem(f"expected {kind} <= {_bound(maximum)}", value)
    return value


_EXPONENT = re.compile(r"\s*[+-]?\d+(\.\d+)?[eE][+-]?\d+\s*")
"""A decimal number with an exponent (``7e9``, ``7.5e9``): YAML 1.1 (PyYAML) reads it as a
string, since its float needs a dot (``7.0e+9``)."""
EXACT_FLOAT = 2**53
"""Beyond this a float no longer holds every integer: a whole float above it may not be the
integer that was written (IEEE 754 binary64's 53-bit significand)."""


def _whole(value: object) -> object:
    """``value`` as an int when it is a whole-number float or exponent string, else itself (an
    int, or a value :func:`check_number` refuses with its own words).

    Raises:
        NumberProblem: a fraction (``7.5``, ``'1.25e1'``), or a whole float beyond
            :data:`EXACT_FLOAT` (rounded: write it as an integer).
    """
    if isinstance(value, str) and _EXPONENT.fullmatch(value):
        exact = Decimal(value.strip())
        if exact != exact.to_integral_value():
            raise NumberProblem("expected a whole number (an integer), not a fraction", value)
        return int(exact)
    if isinstance(value, float) and math.isfinite(value):
        if not value.is_integer():
            raise NumberProblem("expected a whole number (an integer), not a fraction", value)
        if abs(value) > EXACT_FLOAT:
            raise NumberProblem(f"expected an integer; a float beyond 2**53 is rounded: write "
                                "the integer's digits", value)
        return int(value)
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


BIDI_CONTROLS = frozenset(map(chr, (*range(0x202A, 0x202F), *range(0x2066, 0x206A))))
"""Unicode's bidi embedding/override (U+202A–U+202E) and isolate (U+2066–U+2069) characters
(UAX #9 §2; CVE-2021-42574 "Trojan Source")."""


def unsafe_character(text: str) -> str | None:
    """The first character of ``text`` no edge accepts in text, described
    (``"control character U+001B"``, ``"bidi control U+202E"``), or None.

    Refused: C0 controls U+0000–U+001F (newline and tab included), DEL U+007F, C1 controls
    U+0080–U+009F (Unicode category Cc) and :data:`BIDI_CONTROLS`.
    """
    for ch in text:
        code = ord(ch)
        if code < 0x20 or 0x7F <= code <= 0x9F:
            return f"control character U+{code:04X}"
        if ch in BIDI_CONTROLS:
            return f"bidi control U+{code:04X}"
    return None


def first_unsafe_text(data: Any, path: str = "") -> tuple[str, str, str] | None:
    """(dotted path, :func:`unsafe_character`'s description, the string) of the first string in
    ``data`` (nested mappings and lists, keys included) with an unsafe character, or None."""
    if isinstance(data, str):
        bad = unsafe_character(data)
        return (path, bad, data) if bad else None
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            found = first_unsafe_text(key, where) if isinstance(key, str) else None
            found = found or first_unsafe_text(value, where)
            if found:
                return found
    elif isinstance(data, (list, tuple)):
        for i, value in enumerate(data):
            found = first_unsafe_text(value, f"{path}[{i}]")
            if found:
                return found
    return None
