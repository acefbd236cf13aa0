"""Library versions as ordered values: "5.24.0", "4.57", "0.6.3.post1", "0.11.0rc2".

The grammar is the sheet's (``sheet._VERSION``); ordering follows PEP 440 for these forms:
a pre-release (``aN``, ``bN``, ``rcN``) sorts before its release, a ``.postN`` after it, and
"4.57" is "4.57.0".
"""

from __future__ import annotations

import re

__all__ = ["VersionKey", "version_key", "format_range"]

VersionKey = tuple[int, int, int, int, int]
"""``(major, minor, patch, phase, n)``: phase 0 = pre-release (a, b, rc), 1 = release,
2 = post-release."""

_PARTS = re.compile(r"^([0-9]+)\.([0-9]+)(?:\.([0-9]+))?(?:(\.post|rc|a|b)([0-9]+))?$")
_PRE = {"a": 0, "b": 1, "rc": 2}


def version_key(version: str) -> VersionKey:
    """The sortable key of ``version``.

    Raises:
        ValueError: not "X.Y", "X.Y.Z", optionally followed by ".postN", "rcN", "aN" or "bN".
    """
    m = _PARTS.match(version)
    if m is None:
        raise ValueError(f"not a release number: {version!r}")
    major, minor, patch, tag, n = m.groups()
    base = (int(major), int(minor), int(patch or 0))
    if tag is None:
        return (*base, 1, 0)
    if tag == ".post":
        return (*base, 2, int(n))
    # pre-releases sort before the release, in a < b < rc order
    return (*base, 0, _PRE[tag] * 10_000 + int(n))


def format_range(low: str, high: str | None) -> str:
    """``">=4.36, <5.0"`` (``high`` None: no upper end)."""
    return f">={low}" + (f", <{high}" if high else "")
