"""The registry is the one list of weight formats: each record's facts, and every consumer
reading it instead of its own table."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import gpusizer.formats
from gpusizer.errors import SheetError
from gpusizer.formats import FORMATS, NAMES, compute_dtype, dtype_format, weight_format

SRC = Path(gpusizer.formats.__file__).parent


def test_sheet_allowed_values_are_the_registry_names():
    from gpusizer.sheet import WEIGHT_FORMATS, Sheet
    assert WEIGHT_FORMATS == NAMES
    assert Sheet.model_fields["weights"].annotation.__args__ == ("auto", *NAMES)
    schema = Sheet.model_json_schema()["properties"]["weights"]
    assert schema["enum"] == ["auto", *NAMES]


def test_registry_order_is_the_sheet_order_of_the_contract():
    # CONTRACT.md "The workload sheet": auto | fp32 | fp16 | bf16 | fp8 | int8 | nf4 | fp4 | int4 |
    # gptq-int4 | awq-int4 | mxfp4 (nvfp4 is an extension, appended)
    assert NAMES[:11] == ("fp32", "fp16", "bf16", "fp8", "int8", "nf4", "fp4", "int4",
                          "gptq-int4", "awq-int4", "mxfp4")


@pytest.mark.parametrize("name,bits,byte_width", [
    ("fp32", 32, 4), ("fp16", 16, 2), ("bf16", 16, 2), ("fp8", 8, 1), ("int8", 8, 1),
    ("nf4", 4, None), ("fp4", 4, None), ("int4", 4, None), ("gptq-int4", 4, None),
    ("awq-int4", 4, None), ("mxfp4", 4, None), ("nvfp4", 4, None)])
def test_bits_per_value(name, bits, byte_width):
    rec = FORMATS[name]
    assert (rec.bits, rec.byte_width) == (bits, byte_width)
    assert rec.packed_bytes(7_000_000_000) == 7_000_000_000 * bits // 8  # R7's rows


def test_flags_of_each_family():
    dense = {n for n, r in FORMATS.items() if r.dense}
    assert dense == {"fp32", "fp16", "bf16"}
    # GPTQ / AWQ need offline calibration, NVFP4 is read pre-quantized; transformers makes the
    # others at load
    assert {n for n, r in FORMATS.items() if not r.produced_at_load} == {"gptq-int4", "awq-int4",
                                                                        "nvfp4"}
    # FineGrainedFP8 / Mxfp4 quantizers dequantize (dequantize=True)
    assert {n for n, r in FORMATS.items() if r.dequantizable} == {"fp8", "mxfp4"}
    assert {n for n, r in FORMATS.items() if r.packed_at_rest} == {
        "fp8", "int8", "nf4", "fp4", "gptq-int4", "awq-int4", "mxfp4", "nvfp4"}
    assert {n for n, r in FORMATS.items() if r.qlora_base} == {"nf4", "fp4"}
    assert {n for n, r in FORMATS.items() if r.outputs_follow_input_dtype} == {"int8", "nf4",
                                                                              "fp4"}
    assert {n for n, r in FORMATS.items() if "group_size" in r.sheet_keys} == {"gptq-int4",
                                                                              "awq-int4"}
    assert {n for n, r in FORMATS.items() if "double_quant" in r.sheet_keys} == {"nf4", "fp4"}
    assert [n for n, r in FORMATS.items() if r.theoretical] == ["int4"]


def test_compute_capability_rules():
    # bf16 >= 8.0 (Ampere), fp8 >= 8.9 (Ada/Hopper), MXFP4 >= 7.5 (transformers mxfp4 docs)
    assert FORMATS["bf16"].min_compute_capability == (8, 0)
    assert FORMATS["fp8"].min_compute_capability == (8, 9)
    assert FORMATS["mxfp4"].min_compute_capability == (7, 5)
    assert FORMATS["fp8"].on_card("transformers", (8, 0)).runs == "bf16"
    assert FORMATS["fp8"].on_card("vllm", (8, 0)).runs == "fp8"  # Marlin weight-only FP8
    assert FORMATS["fp8"].on_card("transformers", (9, 0)).note == ""
    assert FORMATS["bf16"].on_card("vllm", (7, 5)).runs == "fp16"
    assert "7.5" in FORMATS["bf16"].on_card("transformers", (7, 5)).note


def test_engine_keys_of_the_records_are_engines():
    from gpusizer.formats import ALL_ENGINES
    from gpusizer.memory.engines import ENGINES
    for rec in FORMATS.values():
        assert set(rec.below_min) <= {*ENGINES, ALL_ENGINES}, rec.name
        assert set(rec.refused_by) <= set(ENGINES), rec.name
    from gpusizer.formats.bnb import _PACKS_BY_ENGINE
    assert set(_PACKS_BY_ENGINE) <= set(ENGINES)


def test_lower_precision_successors():
    from gpusizer.decision.alternatives import LOWER_FORMATS
    assert LOWER_FORMATS == {"fp32": ("bf16", "fp16", "int8", "nf4"), "fp16": ("int8", "nf4"),
                             "bf16": ("int8", "nf4"), "fp8": ("nf4",), "int8": ("nf4",)}
    assert all(s in FORMATS for r in FORMATS.values() for s in r.lower)


def test_lookups():
    assert dtype_format("bfloat16") == "bf16" and dtype_format("torch.float16") == "fp16"
    assert dtype_format("float8_e4m3fn") == "fp8" and dtype_format("int8") is None
    assert compute_dtype("fp16", "bf16") == "fp16" and compute_dtype("nf4", "bf16") == "bf16"
    with pytest.raises(SheetError, match="unknown weight format 'q3'"):
        weight_format("q3")


def test_consumers_derive_their_tables_from_the_registry():
    from gpusizer.memory.weights import DTYPE_BYTES
    assert DTYPE_BYTES == {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
    from gpusizer.simulate.engine import LAID_OUT, SUPPORTED_WEIGHTS
    assert set(SUPPORTED_WEIGHTS) == {n for n, r in FORMATS.items() if r.dense} | set(LAID_OUT)
    assert set(LAID_OUT) <= set(NAMES)


def test_simulate_layouts_agree_with_the_engine_list():
    pytest.importorskip("torch")
    from gpusizer.simulate.engine import LAID_OUT
    from gpusizer.simulate.quantized import FORMATS as BNB4
    from gpusizer.simulate.quantized_layouts import LAYOUT_FORMATS
    assert set(LAID_OUT) == set(BNB4) | set(LAYOUT_FORMATS)


def test_quality_and_measure_read_the_registry():
    pytest.importorskip("torch")
    from gpusizer.measure.model_loader import _DTYPES
    from gpusizer.quality.formats import FORMATS as CANDIDATES
    assert set(_DTYPES) == {n for n, r in FORMATS.items() if r.dense}
    produced = {n for n, r in FORMATS.items() if r.quality}
    assert produced == {"fp32", "fp16", "bf16", "int8", "nf4", "fp4"}
    assert produced <= set(CANDIDATES)


_HIGHER = ("sheet", "model", "memory", "catalog", "decision", "evidence", "report", "simulate",
           "measure", "quality", "pipeline", "fit", "cli")


@pytest.mark.parametrize("module", sorted(
    m.name for m in pkgutil.iter_modules([str(SRC)])))
def test_formats_imports_no_higher_stage(module):
    tree = ast.parse((SRC / f"{module}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level >= 2:
            top = (node.module or "").split(".")[0]
            assert top not in _HIGHER, f"formats/{module}.py imports ..{node.module}"
        if isinstance(node, ast.Import):
            assert not any(a.name.split(".")[0] in ("torch", "gpusizer") for a in node.names)


@pytest.mark.parametrize("name", ["gpusizer.formats", *sorted(
    f"gpusizer.formats.{m.name}" for m in pkgutil.iter_modules([str(SRC)]))])
def test_all_names_exist(name):
    module = importlib.import_module(name)
    assert module.__all__ and all(hasattr(module, n) for n in module.__all__)
