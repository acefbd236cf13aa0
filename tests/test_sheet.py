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


TRAIN = {"model": {"id": "meta-llama/Meta-Llama-3.1-8B"}, "task": "lora", "weights": "bf16",
         "training": {"sequence_length": 2048, "microbatch": 2}}


def _training(task="lora", **training):
    return {**TRAIN, "task": task, "training": {**TRAIN["training"], **training}}


@pytest.mark.parametrize("body,field,value,fragment", [
    ({**TRAIN, "placement": {"gpus": 2, "strategy": "tensor-parallel"}}, "placement.strategy",
     "tensor-parallel", "expected single, ddp, zero1, zero2, zero3 or fsdp"),
    ({**TRAIN, "placement": {"gpus": 1, "strategy": "device-map"}}, "placement.strategy",
     "device-map", "not sized for training"),
    ({**BASE, "placement": {"gpus": 2, "strategy": "fsdp"}}, "placement.strategy", "fsdp",
     "shards training state"),
    ({**BASE, "inference": {**BASE["inference"], "engine": "vllm"},
      "placement": {"gpus": 2, "strategy": "device-map"}}, "placement.strategy", "device-map",
     "vLLM splits a model with tensor-parallel"),
    (_training("full", lora={"rank": 8}), "training.lora",
     {"rank": 8, "alpha": 0, "targets": "default"}, "applies to task lora or qlora, not full"),
    (_training("full", export="adapter"), "training.export", "adapter", "needs LoRA adapters"),
    (_training("full", export="merged"), "training.export", "merged", "needs LoRA adapters"),
    (_training("lora", export="full"), "training.export", "full", "fully trained model"),
    (_training("qlora", export="full") | {"weights": "nf4"}, "training.export", "full",
     "fully trained model"),
    ({**TRAIN, "task": "qlora"}, "weights", "bf16", "expected nf4 or fp4"),
])
def test_rules_that_need_no_model_are_refused_by_the_sheet(body, field, value, fragment):
    """Every command refused these after reading the model; the sheet (and so `gpusizer
    schema`'s validator and load_sheet) refuses them, naming field, value and expectation."""
    with pytest.raises(SheetError) as e:
        parse_sheet(body, file="w.yaml")
    assert (e.value.field, e.value.value, e.value.file) == (field, value, "w.yaml")
    assert str(e.value).startswith(f"w.yaml: {field}: ") and fragment in str(e.value)
    assert f"(got {value!r})" in str(e.value)


@pytest.mark.parametrize("body", [
    {**BASE, "placement": {"gpus": 1, "strategy": "fsdp"}},   # one GPU: nothing is sharded
    {**BASE, "inference": {**BASE["inference"], "engine": "vllm"},
     "placement": {"gpus": 2, "strategy": "tensor-parallel"}},
    _training("full", export="full"), _training("lora", export="merged"),
    _training("qlora", export="adapter") | {"weights": "nf4"},
    _training("qlora") | {"weights": "auto"},   # the checkpoint's format is checked by memory
    {**TRAIN, "placement": {"gpus": 4, "strategy": "zero2"}},
    # the seed's calculator for training (issue 14 point 8): sized with unknown items, no refusal
    {**TRAIN, "model": {"parameters": 7_000_000_000}},
])
def test_what_the_sheet_still_accepts(body):
    parse_sheet(body)


def test_two_problems_are_listed_in_one_line_without_a_single_field():
    with pytest.raises(SheetError) as e:
        parse_sheet({**BASE, "reserve": 6, "attention": "fast"})
    assert e.value.field is None
    # the first problem in full; the others counted with their fields (the line stays short)
    assert str(e.value).startswith("attention: expected one of")
    assert str(e.value).endswith("; and 1 more (reserve)")


def test_every_schema_property_has_a_description():
    from gpusizer.sheet import Sheet
    schema = Sheet.model_json_schema()
    blocks = {"Sheet": schema, **schema["$defs"]}
    missing = [f"{name}.{key}" for name, block in blocks.items()
               for key, prop in block.get("properties", {}).items()
               if not prop.get("description", "").strip()]
    assert not missing
    # 20 fields in Training (loss, packing, checkpointing; dataset_tokens, epochs, mfu of issue
    # 17; peft, peft_options, modules_to_save) and 16 in Inference (+ SGLang's three keys,
    # images), all described (the docstring under each field)
    assert len(schema["$defs"]["Training"]["properties"]) == 20
    assert len(schema["$defs"]["Inference"]["properties"]) == 16
    assert "(tokens)" in schema["$defs"]["Training"]["properties"]["sequence_length"]["description"]


def test_field_docstrings_and_sheet_rules_leave_the_sheet_hash_alone():
    # printed by 37e78bd, before either was added (tests/golden pins every example's hash)
    assert sheet_sha256(parse_sheet(BASE)) == \
        "fdf61c3ce2f106ba4e5ee9faf132ca72db468d3f0b88c87233376c719c20dfa4"
    assert sheet_sha256(parse_sheet(TRAIN)) == \
        "937191cefc99e01d36941b5b3dfac3ea11c16911a9080f1e148a4136d7534b03"
