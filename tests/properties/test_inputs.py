"""Every generated input file: exit 0 with finite JSON, or exit 2 with one short line naming a
field or the file; never a traceback, never exit 1 for bad input. The echoed sheet is the input
after the contract's normalisation."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import yaml
from hypothesis import given, strategies as st

from .cli_run import TODAY, check_outcome, invoke
from .normalise import differences, normalise
from .strategies import (SCHEMA, catalog_rows, config_variants, evidence_docs, mutated,
                         safetensors_files, schema_sheets, valid_sheets)

BASE = {"model": {"parameters": 1_000_000_000}, "task": "inference", "weights": "bf16",
        "inference": {"prompt_tokens": 512, "new_tokens": 64}, "budget": {"max_usd": 100,
                                                                         "days": 3}}


def _dump(path: Path, data) -> Path:
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    return path


@given(st.one_of(valid_sheets(), mutated(valid_sheets()), schema_sheets()))
def test_any_sheet_file(sheet):
    with tempfile.TemporaryDirectory() as d:
        f = _dump(Path(d) / "s.yaml", sheet)
        check_outcome(invoke(["plan", str(f), "--format", "json", "--today", TODAY]),
                      names=("s.yaml", *SCHEMA["properties"]))


@given(valid_sheets())
def test_the_echoed_sheet_is_the_input_normalised(sheet):
    with tempfile.TemporaryDirectory() as d:
        f = _dump(Path(d) / "s.yaml", sheet)
        out = check_outcome(invoke(["plan", str(f), "--format", "json", "--today", TODAY]))
    if out is None:  # a valid sheet may still be refused (e.g. a format the task forbids)
        return
    diff = differences(normalise(sheet), out["sheet"])
    assert not diff, diff


@given(st.lists(st.one_of(catalog_rows(), mutated(catalog_rows())), min_size=1, max_size=3))
def test_any_catalog_file(rows):
    with tempfile.TemporaryDirectory() as d:
        s = _dump(Path(d) / "s.yaml", BASE)
        c = _dump(Path(d) / "offers.yaml", rows)
        check_outcome(invoke(["plan", str(s), "--catalog", str(c), "--format", "json",
                              "--today", TODAY]), names=("offers.yaml",))


@given(config_variants(), st.data())
def test_any_model_folder(cfg, data):
    with tempfile.TemporaryDirectory() as d:
        m = Path(d) / "m"
        m.mkdir()
        (m / "config.json").write_text(json.dumps(cfg))
        if data.draw(st.booleans(), label="with safetensors"):
            (m / "model.safetensors").write_bytes(data.draw(safetensors_files(cfg)))
        s = _dump(Path(d) / "s.yaml", {**BASE, "model": {"path": "m"}, "weights": "auto"})
        check_outcome(invoke(["estimate", str(s), "--format", "json"]),
                      names=("config.json", "safetensors", "s.yaml", "model"))


@given(st.data())
def test_any_evidence_folder(data):
    row = data.draw(catalog_rows(cards=["H200", "RTX 4090"]), label="row")
    docs = data.draw(evidence_docs(BASE, "0" * 64, row), label="docs")
    docs = [data.draw(st.one_of(st.just(doc), mutated(st.just(doc)))) for doc in docs]
    with tempfile.TemporaryDirectory() as d:
        s = _dump(Path(d) / "s.yaml", BASE)
        c = _dump(Path(d) / "offers.yaml", [row])
        ev = Path(d) / "ev"
        ev.mkdir()
        for i, doc in enumerate(docs):
            (ev / f"e{i}.json").write_text(json.dumps(doc))
        check_outcome(invoke(["plan", str(s), "--catalog", str(c), "--evidence", str(ev),
                              "--format", "json", "--today", TODAY]),
                      names=(".json", "ev", "offers.yaml"))
