"""Units: bytes are integers everywhere inside; GB and GiB exist only here and in printed text.

1 GB = 10**9 bytes (SI, NIST SP 330); 1 GiB = 2**30 bytes (IEC 80000-13 binary prefix).
The seed's worked check: 24 × 10**9 B = 22.35 GiB.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation, localcontext

from .bounds import MAX_BYTES
from .errors import SheetError, shown

__all__ = [
    "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB",
    "UNIT_BYTES", "parse_bytes", "gib", "gb", "fmt_gib", "fmt_gb", "fmt_bytes",
]

KB = 10**3
MB = 10**6
GB = 10**9
TB = 10**12
KiB = 2**10
MiB = 2**20
GiB = 2**30
TiB = 2**40

UNIT_BYTES: dict[str, int] = {
    "B": 1, "KB": KB, "MB": MB, "GB": GB, "TB": TB,
    "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB,
}

_MEMORY_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)\s*$")


def parse_bytes(text: object, *, field: str = "memory") -> int:
    """Parse a memory size with an explicit unit into integer bytes.

    Args:
        text: e.g. ``"6 GiB"``, ``"24GB"``, ``"512 MiB"``, ``"0 B"``. Units (case-sensitive, as
            written by SI and IEC): B, KB, MB, GB, TB, KiB, MiB, GiB, TiB. A bare number is refused:
            "24" could be GB or GiB, and the two differ by 7.4 %.
        field: the sheet path reported in errors.

    Returns:
        Bytes, an integer (a fractional byte count is an error, not rounded away).

    Raises:
        SheetError: no unit, unknown unit, negative value, a fractional byte count, or more than
            ``bounds.MAX_BYTES`` (2**128 B: beyond any machine, and every figure stays a finite
            float when shown in GiB).
    """
    if isinstance(text, bool) or isinstance(text, (int, float)):
        raise SheetError(
            f"expected a memory size with a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), "
            f"got the bare number {shown(text)}", field=field, value=text)
    if not isinstance(text, str):
        raise SheetError(f"expected a memory size string such as '6 GiB', got {shown(text)}",
                         field=field, value=text)
    m = _MEMORY_RE.match(text)
    if not m and _MEMORY_RE.match(text.strip().removeprefix("-")) and text.strip()[:1] == "-":
        raise SheetError(f"must be >= 0, got {shown(text)}", field=field, value=text)
    if not m:
        raise SheetError(
            f"expected '<number> <unit>' with unit one of {', '.join(UNIT_BYTES)}, "
            f"got {shown(text)}", field=field, value=text)
    number, unit = m.groups()
    if unit not in UNIT_BYTES:
        raise SheetError(
            f"unknown unit {unit!r} in {text!r}; expected one of {', '.join(UNIT_BYTES)} "
            "(case-sensitive: 'GB' is 10^9 bytes, 'GiB' is 2^30 bytes)", field=field, value=text)
    try:
        with localcontext() as ctx:
            ctx.prec = len(number) + 20   # exact: no digit of a long number is rounded away
            exact = Decimal(number) * UNIT_BYTES[unit]
            whole = exact == exact.to_integral_value()
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimals
        raise SheetError(f"cannot read the number in {text!r}", field=field, value=text) from exc
    if not whole:
        raise SheetError(f"{text!r} is not a whole number of bytes ({exact} B): write it in a "
                         "smaller unit or in bytes", field=field, value=text)
    if exact > MAX_BYTES:
        raise SheetError(f"expected a memory size <= 2**128 B, got {text[:40]!r}"
                         + ("…" if len(text) > 40 else ""), field=field, value=text)
    return int(exact)


def gib(n_bytes: int) -> float:
    """Bytes → GiB (2**30 bytes) as a float, for display only."""
    return n_bytes / GiB


def gb(n_bytes: int) -> float:
    """Bytes → GB (10**9 bytes) as a float, for display only."""
    return n_bytes / GB


def fmt_gib(n_bytes: int | None, digits: int = 2) -> str:
    """``24_000_000_000`` → ``'22.35'`` (GiB, the unit goes in the column name); None → 'unknown'."""
    if n_bytes is None:
        return "unknown"
    return f"{n_bytes / GiB:.{digits}f}"


def fmt_gb(n_bytes: int | None, digits: int = 2) -> str:
    """``24_000_000_000`` → ``'24.00'`` (GB, the unit goes in the column name); None → 'unknown'."""
    if n_bytes is None:
        return "unknown"
    return f"{n_bytes / GB:.{digits}f}"


def fmt_bytes(n_bytes: int | None) -> str:
    """Human text with the unit inside, for prose: ``'22.35 GiB (24 000 000 000 B)'``."""
    if n_bytes is None:
        return "unknown"
    grouped = f"{n_bytes:,}".replace(",", " ")
    return f"{n_bytes / GiB:.2f} GiB ({grouped} B)"
