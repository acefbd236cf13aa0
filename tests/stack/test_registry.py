"""The version-rule registry: each rule looked up at the edges of its rows (the versions and
sources are in ``gpusizer/stack/rules.py``; CI runs one version of each library, so the rows
are tables tested by lookup), unknown versions refused, applied versions on the outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusizer import stack
from gpusizer.errors import SheetError
from gpusizer.sheet import parse_sheet
from gpusizer.stack.registry import (LIBRARIES, RULES, Rule, RuleRow, register_library,
                                     register_rule)
from gpusizer.stack.versions import version_key

DOCS = Path(__file__).resolve().parents[2] / "docs" / "stack-rules.md"


@pytest.mark.parametrize(("library", "rule", "version", "value"), [
    ("transformers", "bnb_moe_experts", "4.30.0", "per_expert_linear"),
    ("transformers", "bnb_moe_experts", "4.57.6", "per_expert_linear"),
    ("transformers", "bnb_moe_experts", "5.0.0rc1", "per_expert_linear"),  # before 5.0
    ("transformers", "bnb_moe_experts", "5.0", "stacked_kept_dense"),
    ("transformers", "bnb_moe_experts", "auto", "stacked_kept_dense"),
    ("transformers", "kv_cache", "4.35.2", "legacy_tuple"),
    ("transformers", "kv_cache", "4.36.0", "per_layer_cache"),
    ("peft", "all_linear_moe", "0.18.1", "nn_linear_only"),
    ("peft", "all_linear_moe", "0.21.2", "converted_experts_and_router"),
    ("trl", "sft_max_length", "0.15.2", "max_seq_length:1024"),
    ("trl", "sft_max_length", "0.19.1", "max_length:1024"),
    ("trl", "sft_max_length", "1.13.0", "max_length:1024"),
    ("bitsandbytes", "params4bit_blocksize", "0.45.0", "64"),
    ("vllm", "engine_core", "0.6.4.post1", "V0"),
    ("vllm", "engine_core", "0.10.1", "V1"),
    ("sglang", "mem_fraction_static_default", "0.4.1", "by_tp_size"),
    ("sglang", "mem_fraction_static_default", "0.5.4", "reserved_memory"),
    ("deepspeed", "zero2_estimator", "0.14.2", "4P+16P/G"),
    ("deepspeed", "zero2_estimator", "auto", "2P+18P/G"),
])
def test_rule_lookup(library, rule, version, value):
    assert stack.rule_value(library, rule, version) == value


def test_versions_order_as_pep_440():
    order = ["0.6.3rc1", "0.6.3", "0.6.3.post1", "0.6.4", "4.9", "4.36", "4.36.1", "5.0"]
    assert sorted(order, key=version_key) == order
    assert version_key("4.57") == version_key("4.57.0")


def test_known_ranges_are_where_every_rule_has_a_row():
    assert stack.known_ranges("transformers") == (("4.30", "5.25"),)
    # PEFT 0.19-0.20: the all-linear conversion landed between them, not dated here
    assert stack.known_ranges("peft") == (("0.8", "0.19"), ("0.21", "0.22"))
    # the serving rules' ranges (memory/engines/versions.py): V0 from 0.4, V1 checked to 0.11
    assert stack.known_ranges("vllm") == (("0.4", "0.12"),)


def test_engine_tables_and_the_registry_pin_the_same_release():
    from gpusizer.memory.engines.versions import SGLANG_AUTO, VLLM_AUTO
    assert LIBRARIES["vllm"].pinned == VLLM_AUTO and LIBRARIES["sglang"].pinned == SGLANG_AUTO


def test_auto_is_the_pinned_version_and_is_known():
    for name, lib in LIBRARIES.items():
        assert stack.check_version(name, "auto") == lib.pinned


@pytest.mark.parametrize(("key", "value"), [("transformers", "6.1"), ("peft", "0.20.0"),
                                            ("trl", "0.7.1"), ("vllm", "0.33.0")])
def test_the_sheet_refuses_a_version_no_table_knows(key, value):
    with pytest.raises(SheetError) as err:
        parse_sheet({"model": {"parameters": 7_000_000_000}, "task": "inference",
                     "weights": "fp16", "stack": {key: value}})
    text = str(err.value)
    assert f"stack.{key}" in text and "known >=" in text and value in text


def test_a_known_version_is_accepted():
    s = parse_sheet({"model": {"parameters": 7_000_000_000}, "task": "inference",
                     "weights": "fp16", "stack": {"transformers": "4.57.1", "trl": "0.19.1"}})
    assert stack.applied_versions(s.stack)["transformers"] == "4.57.1"
    assert stack.applied_versions(s.stack)["peft"] == LIBRARIES["peft"].pinned


def test_register_rule_checks_its_rows():
    register_library("scratch-lib", "1.2.0", "test")
    try:
        with pytest.raises(ValueError, match="overlap"):
            register_rule(Rule("scratch-lib", "r", "m", (RuleRow("1.0", "1.3", "a", "s"),
                                                        RuleRow("1.2", None, "b", "s")), "x"))
        with pytest.raises(ValueError, match="pinned"):
            register_rule(Rule("scratch-lib", "r", "m", (RuleRow("1.0", "1.1", "a", "s"),), "x"))
        register_rule(Rule("scratch-lib", "r", "m", (RuleRow("1.0", "2.0", "a", "s"),), "x"))
        assert stack.known_ranges("scratch-lib") == (("1.0", "2.0"),)
    finally:
        LIBRARIES.pop("scratch-lib")
        RULES.pop("scratch-lib")


def test_every_rule_is_in_the_docs_table():
    text = DOCS.read_text(encoding="utf-8")
    for library, rules in RULES.items():
        for name, rule in rules.items():
            assert f"`{library}.{name}`" in text, name
            for row in rule.rows:
                assert f"`{row.value}`" in text and row.versions in text, (name, row)
    for name, lib in LIBRARIES.items():
        assert f"| {name} | {lib.pinned} |" in text
