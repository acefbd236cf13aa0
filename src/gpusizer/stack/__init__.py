"""Version-dependent rules (CONTRACT.md ``stack``): which behaviour of transformers, PEFT,
bitsandbytes and TRL applies, chosen by the sheet's library versions.

``registry`` holds the mechanism (library → rule → version ranges → value); ``rules`` the
tables; :func:`applied_versions` gives the versions an output records (``gpusizer.stack``).
This package imports nothing from the stages after it (the sheet reads it to refuse unknown
versions).
"""

from __future__ import annotations

from typing import Any

from . import rules as _rules  # noqa: F401  (registers the tables)
from .registry import (LIBRARIES, RULES, Library, Rule, RuleRow, UnknownVersion, check_version,
                       known_ranges, register_library, register_rule, resolve, rule_row,
                       rule_value)
from .rules import TRANSFORMERS_STACKED_IN_V4, trl_max_length

__all__ = ["LIBRARIES", "RULES", "Library", "Rule", "RuleRow", "UnknownVersion",
           "check_version", "known_ranges", "register_library", "register_rule", "resolve",
           "rule_row", "rule_value", "applied_versions", "TRANSFORMERS_STACKED_IN_V4",
           "trl_max_length"]


def applied_versions(stack: Any) -> dict[str, str]:
    """Library → the version whose rules were applied (``auto`` resolved to the pinned one),
    for every registered library, plus ``framework`` as the sheet gives it.

    Args:
        stack: the sheet's ``stack`` block (``sheet.Stack``), or None (every library auto).
    """
    out = {name: resolve(name, getattr(stack, name, "auto") if stack is not None else "auto")
           for name in LIBRARIES}
    out["framework"] = getattr(stack, "framework", "auto") if stack is not None else "auto"
    return out
