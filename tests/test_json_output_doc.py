"""docs/json-output.md is what docs/generate_json_output.py writes from the code's schemas
(issue 12, point 7): regenerate it when an output model changes."""

from __future__ import annotations

import importlib.util

from .conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "docs" / "generate_json_output.py"


def _generator():
    spec = importlib.util.spec_from_file_location("generate_json_output", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_json_output_doc_is_current():
    generated = _generator().render()
    committed = (REPO_ROOT / "docs" / "json-output.md").read_text(encoding="utf-8")
    assert committed == generated, ("docs/json-output.md is stale: run "
                                    "PYTHONPATH=src python docs/generate_json_output.py")


def test_doc_lists_every_output_and_the_new_items_that_exist():
    gen = _generator()
    text = gen.render()
    for name in ("plan", "estimate", "simulate", "fit", "alternatives"):
        assert f"## `gpusizer {name} --format json`" in text
    assert "| `gpusizer schema --output NAME` | yes |" in text
    assert gen.exists("output", "plan:offers.estimated_fit")
    assert not gen.exists("output", "plan:offers.no_such_key")
    assert gen.exists("value", "nvfp4") and gen.exists("sheet", "inference.concurrency")
