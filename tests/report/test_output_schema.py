"""The JSON outputs against their schemas (``gpusizer schema --output NAME``, issue 12 point 7):
real outputs of every command validate (jsonschema, draft 2020-12) and every key they carry is
declared in ``report.output_schema``, so the schema documents the whole interface."""

from __future__ import annotations

import datetime as dt
import json
import types
import typing
from pathlib import Path

import jsonschema
import pytest
from pydantic import BaseModel

from gpusizer import SCHEMA_VERSION, api
from gpusizer.report.output_schema import OUTPUT_MODELS, output_schema

from ..conftest import REPO_ROOT, SHARED, run_cli

EXAMPLES = REPO_ROOT / "examples"
TODAY = dt.date(2026, 12, 1)
VAST = SHARED / "data" / "catalogs" / "skypilot-catalog_v8_vast_vms.csv"


def _validate(name: str, doc: dict) -> None:
    jsonschema.Draft202012Validator(output_schema(name)).validate(doc)
    OUTPUT_MODELS[name].model_validate(doc)
    undeclared = list(_undeclared(OUTPUT_MODELS[name], doc, name))
    assert not undeclared, f"keys the {name} schema does not declare: {undeclared}"


def _models_in(annotation) -> list[type[BaseModel]]:
    """The pydantic models an annotation may hold (through Optional, list, dict values)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if origin is dict:
        args = args[1:]
    if origin in (typing.Union, types.UnionType, list, dict, tuple):
        return [m for a in args for m in _models_in(a)]
    return []


def _undeclared(model: type[BaseModel], value, where: str):
    """Dotted paths of keys in ``value`` that ``model`` (recursively) does not declare."""
    if not isinstance(value, dict):
        return
    for key, inner in value.items():
        info = model.model_fields.get(key)
        if info is None:
            yield f"{where}.{key}"
            continue
        for sub in _models_in(info.annotation):
            origin = typing.get_origin(info.annotation)
            items = (inner.values() if isinstance(inner, dict) and origin is dict
                     else inner if isinstance(inner, list) else [inner])
            for element in items:
                yield from _undeclared(sub, element, f"{where}.{key}")


@pytest.mark.parametrize("sheet", ["llama-3.1-8b-serving.yaml", "llama-3.1-8b-qlora.yaml",
                                   "seed-7b-fp16.yaml", "qwen3-30b-a3b-moe.yaml",
                                   "deepseek-v3-8xh200-vllm.yaml"])
def test_plan_json_of_the_examples_matches_its_schema(sheet):
    catalogs = [EXAMPLES / "catalogs" / "h200-lots.yaml"] if "deepseek" in sheet else None
    doc = api.plan(EXAMPLES / sheet, catalogs=catalogs, today=TODAY).to_json()
    assert doc["schema_version"] == SCHEMA_VERSION == 2
    _validate("plan", doc)


def test_plan_json_on_a_skypilot_catalog_matches_its_schema(shared_dir):
    doc = api.plan(EXAMPLES / "llama-3.1-8b-serving.yaml", catalogs=[VAST],
                   today=TODAY).to_json()
    assert len(doc["offers"]) == 67
    _validate("plan", doc)


def test_plan_json_printed_by_the_cli_matches_its_schema():
    doc = json.loads(run_cli("plan", "examples/seed-7b-fp16.yaml", "--format", "json",
                             "--today", "2026-12-01").stdout)
    _validate("plan", doc)


@pytest.mark.parametrize("sheet, card", [("llama-3.1-8b-serving.yaml", None),
                                         ("llama-3.1-8b-serving.yaml", "H100 SXM"),
                                         ("llama-3.1-8b-qlora.yaml", "RTX 4090"),
                                         ("seed-7b-fp16.yaml", None)])
def test_estimate_json_matches_its_schema(sheet, card):
    doc = api.estimate(EXAMPLES / sheet, card=card).to_json()
    assert doc["schema_version"] == 2
    assert ("fit" in doc) == (card is not None)
    _validate("estimate", doc)


@pytest.mark.parametrize("sheet", ["llama-3.1-8b-serving.yaml", "llama-3.1-8b-qlora.yaml"])
def test_fit_json_matches_its_schema_and_limits_repeat_the_answers(sheet):
    doc = api.fit(EXAMPLES / sheet, card="RTX 4090").to_json()
    _validate("fit", doc)
    assert {v["question"]: v["largest"] for v in doc["limits"].values()} == doc["answers"]
    for limit in doc["limits"].values():
        if limit["largest"] is not None:
            assert limit["change"] == limit["largest"] - limit["required"]
            assert limit["headroom_bytes"] >= 0  # the largest that fits leaves headroom


def test_alternatives_json_matches_its_schema():
    doc = api.alternatives(EXAMPLES / "llama-3.1-8b-serving.yaml", today=TODAY).to_json()
    assert doc["schema_version"] == 2
    _validate("alternatives", doc)


@pytest.mark.parametrize("sheet", ["llama-3.1-8b-serving.yaml", "deepseek-v3-8xh200-vllm.yaml",
                                   "llama-3.1-8b-qlora.yaml"])
def test_cards_json_matches_its_schema(sheet):
    doc = api.cards(EXAMPLES / sheet).to_json()
    _validate("cards", doc)
    assert doc["schema_version"] == SCHEMA_VERSION


def test_simulate_json_matches_its_schema():
    pytest.importorskip("torch", reason="the simulate extra (torch) is not installed")
    doc = api.simulate(REPO_ROOT / "benchmarks/sheets/llama-serve-4k.yaml",
                       card="H100 SXM").to_json()
    assert doc["schema_version"] == 2
    _validate("simulate", doc)


@pytest.mark.parametrize("name", sorted(OUTPUT_MODELS))
def test_schema_command_prints_each_outputs_schema(name):
    printed = json.loads(run_cli("schema", "--output", name).stdout)
    assert printed == output_schema(name)
    jsonschema.Draft202012Validator.check_schema(printed)
    assert "schema_version" in printed["required"]


def test_plain_schema_stays_the_sheets():
    printed = json.loads(run_cli("schema").stdout)
    assert printed["title"] == "Sheet" and "model" in printed["properties"]


def test_a_wrong_key_type_fails_the_schema():
    doc = api.estimate(EXAMPLES / "seed-7b-fp16.yaml").to_json()
    doc["memory"]["peak_bytes"] = "21 GB"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, output_schema("estimate"))


def test_plan_invalidator_details_are_the_invalidators_under_machine_keys():
    doc = api.plan(EXAMPLES / "llama-3.1-8b-serving.yaml", today=TODAY).to_json()
    details = doc["invalidator_details"]
    assert [d["text"] for d in details] == doc["invalidators"]
    longer = next(d for d in details if d["kind"] == "longer_input")
    # the README example: 7168 + 1024 tokens doubled
    assert longer["changes"] == [
        {"field": "inference.prompt_tokens", "value": 7168, "changed_to": 14336},
        {"field": "inference.new_tokens", "value": 1024, "changed_to": 2048}]
    # KV cache of 8 sequences: 131072 B per token × 8192 more tokens × 8 = 8 GiB more, at least
    assert longer["peak_change_bytes"] == (longer["device_peak_bytes"]
                                           - doc["memory"]["device_peak_bytes"])
    assert longer["peak_change_bytes"] >= 131072 * 8192 * 8
    declared = next(d for d in details if d["kind"] == "declared_items")
    assert "cuda_context" in declared["subjects"]


def test_measure_and_quality_evidence_carry_the_schema_version():
    from gpusizer.measure.evidence_writer import build_evidence
    doc = build_evidence(sheet_sha256="0" * 64, version="gpusizer 0.1.0", raw_notes=["r.jsonl"],
                         identity={}, environment={}, provider=None, offer_id=None, model={},
                         placement={}, rungs=[], stopped=None, injected=None,
                         date=dt.date(2026, 12, 1))
    assert doc["schema_version"] == 2
    source = (REPO_ROOT / "src/gpusizer/quality/evidence_doc.py").read_text(encoding="utf-8")
    assert '"schema_version": SCHEMA_VERSION' in source
