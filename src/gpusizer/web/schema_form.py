"""The sheet form, generated from the sheet's own JSON Schema (``gpusizer schema``), and the sheet
a submitted form makes.

Every property of :class:`gpusizer.sheet.Sheet` becomes a field without a hand-written line, so a
key another issue adds appears by itself: a nested object is a fieldset, an enum (or a union of
constants and booleans) a select, a boolean a checkbox, a list of strings a comma-separated
input, anything else a text input; a default is pre-filled and a description is the help text.
A key that names a path (:data:`PATH_KEY`: ``model.path``, ``quality.corpus``) is a file upload:
a path typed by a user is never opened (:func:`refused_paths`).

A submitted form gives the keys whose value differs from their default (:func:`sheet_from_form`),
so the sheet is as short as one written by hand, and a block left at its defaults stays out.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..yaml_reader import YamlProblem, parse_yaml

__all__ = ["FormField", "PATH_KEY", "form_fields", "sheet_from_form", "refused_paths",
           "path_fields", "dump_yaml", "NO_DEFAULT", "walk", "set_key", "sheet_schema"]

PATH_KEY = re.compile(r"(^|_)(path|corpus|file|files|dir|folder)($|_)")
"""A sheet key that names a file or folder (``path``, ``corpus``, ``*_file``, ``*_dir`` …), at
any depth: the web page refuses its value unless it names an uploaded file."""

NO_DEFAULT = object()
"""The default of a field that has none (a required key, or a default no input can show)."""

_SCALARS = (str, int, float, bool)


@dataclass(frozen=True)
class FormField:
    """One key of the sheet as a form field.

    Attributes:
        name: the dotted key (``inference.concurrency``); the form input's name.
        kind: ``object`` (a fieldset of ``children``), ``enum`` (a select of ``options``),
            ``bool`` (a checkbox), ``integer``, ``number``, ``string``, ``list`` (comma-separated
            strings), ``yaml`` (a value of several shapes, written as YAML) or ``upload`` (a key
            naming a path: a file input).
        help: the schema's description of the key.
        default: the schema's default (:data:`NO_DEFAULT`: none).
        options: a select's choices, as the text each is written in YAML.
        required: the key is required in its block.
        optional: the block may be absent (``inference``, ``training``, ``quality``, ``budget``).
        folder: an upload that stands for a folder (its description starts with "Folder"): the
            uploaded files are kept under their own names in a folder the key then names.
    """

    name: str
    kind: str
    help: str = ""
    default: Any = NO_DEFAULT
    options: tuple[str, ...] = ()
    required: bool = False
    optional: bool = False
    folder: bool = False
    children: tuple["FormField", ...] = field(default=())

    @property
    def key(self) -> str:
        """The last part of the dotted name."""
        return self.name.rpartition(".")[2]

    @property
    def default_text(self) -> str:
        """The default as the input shows it ("" for none or one no input can show)."""
        d = self.default
        if d is NO_DEFAULT or d is None or not isinstance(d, _SCALARS) or isinstance(d, bool):
            return ""
        return str(d)

    @property
    def checked(self) -> bool:
        """A checkbox's default state."""
        return self.default is True


def _yaml_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The node behind ``$ref`` and a nullable ``anyOf`` (and whether null was a choice)."""
    nullable = False
    while True:
        if "$ref" in node:
            node = {**defs[node["$ref"].rpartition("/")[2]],
                    **{k: v for k, v in node.items() if k != "$ref"}}
            continue
        branches = node.get("anyOf")
        if branches:
            real = [b for b in branches if b.get("type") != "null"]
            nullable = nullable or len(real) < len(branches)
            if len(real) == 1:
                node = {**{k: v for k, v in node.items() if k != "anyOf"}, **real[0]}
                continue
        return node, nullable


def _choices(node: dict[str, Any], defs: dict[str, Any]) -> list[Any] | None:
    """The values of an enum, a constant, a boolean or a union of those; None otherwise."""
    if "enum" in node:
        return list(node["enum"])
    if "const" in node:
        return [node["const"]]
    if node.get("type") == "boolean":
        return [True, False]
    if "anyOf" in node:
        out: list[Any] = []
        for b in node["anyOf"]:
            if b.get("type") == "null":
                continue
            sub = _choices(_resolve(b, defs)[0], defs)
            if sub is None:
                return None
            out += [v for v in sub if v not in out]
        return out
    return None


def _field(name: str, node: dict[str, Any], defs: dict[str, Any], required: bool) -> FormField:
    raw_default = node.get("default", NO_DEFAULT)
    node, nullable = _resolve(node, defs)
    help_text = " ".join(str(node.get("description", "")).split())
    default = node.get("default", raw_default) if raw_default is NO_DEFAULT else raw_default
    common = {"name": name, "help": help_text, "default": default, "required": required}
    if PATH_KEY.search(name.rpartition(".")[2]):
        return FormField(kind="upload", folder=help_text.lower().startswith("folder"), **common)
    if node.get("type") == "object" or "properties" in node:
        need = set(node.get("required", ()))
        children = tuple(_field(f"{name}.{k}" if name else k, v, defs, k in need)
                         for k, v in node.get("properties", {}).items())
        return FormField(kind="object", optional=nullable, children=children, **common)
    if node.get("type") == "boolean":
        return FormField(kind="bool", **common)
    choices = _choices(node, defs)
    if choices is not None:
        options = ([""] if nullable else []) + [_yaml_text(c) for c in choices]
        if isinstance(default, bool):
            common["default"] = _yaml_text(default)
        return FormField(kind="enum", options=tuple(options), **common)
    kind = node.get("type")
    if kind == "array" and node.get("items", {}).get("type") == "string":
        return FormField(kind="list", **common)
    if kind in ("integer", "number"):
        return FormField(kind=kind, **common)
    if kind == "string" and "anyOf" not in node:
        return FormField(kind="string", **common)
    return FormField(kind="yaml", **common)


@functools.lru_cache(maxsize=1)
def sheet_schema() -> dict[str, Any]:
    """The sheet's JSON Schema (``gpusizer schema``), computed once."""
    from ..sheet import Sheet
    return Sheet.model_json_schema()


def form_fields(schema: Mapping[str, Any] | None = None) -> tuple[FormField, ...]:
    """Every top-level key of the sheet as a form field, in the schema's order (nested blocks
    as ``object`` fields with their children)."""
    s = dict(schema if schema is not None else sheet_schema())
    root = _field("", s, s.get("$defs", {}), True)
    return root.children


def walk(fields: tuple[FormField, ...]) -> Iterator[FormField]:
    """Every field, depth first (objects before their children)."""
    for f in fields:
        yield f
        yield from walk(f.children)


def path_fields(fields: tuple[FormField, ...]) -> list[FormField]:
    """The upload fields: the keys that name a path."""
    return [f for f in walk(fields) if f.kind == "upload"]


def _parsed(f: FormField, text: str) -> Any:
    """The value a field's text stands for (text as typed where YAML cannot read it, so the
    sheet's own validation names the field)."""
    if f.kind == "string":
        return text
    if f.kind == "list":
        return [p.strip() for p in text.split(",") if p.strip()]
    if f.kind == "enum" and text in f.options and text not in ("true", "false"):
        return text
    try:
        value = parse_yaml(text)
    except YamlProblem:
        return text
    return text if value is None else value


def _differs(f: FormField, value: Any) -> bool:
    default = f.default
    if f.kind == "enum" and isinstance(value, bool):
        return _yaml_text(value) != default
    if default is NO_DEFAULT:
        return True
    if isinstance(default, (int, float)) and not isinstance(default, bool) \
            and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(default) != float(value)
    return value != default


def sheet_from_form(fields: tuple[FormField, ...], data: Mapping[str, str]) -> dict[str, Any]:
    """The sheet mapping a submitted form makes: every key whose input differs from its default
    (an empty input is left out; a checkbox is true when sent), blocks with at least one key.

    Args:
        fields: :func:`form_fields`.
        data: the submitted text per dotted name (a checkbox sends any value when checked).
    """
    out: dict[str, Any] = {}
    for f in fields:
        if f.kind == "object":
            block = sheet_from_form(f.children, data)
            if block:
                out[f.key] = block
        elif f.kind == "upload":
            continue
        elif f.kind == "bool":
            value = f.name in data
            if value != (f.default is True):
                out[f.key] = value
        else:
            text = str(data.get(f.name, "")).strip()
            if not text or text == f.default_text:
                continue
            value = _parsed(f, text)
            if _differs(f, value):
                out[f.key] = value
    return out


def refused_paths(sheet: Mapping[str, Any], uploaded: Mapping[str, str],
                  prefix: str = "") -> str | None:
    """The first key of ``sheet`` (dotted, at any depth) that names a path (:data:`PATH_KEY`)
    with a value other than the one an upload gave it (``uploaded``: dotted key → the relative
    path its upload was saved under); None when every path key names an upload."""
    for key, value in sheet.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            bad = refused_paths(value, uploaded, f"{name}.")
            if bad:
                return bad
        elif value is not None and PATH_KEY.search(str(key)) and uploaded.get(name) != value:
            return name
    return None


def set_key(sheet: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``dotted`` (``model.path``) in ``sheet``, creating blocks on the way."""
    *blocks, last = dotted.split(".")
    node = sheet
    for b in blocks:
        nxt = node.get(b)
        if not isinstance(nxt, dict):
            nxt = node[b] = {}
        node = nxt
    node[last] = value


def dump_yaml(sheet: Mapping[str, Any]) -> str:
    """``sheet`` as YAML, keys in the form's order (what the page shows and downloads)."""
    return yaml.safe_dump(dict(sheet), sort_keys=False, allow_unicode=True,
                          default_flow_style=False)
