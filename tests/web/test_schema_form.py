"""The sheet form comes from the sheet's own JSON Schema (issue 18 point 2): every key appears,
typed by its schema; a submitted form gives the sheet a person would write."""

from __future__ import annotations

import pytest

from gpusizer.sheet import Sheet, load_sheet
from gpusizer.web.schema_form import (PATH_KEY, dump_yaml, form_fields, refused_paths,
                                      sheet_from_form, walk)
from gpusizer.yaml_reader import parse_yaml

from .conftest import README_FORM, README_SHEET


def _schema_keys(schema, node=None, prefix=""):
    """Every dotted key of the schema, depth first (the test's own walk)."""
    defs = schema["$defs"]
    node = schema if node is None else node
    out = []
    for key, sub in node.get("properties", {}).items():
        name = prefix + key
        out.append(name)
        refs = [sub] + sub.get("anyOf", [])
        target = next((defs[r["$ref"].split("/")[-1]] for r in refs if "$ref" in r), None)
        if target is not None:
            out += _schema_keys(schema, target, name + ".")
    return out


def test_every_schema_key_is_a_field():
    fields = {f.name for f in walk(form_fields())}
    keys = _schema_keys(Sheet.model_json_schema())
    assert len(keys) > 60
    assert set(keys) == fields


def test_a_key_added_to_the_schema_appears_without_a_new_line_of_form_code():
    schema = Sheet.model_json_schema()
    schema["$defs"]["Inference"]["properties"]["speculative"] = {
        "type": "boolean", "default": False, "description": "a key a later issue adds"}
    f = next(f for f in walk(form_fields(schema)) if f.name == "inference.speculative")
    assert (f.kind, f.default, f.help) == ("bool", False, "a key a later issue adds")


def test_fields_take_their_kind_default_and_help_from_the_schema():
    by = {f.name: f for f in walk(form_fields())}
    assert by["inference"].kind == "object" and by["inference"].optional
    assert by["placement.strategy"].kind == "enum"
    assert by["placement.strategy"].options[:2] == ("single", "ddp")
    assert by["placement.strategy"].default_text == "single"
    assert by["inference.concurrency"].kind == "integer"
    assert by["inference.concurrency"].default_text == "1"
    assert by["inference.gpu_memory_utilization"].default_text == "0.9"
    assert by["training.gradient_checkpointing"].kind == "bool"
    assert by["requirements.software"].kind == "list"
    assert by["quantization.prequantized"].options == ("auto", "true", "false")
    assert by["inference.prompt_tokens"].required
    assert by["model.id"].help.startswith("Hugging Face Hub id")
    # the keys that name paths are uploads, never text inputs
    assert {f.name for f in by.values() if f.kind == "upload"} == {"model.path",
                                                                   "quality.corpus"}
    assert by["model.path"].folder and not by["quality.corpus"].folder


def test_the_readme_example_typed_in_the_form_is_the_readme_sheet():
    sheet = sheet_from_form(form_fields(), README_FORM)
    assert sheet == parse_yaml(README_SHEET.read_text())
    # defaults left as pre-filled add nothing
    prefilled = {f.name: f.default_text for f in walk(form_fields()) if f.default_text}
    assert sheet_from_form(form_fields(), {**prefilled, **README_FORM}) == sheet
    assert Sheet.model_validate(sheet) == load_sheet(README_SHEET)
    assert dump_yaml(sheet).startswith("model:\n  id: meta-llama/Meta-Llama-3.1-8B\ntask: ")


def test_values_are_typed_and_a_checkbox_is_true_when_sent():
    sheet = sheet_from_form(form_fields(), {
        **README_FORM, "inference.length_negotiable": "true", "quantization.prequantized": "true",
        "requirements.software": "vllm>=0.8, flash-attn", "reserve": "6 GiB"})
    assert sheet["inference"]["length_negotiable"] is True
    assert sheet["quantization"] == {"prequantized": True}
    assert sheet["requirements"] == {"software": ["vllm>=0.8", "flash-attn"]}
    assert sheet["reserve"] == "6 GiB"


@pytest.mark.parametrize(("key", "expected"), [
    ("path", True), ("corpus", True), ("lock_file", True), ("cache_dir", True),
    ("block_size", False), ("prompt_tokens", False), ("profile", False)])
def test_path_keys(key, expected):
    assert bool(PATH_KEY.search(key)) is expected


def test_a_path_key_is_refused_unless_an_upload_gave_it():
    sheet = {"model": {"path": "/etc"}, "quality": {"corpus": "c.jsonl"}}
    assert refused_paths(sheet, {}) == "model.path"
    assert refused_paths(sheet, {"model.path": "model_path"}) == "model.path"
    assert refused_paths(sheet, {"model.path": "/etc"}) == "quality.corpus"
    assert refused_paths({"model": {"id": "a/b", "path": None}}, {}) is None
