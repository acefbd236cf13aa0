"""The ladder's rungs (R9) and the executed-vs-planned check."""

from __future__ import annotations

import pytest

from gpusizer.measure.ladder import build_ladder, shortfall
from gpusizer.sheet import parse_sheet

MODEL = {"id": "test/model"}   # the ladder reads no model facts (training refuses a bare count)


def rungs(body):
    return [(r.name, r.dims) for r in build_ladder(parse_sheet({"model": MODEL, "weights": "bf16",
                                                                 **body}))]


def test_inference_short_typical_limit():
    got = rungs({"task": "inference",
                 "inference": {"prompt_tokens": 7168, "new_tokens": 1024, "concurrency": 8},
                 "measure": {"typical": {"prompt_tokens": 2048, "concurrency": 4}}})
    assert got == [
        ("short", {"prompt_tokens": 128, "new_tokens": 128, "concurrency": 1}),
        ("typical", {"prompt_tokens": 2048, "new_tokens": 1024, "concurrency": 4}),
        ("limit", {"prompt_tokens": 7168, "new_tokens": 1024, "concurrency": 8})]


def test_training_short_uses_microbatch_one_and_the_sheet_length_when_shorter():
    got = rungs({"task": "full", "training": {"sequence_length": 96, "microbatch": 4}})
    assert got == [("short", {"sequence_length": 96, "microbatch": 1}),
                   ("limit", {"sequence_length": 96, "microbatch": 4})]


def test_a_sheet_no_longer_than_the_short_rung_runs_the_limit_alone():
    got = rungs({"task": "inference", "inference": {"prompt_tokens": 64, "new_tokens": 8},
                 "measure": {"typical": {"prompt_tokens": 64}}})
    assert got == [("limit", {"prompt_tokens": 64, "new_tokens": 8, "concurrency": 1})]


def test_no_workload_block_is_refused():
    with pytest.raises(ValueError, match="no inference or training block"):
        build_ladder(parse_sheet({"model": MODEL, "weights": "bf16", "task": "inference"}))


def test_shortfall_names_every_dimension_not_executed_in_full():
    planned = {"prompt_tokens": 128, "new_tokens": 16, "concurrency": 2}
    assert shortfall({"prompt_tokens": 128, "new_tokens": 16, "concurrency": 2}, planned) == {}
    assert shortfall({"prompt_tokens": 127, "new_tokens": 16}, planned) == {
        "prompt_tokens": (127, 128), "concurrency": (None, 2)}
