"""No figure moves unless a commit says so: every number, state, verdict, provenance and item
name that the CLI printed for the example and validation sheets when ``tests/golden/`` was
written must be printed again, at the same place. New keys may appear; none may vanish or change.

Regenerate with ``python tests/golden/regenerate.py`` only in a commit that moves a figure on
purpose, listing which moved and why.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.golden import regenerate as golden


def leaves(x: Any, path: str = "") -> dict[str, Any]:
    """Path → value for every compared leaf: numbers, booleans, nulls, and the strings of
    ``COMPARED_STRINGS`` keys (prose may be reworded)."""
    out: dict[str, Any] = {}
    if isinstance(x, dict):
        for k, v in x.items():
            if isinstance(v, str):
                if k in golden.COMPARED_STRINGS:
                    out[f"{path}.{k}"] = v
            else:
                out.update(leaves(v, f"{path}.{k}"))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            if not isinstance(v, str):
                out.update(leaves(v, f"{path}[{i}]"))
    else:
        out[path] = x
    return out


def test_leaves_sees_a_moved_number_and_ignores_reworded_prose():
    old = {"memory": {"peak_bytes": 10, "items": [{"name": "weights", "bytes": 4,
                                                   "source": "R5"}]}}
    assert leaves(old) == {".memory.peak_bytes": 10, ".memory.items[0].name": "weights",
                           ".memory.items[0].bytes": 4}
    reworded = {"memory": {"peak_bytes": 10, "items": [{"name": "weights", "bytes": 4,
                                                        "source": "R5, cited"}]}}
    assert leaves(reworded) == leaves(old)
    moved = {"memory": {"peak_bytes": 11, "items": [{"name": "weights", "bytes": 4}]}}
    assert leaves(moved) != leaves(old)


def _cases():
    for sheet in golden.sheets():
        path = golden.GOLDEN / golden.golden_name(sheet)
        if path.exists():
            yield pytest.param(sheet, path, id=path.stem)


@pytest.mark.parametrize(("sheet", "path"), list(_cases()))
def test_figures_unchanged(sheet, path):
    recorded = json.loads(path.read_text())
    try:
        import torch  # noqa: F401
        simulate = True
    except ImportError:
        simulate = False
    labels = golden.commands(sheet, simulate=simulate)
    moved = []
    for label, args in labels.items():
        if label not in recorded:
            continue
        want, got = leaves(recorded[label]), leaves(golden.invoke(*args))
        for key, value in want.items():
            if key not in got:
                moved.append(f"{label}: {key} = {value!r} is gone")
            elif got[key] != value:
                moved.append(f"{label}: {key} {value!r} → {got[key]!r}")
    assert not moved, f"{len(moved)} figure(s) moved:\n" + "\n".join(moved[:40])


def test_every_sheet_has_its_figures():
    missing = [golden.golden_name(s) for s in golden.sheets()
               if not (golden.GOLDEN / golden.golden_name(s)).exists()]
    assert not missing, f"run python tests/golden/regenerate.py for {missing}"
