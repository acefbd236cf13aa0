"""The workload sheet (R1, CONTRACT.md): defaults, unknown keys, invalid values, canonical hash."""

import json

import pytest

from gpusizer.errors import SheetError
from gpusizer.sheet import canonical_json, parse_sheet, sheet_sha256

BASE = {"model": {"id": "meta-llama/Meta-Llama-3.1-8B"}, "task": "inference", "weights": "bf16",
        "inference": {"prompt_tokens": 7168, "new_tokens": 1024, "concurrency": 8}}


def test_defaults_filled_as_contract_says():
    s = parse_sheet(BASE)
    assert s.model.revision == "main"
    assert s.attention == "sdpa" and s.reserve == 0 and str(s.margin) == "5%"
    i = s.inference
    assert (i.engine, i.kv_cache_dtype, i.cache, i.logits) == ("transformers", "auto", "dynamic", "last")
    assert i.gpu_memory_utilization == 0.9 and i.max_num_batched_tokens == 8192
    assert i.tokens_per_sequence == 8192
    assert s.placement.gpus == 1 and s.placement.strategy == "single"
    assert s.quantization.group_size == 128 and s.quantization.compute_dtype == "bf16"


def test_memory_strings_become_integer_bytes():
    s = parse_sheet({**BASE, "reserve": "6 GiB", "margin": "2 GB",
                     "requirements": {"host_ram": "64 GB", "storage": "1 TiB"}})
    assert s.reserve == 6 * 2**30
    assert s.margin.of(10**10) == 2 * 10**9
    assert s.requirements.host_ram == 64 * 10**9 and s.requirements.storage == 2**40
    assert parse_sheet(BASE).margin.of(25757220864) == 1287861044  # ceil(5 % of the 4090's bytes)


@pytest.mark.parametrize("patch,field,fragment", [
    ({"reserve": 6}, "reserve", "bare number"),
    ({"reserv": "6 GiB"}, "reserv", "unknown key"),
    ({"inference": {"prompt_tokens": 0, "new_tokens": 1}}, "inference.prompt_tokens", ">= 1"),
    ({"inference": {"prompt_tokens": 10, "new_tokens": -5}}, "inference.new_tokens", ">= 1"),
    ({"inference": {"prompt_tokens": 10, "new_tokens": 5, "concurency": 2}},
     "inference.concurency", "unknown key"),
    ({"weights": "int3"}, "weights", "int4"),
    ({"placement": {"gpus": 2}}, "placement.gpus", "single"),
    ({"margin": "150%"}, "margin", "[0, 100)"),
    ({"model": {"id": "x", "path": "y"}}, "model", "exactly one"),
    ({"task": "lora"}, "training", "required"),
])
def test_invalid_sheets_name_field_value_and_expectation(patch, field, fragment):
    with pytest.raises(SheetError) as e:
        parse_sheet({**BASE, **patch}, file="w.yaml")
    msg = str(e.value)
    assert msg.startswith("w.yaml: ") and f"{field}:" in msg and fragment in msg


def test_bare_count_needs_an_explicit_format():
    with pytest.raises(SheetError, match="weights: 'auto' needs a checkpoint"):
        parse_sheet({"model": {"parameters": 7_000_000_000}, "task": "inference"})


def test_canonical_json_is_sorted_compact_with_integer_bytes():
    s = parse_sheet({**BASE, "reserve": "1 KiB"})
    text = canonical_json(s)
    assert " " not in text.replace("meta-llama/Meta-Llama-3.1-8B", "")
    data = json.loads(text)
    assert data["reserve"] == 1024 and list(data) == sorted(data)
    assert sheet_sha256(s) == sheet_sha256(parse_sheet({**BASE, "reserve": "1024 B"}))
    assert sheet_sha256(s) != sheet_sha256(parse_sheet(BASE))
