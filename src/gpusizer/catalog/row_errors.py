"""Turn a pydantic ``ValidationError`` on one catalog row into a :class:`CatalogError`.

The message names the file, the row, the field, the value received and what was expected, so the
user can fix the file without reading the code: ``offers.yaml: row 3.cards: expected an integer
>= 1, got 0``.
"""

from __future__ import annotations

from pydantic import ValidationError

from ..errors import CatalogError, shown

__all__ = ["catalog_error_from"]

_EXPECTED_BY_TYPE: dict[str, str] = {
    "int_parsing": "an integer",
    "int_type": "an integer",
    "int_from_float": "a whole number",
    "float_parsing": "a number",
    "float_type": "a number",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "date_parsing": "an ISO date YYYY-MM-DD",
    "date_from_datetime_parsing": "an ISO date YYYY-MM-DD",
    "date_type": "an ISO date YYYY-MM-DD",
    "string_type": "a string",
    "missing": "a value (the key is required)",
    "extra_forbidden": "no such key",
}


def _describe(error: dict) -> tuple[str, str]:
    """(field path, sentence) for one pydantic error entry."""
    loc = ".".join(str(part) for part in error.get("loc", ()) if part != "__root__")
    kind = error.get("type", "")
    value = error.get("input")
    if kind == "extra_forbidden":
        return loc, f"unknown key {loc.rsplit('.', 1)[-1]!r}"
    if kind == "missing":
        return loc, "required key is missing"
    expected = _EXPECTED_BY_TYPE.get(kind)
    ctx = error.get("ctx") or {}
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=",
              "less_than": "<"}[kind]
        bound = next(iter(ctx.values()), "?")
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)
        expected = f"a number {op} {bound}"
    if kind == "value_error":
        # our own validators: the message already says what was expected
        said = str(ctx.get("error", error.get("msg", "")))
        return loc, (f"{said}, got {shown(value)}" if loc else said)
    if expected is None:
        expected = error.get("msg", "a valid value")
    return loc, f"expected {expected}, got {shown(value)}"


def catalog_error_from(exc: ValidationError, *, file: str, where: str,
                       known_keys: tuple[str, ...] = ()) -> CatalogError:
    """Build one CatalogError listing every problem of a row.

    Args:
        exc: the pydantic error raised while validating the row.
        file: the catalog file (shown first in the message).
        where: the row's place, e.g. ``"row 3"`` or ``"card 'RTX 4090'"``.
        known_keys: the accepted keys, listed when a key is unknown.

    Returns:
        A CatalogError whose ``field`` is ``"<where>.<field>"`` for a single problem (``where``
        when there are several, each then named in the message) and whose value is the first
        offending input.
    """
    parts = []
    first_field = None
    first_value = None
    for error in exc.errors():
        loc, sentence = _describe(error)
        if first_field is None:
            first_field, first_value = loc, error.get("input")
        if error.get("type") == "extra_forbidden" and known_keys:
            sentence += f" (accepted keys: {', '.join(known_keys)})"
        parts.append(f"{loc}: {sentence}" if loc else sentence)
    if len(parts) == 1 and first_field:
        # one problem: the field goes in the prefix ("row 3.cards: expected ...")
        return CatalogError(parts[0].split(": ", 1)[1], field=f"{where}.{first_field}",
                            value=first_value, file=file)
    return CatalogError("; ".join(parts), field=where, value=first_value, file=file)
