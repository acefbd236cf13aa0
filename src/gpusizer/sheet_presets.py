"""Framework presets (``stack.framework``): a training stack's documented defaults fill the sheet
keys the sheet leaves unset, before the sheet is validated (CONTRACT.md ``stack``).

The table is ``gpusizer/data/framework_presets.yaml``: per framework and sheet key, the value the
stack uses when its user sets nothing, with the file and symbol it comes from, or ``unknown``
with the reason (said in a note on the output, never guessed). Explicit keys win. The hash
covers the sheet with the defaults resolved; ``framework: auto`` fills nothing, so a sheet
without a framework keeps its hash. docs/framework-presets.md renders the table.
"""

from __future__ import annotations

import copy
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from .yaml_reader import parse_yaml

__all__ = ["PRESET_KEYS", "framework_presets", "resolve_framework", "framework_notes"]

PRESET_KEYS = ("training.loss", "training.packing", "training.checkpointing",
               "training.prepare_kbit_training", "attention", "training.optimizer",
               "training.optimizer_impl")
"""The sheet keys a preset may fill; ``training.checkpointing`` is the group
``gradient_checkpointing`` + ``checkpointing`` (filled only when the sheet sets neither)."""


@lru_cache(maxsize=1)
def framework_presets() -> dict[str, dict[str, Any]]:
    """The preset table: framework → ``{"project": str[, "not_sized": str], "keys": {sheet key:
    entry}}``, each entry
    ``{"value", "source"[, "library", "since", "before"]}`` or ``{"unknown": reason}``."""
    text = resources.files("gpusizer").joinpath("data/framework_presets.yaml").read_text(
        encoding="utf-8")
    return parse_yaml(text)


def _release(text: str) -> tuple[int, ...]:
    """``"1.7.0"`` → (1, 7, 0); the leading X.Y[.Z] of a release string."""
    return tuple(int(n) for n in re.findall(r"\d+", text.split("rc")[0].split(".post")[0])[:3])


def _value(entry: dict[str, Any], stack: dict[str, Any]) -> Any:
    """The entry's value under the sheet's ``stack`` versions (``before`` when the library is
    pinned older than ``since``)."""
    library = entry.get("library")
    pinned = stack.get(library) if library else None
    if isinstance(pinned, str) and pinned != "auto" and re.match(r"^\d", pinned) \
            and _release(pinned) < _release(entry["since"]):
        return entry["before"]
    return entry["value"]


def resolve_framework(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a parsed sheet mapping) with the framework's documented defaults filled in where
    the sheet leaves a key unset; the mapping itself when ``stack.framework`` is absent, auto
    or not a framework the table knows (validation then says what is wrong)."""
    stack = data.get("stack")
    framework = stack.get("framework") if isinstance(stack, dict) else None
    table = framework_presets()
    if not isinstance(framework, str) or framework not in table:
        return data
    training = data.get("training")
    if data.get("task") in (None, "inference") or not isinstance(training, dict):
        return data
    out = copy.deepcopy(data)
    tr = out["training"]
    for key, entry in table[framework]["keys"].items():
        if "unknown" in entry:
            continue
        value = _value(entry, stack)
        if key == "training.checkpointing":
            if "gradient_checkpointing" not in tr and "checkpointing" not in tr:
                tr.update(copy.deepcopy(value))
        elif key == "training.prepare_kbit_training":
            if data.get("task") == "qlora":
                tr.setdefault("prepare_kbit_training", value)
        elif key == "training.optimizer_impl":
            preset_optimizer = table[framework]["keys"].get("training.optimizer", {})
            if tr.get("optimizer", preset_optimizer.get("value")) == preset_optimizer.get("value"):
                tr.setdefault("optimizer_impl", value)
        elif key == "attention":
            out.setdefault("attention", value)
        else:
            tr.setdefault(key.removeprefix("training."), value)
    return out


def _sheet_value(sheet: Any, key: str, value: Any) -> Any:
    """The sheet's own value for ``key``, in the shape of the preset's ``value``."""
    t = sheet.training
    if key == "attention":
        return sheet.attention
    if key == "training.checkpointing":
        got: dict[str, Any] = {"gradient_checkpointing": t.gradient_checkpointing}
        if "checkpointing" in value:
            got["checkpointing"] = {k: getattr(t.checkpointing, k) for k in value["checkpointing"]}
        return got
    return getattr(t, key.removeprefix("training."))


def framework_notes(sheet: Any) -> list[str]:
    """Notes for a validated :class:`gpusizer.sheet.Sheet` (read by attribute: this module sits
    below ``sheet``, which imports it) with a framework: the defaults it follows, the keys where the
    sheet differs from them, and what the table does not know for that stack (empty for
    ``framework: auto`` or an inference sheet)."""
    framework = sheet.stack.framework
    table = framework_presets()
    if framework not in table or sheet.training is None:
        return []
    keys = table[framework]["keys"]
    stack = sheet.stack.model_dump()
    same, differs, unknown = [], [], []
    for key, entry in keys.items():
        if key == "training.prepare_kbit_training" and sheet.task != "qlora":
            continue
        if "unknown" in entry:
            unknown.append(f"{key} ({' '.join(entry['unknown'].split())})")
            continue
        value = _value(entry, stack)
        own = _sheet_value(sheet, key, value)
        shown = _shown(value)
        (same if own == value else differs).append(
            f"{key} {shown}" if own == value else f"{key} {_shown(own)} (its default: {shown})")
    notes = [f"stack.framework {framework} ({table[framework]['project']}): its documented "
             f"defaults, filled where the sheet left them unset: {', '.join(same) or 'none'}"
             + (f"; the sheet sets {', '.join(differs)}" if differs else "")
             + " (sources: docs/framework-presets.md)"]
    notes += [f"stack.framework {framework}: no documented default for {u}; the sheet's own "
              "value is used" for u in unknown]
    if table[framework].get("not_sized"):
        notes.append(f"stack.framework {framework}: not sized: "
                     + " ".join(table[framework]["not_sized"].split()))
    return notes


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_shown(v)}" for k, v in value.items()) + "}"
    return str(value)
