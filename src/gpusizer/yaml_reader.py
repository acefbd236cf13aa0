"""Reading YAML input (sheets, catalogs) strictly: text only, no implicit timestamps, no
duplicate keys, no anchors, aliases or merge keys, bounded integers, one-line errors.

PyYAML's safe loader turns ``2026-13-45`` into a date while parsing (and crashes on an impossible
one) and lets a repeated key silently override the first. Here dates stay strings for pydantic to
validate with a field path, and a repeated key is an error: a typo never wins silently.

Anchors, aliases (``&a`` / ``*a``) and merge keys (``<<``) are refused by name from the event
stream, before anything is built: nine levels of aliases expand to 9**9 nodes ("billion laughs",
issue 11 F10), and no sheet or catalog needs them. An integer of more than
:data:`MAX_INT_DIGITS` digits is refused (PyYAML would raise the interpreter's bare int-str
``ValueError``).
"""

from __future__ import annotations

import yaml

__all__ = ["YamlProblem", "parse_yaml", "decode_text"]


class YamlProblem(ValueError):
    """Why a YAML text could not be read (one line, with the line and column)."""


# libyaml's parser when PyYAML was built with it (several times faster), else the pure-Python one;
# both use the same Python resolver and constructor, customized below.
_SafeBase = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_SafeBase):  # type: ignore[misc, valid-type]
    """SafeLoader without the timestamp resolver and with duplicate-key detection."""


_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


MAX_INT_DIGITS = 1000
"""The longest YAML integer accepted, in digits (as ``input_files.MAX_INT_DIGITS``: below the
interpreter's 4,300-digit limit, above any real value, so a field's own bound names it)."""


def _bounded_int(loader: _StrictLoader, node: yaml.ScalarNode) -> int:
    digits = sum(ch.isdigit() for ch in node.value)
    if digits > MAX_INT_DIGITS:
        raise YamlProblem(f"an integer of {digits} digits at line {node.start_mark.line + 1} "
                          f"(at most {MAX_INT_DIGITS} accepted)")
    return loader.construct_yaml_int(node)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _bounded_int)


def _refuse_aliases(text: str) -> None:
    """Walk the event stream (nothing is composed or built) and refuse the first anchor, alias
    or merge key by name."""
    for event in yaml.parse(text, Loader=_StrictLoader):
        line = event.start_mark.line + 1 if event.start_mark else 0
        if isinstance(event, yaml.AliasEvent):
            raise YamlProblem(f"YAML alias *{event.anchor} at line {line} is not accepted "
                              "(anchors and aliases are refused: write the value out)")
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise YamlProblem(f"YAML anchor &{anchor} at line {line} is not accepted "
                              "(anchors and aliases are refused: write the value out)")
        if (isinstance(event, yaml.ScalarEvent) and event.value == "<<"
                and event.tag is None and event.implicit[0]):
            raise YamlProblem(f"YAML merge key << at line {line} is not accepted "
                              "(write the keys out)")


def _mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise YamlProblem(f"key {key!r} is given twice (line {seen[key] + 1} and line "
                              f"{key_node.start_mark.line + 1})")
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def decode_text(data: bytes) -> str:
    """UTF-8 (with or without BOM) bytes → text.

    Raises:
        YamlProblem: the bytes are not UTF-8 text (binary or another encoding).
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise YamlProblem(f"not UTF-8 text (byte {exc.start}: {exc.reason})") from None


def parse_yaml(text: str) -> object:
    """Parse one YAML document strictly.

    Raises:
        YamlProblem: invalid YAML (with line and column), a duplicate key, an anchor, alias or
            merge key, or an integer of more than :data:`MAX_INT_DIGITS` digits.
    """
    try:
        _refuse_aliases(text)
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except YamlProblem:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise YamlProblem(f"invalid YAML{where}: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise YamlProblem(f"invalid YAML: {str(exc).splitlines()[0]}") from None
