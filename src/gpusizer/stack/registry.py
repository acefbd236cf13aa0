"""One registry for the rules that changed between library versions: library → rule → version
ranges → value.

Each library is registered once with the version gpusizer's rules were written for (what the
sheet's ``auto`` means); each rule lists rows, each a half-open version range ``[low, high)``
with the rule's value there and the source it is read from. A version is known for a library
when every rule of that library has a row covering it; a library with no rule yet knows the
release line of its pinned version (``X.Y.*``). A version no table knows is refused by the sheet
(:func:`check_version`), listing those known.

To add a rule (a serving engine's, say), call :func:`register_rule` in a module imported by
``gpusizer.stack`` (``rules.py`` holds the transformers, PEFT, bitsandbytes and TRL ones), then
read it with :func:`rule_value`; ``docs/stack-rules.md`` lists every rule (a test checks it).
"""

from __future__ import annotations

from dataclasses import dataclass

from .versions import format_range, version_key

__all__ = ["RuleRow", "Rule", "Library", "LIBRARIES", "RULES", "register_library",
           "register_rule", "known_ranges", "resolve", "check_version", "rule_value",
           "rule_row", "UnknownVersion"]


class UnknownVersion(ValueError):
    """A library version no rule table covers (the sheet refuses it, exit 2)."""


@dataclass(frozen=True)
class RuleRow:
    """One version range of a rule.

    Attributes:
        low: the first version it covers (inclusive).
        high: the first version it no longer covers (exclusive), or None: no upper end.
        value: the rule's value for these versions (a word the code branches on).
        source: where the behaviour is read (repository, path and version; PR or issue).
    """

    low: str
    high: str | None
    value: str
    source: str

    def covers(self, version: str) -> bool:
        """``low <= version < high``."""
        key = version_key(version)
        return version_key(self.low) <= key and (self.high is None
                                                  or key < version_key(self.high))

    @property
    def versions(self) -> str:
        """The range in words (``">=4.36, <5.0"``)."""
        return format_range(self.low, self.high)


@dataclass(frozen=True)
class Rule:
    """A behaviour that changed between versions of one library.

    Attributes:
        library: the library whose version selects the row (``transformers``…).
        name: the rule's name (unique within the library).
        meaning: what the rule decides, in one sentence (the docs table).
        rows: the version ranges, in order; they must not overlap.
        used_by: the gpusizer module that applies it.
    """

    library: str
    name: str
    meaning: str
    rows: tuple[RuleRow, ...]
    used_by: str


@dataclass(frozen=True)
class Library:
    """A library the ``stack`` block names.

    Attributes:
        name: its sheet key (``stack.<name>``).
        pinned: the version gpusizer's rules were written for (``auto``).
        pinned_source: where that version comes from.
    """

    name: str
    pinned: str
    pinned_source: str


LIBRARIES: dict[str, Library] = {}
RULES: dict[str, dict[str, Rule]] = {}


def register_library(name: str, pinned: str, pinned_source: str) -> Library:
    """Register a library of the ``stack`` block and its pinned version.

    Raises:
        ValueError: registered twice, or a pinned version that is no release number.
    """
    if name in LIBRARIES:
        raise ValueError(f"library {name!r} is registered twice")
    version_key(pinned)
    LIBRARIES[name] = lib = Library(name, pinned, pinned_source)
    RULES.setdefault(name, {})
    return lib


def register_rule(rule: Rule) -> Rule:
    """Add ``rule`` to its library's table.

    Raises:
        ValueError: an unregistered library, a name used twice, overlapping rows, or rows that
            do not cover the library's pinned version.
    """
    lib = LIBRARIES.get(rule.library)
    if lib is None:
        raise ValueError(f"rule {rule.name!r}: library {rule.library!r} is not registered")
    if rule.name in RULES[rule.library]:
        raise ValueError(f"rule {rule.library}.{rule.name} is registered twice")
    rows = sorted(rule.rows, key=lambda r: version_key(r.low))
    for a, b in zip(rows, rows[1:]):
        if a.high is None or version_key(a.high) > version_key(b.low):
            raise ValueError(f"rule {rule.library}.{rule.name}: rows {a.versions} and "
                             f"{b.versions} overlap")
    if not any(r.covers(lib.pinned) for r in rows):
        raise ValueError(f"rule {rule.library}.{rule.name} has no row for the pinned "
                         f"{rule.library} {lib.pinned}")
    RULES[rule.library][rule.name] = rule
    return rule


def _pinned_line(lib: Library) -> tuple[str, str | None]:
    major, minor = version_key(lib.pinned)[:2]
    return f"{major}.{minor}", f"{major}.{minor + 1}"


def known_ranges(library: str) -> tuple[tuple[str, str | None], ...]:
    """The version ranges ``[low, high)`` every rule of ``library`` has a row for (a library
    without rules: its pinned release line), merged and in order.

    Raises:
        KeyError: an unregistered library.
    """
    lib = LIBRARIES[library]
    rules = list(RULES[library].values())
    if not rules:
        return (_pinned_line(lib),)
    points = sorted({p for r in rules for row in r.rows for p in (row.low, row.high) if p},
                    key=version_key)
    spans: list[tuple[str, str | None]] = []
    for i, low in enumerate(points):
        high = points[i + 1] if i + 1 < len(points) else None
        if all(any(row.covers(low) and (row.high is None or (
                high is not None and version_key(row.high) >= version_key(high)))
                   for row in r.rows) for r in rules):
            if spans and spans[-1][1] == low:
                spans[-1] = (spans[-1][0], high)
            else:
                spans.append((low, high))
    return tuple(spans)


def resolve(library: str, version: str) -> str:
    """``auto`` → the pinned version; any other version as given."""
    return LIBRARIES[library].pinned if version == "auto" else version


def check_version(library: str, version: str) -> str:
    """The version the rules will use for ``library`` (``auto``: the pinned one).

    Raises:
        UnknownVersion: a version outside every known range, with the ranges known.
        KeyError: an unregistered library.
    """
    resolved = resolve(library, version)
    key = version_key(resolved)
    spans = known_ranges(library)
    for low, high in spans:
        if version_key(low) <= key and (high is None or key < version_key(high)):
            return resolved
    known = "; ".join(format_range(low, high) for low, high in spans)
    raise UnknownVersion(f"no rule table of gpusizer knows {library} {version}: known {known} "
                         f"(auto = {LIBRARIES[library].pinned}); see docs/stack-rules.md")


def rule_row(library: str, name: str, version: str) -> RuleRow:
    """The row of rule ``library.name`` that covers ``version`` (``auto``: the pinned one).

    Raises:
        UnknownVersion: no row covers it (the sheet refuses such versions before this).
        KeyError: an unknown library or rule.
    """
    resolved = resolve(library, version)
    for row in RULES[library][name].rows:
        if row.covers(resolved):
            return row
    raise UnknownVersion(f"rule {library}.{name} has no row for {library} {resolved}")


def rule_value(library: str, name: str, version: str) -> str:
    """The value of rule ``library.name`` for ``version`` (:func:`rule_row`)."""
    return rule_row(library, name, version).value
