"""A checkpoint's quantization config: parsed once by its family's detector, one set of
defaults, exclusions honoured module by module."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpusizer.errors import SheetError
from gpusizer.formats import (DEFAULT_GROUP_SIZE, QuantConfig, detect, module_excluded,
                              quant_params)
from gpusizer.memory.weights import weight_breakdown
from gpusizer.sheet import parse_sheet

from .conftest import facts_of

LLAMA = "meta-llama/Meta-Llama-3.1-8B"


def _quantization(**block):
    return parse_sheet({"model": {"id": "x/y"}, "task": "inference", "weights": "auto",
                        "quantization": block}).quantization


def test_detectors_read_each_family_once():
    gptq = detect({"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": False})
    assert (gptq.fmt, gptq.group_size) == ("gptq-int4", 32)
    bnb = detect({"load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                  "bnb_4bit_use_double_quant": True})
    assert (bnb.fmt, bnb.method, bnb.double_quant) == ("nf4", "bitsandbytes", True)
    ds = facts_of("deepseek-ai/DeepSeek-V3")  # config.json: weight_block_size [128, 128]
    assert (ds.quant.fmt, ds.quant.block) == ("fp8", (128, 128))
    assert detect({"quant_method": "hqq"}).note == "quant_method 'hqq' is not sized by gpusizer"


def test_facts_parse_their_quantization_config_once_and_again_after_replace():
    f = replace(facts_of(LLAMA), quantization_config={"load_in_8bit": True})
    assert f.quant.fmt == "int8"
    moved = replace(f, quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 64})
    assert moved.quant.group_size == 64 and f.quant.group_size is None
    assert facts_of(LLAMA).quant is None  # bf16, no quantization_config


def test_checkpoint_values_win_then_the_sheet_then_the_defaults():
    stored = QuantConfig("gptq-int4", "gptq", group_size=32)
    assert quant_params(None, None, "gptq-int4", stored_format=None).group_size == \
        DEFAULT_GROUP_SIZE == 128
    assert quant_params(_quantization(group_size=64), None, "gptq-int4",
                        stored_format=None).group_size == 64
    assert quant_params(_quantization(), stored, "gptq-int4",
                        stored_format="gptq-int4").group_size == 32
    # the checkpoint's value applies only when it stores the running format
    assert quant_params(_quantization(), stored, "awq-int4",
                        stored_format="gptq-int4").group_size == 128
    with pytest.raises(SheetError, match="group_size 32, the sheet says 64"):
        quant_params(_quantization(group_size=64), stored, "gptq-int4",
                     stored_format="gptq-int4")
    dq = QuantConfig("nf4", "bitsandbytes", double_quant=True)
    assert quant_params(_quantization(), dq, "nf4", stored_format="nf4").double_quant is True
    with pytest.raises(SheetError, match="double quantization True"):
        quant_params(_quantization(double_quant=False), dq, "nf4", stored_format="nf4")


@pytest.mark.parametrize("module,patterns,expected", [
    ("lm_head", ["lm_head"], True),
    ("model.layers.3.mlp.gate", ["mlp.gate"], True),
    ("model.layers.3.self_attn.q_proj", ["model.layers.*.self_attn*"], True),  # ModelOpt
    ("model.layers.3.mlp.down_proj", ["model.layers.*.self_attn*"], False),
    ("model.layers.3.mlp.gate", ["re:.*mlp.gate$"], True),  # compressed-tensors
    ("model.layers.3.mlp.gate_proj", ["re:.*mlp.gate$"], False),
])
def test_exclusion_patterns(module, patterns, expected):
    assert module_excluded(module, patterns) is expected


def test_an_exclusion_list_keeps_the_named_linears_in_16_bit():
    # an fp8 checkpoint keeping every attention projection in bf16 (modules_to_not_convert, as
    # FineGrainedFP8 honours it): only the MLP is packed.
    f = replace(facts_of(LLAMA), stored_format="fp8", quantization_config={
        "quant_method": "fp8", "weight_block_size": [128, 128],
        "modules_to_not_convert": ["lm_head", "model.layers.*.self_attn*"]})
    bd = weight_breakdown(f, "fp8", compute_dtype="bf16")
    mlp = 32 * 3 * 4096 * 14336
    assert bd.packed_bytes == mlp  # 1 byte per MLP value
    assert bd.kept_bytes == (f.architecture.total_parameters - mlp) * 2
    # one fp32 scale per 128×128 block of the MLP matrices alone
    assert bd.metadata_bytes == 32 * 3 * (4096 // 128) * (14336 // 128) * 4
    assert bd.notes == ()
    odd = replace(f, quantization_config={**f.quantization_config,
                                          "modules_to_not_convert": ["vision_tower*"]})
    assert "vision_tower*" in weight_breakdown(odd, "fp8", compute_dtype="bf16").notes[0]


@pytest.mark.parametrize("config,block", [
    # FineGrainedFP8Config: absent key → its (128, 128) default; explicit null → per tensor
    ({"quant_method": "fp8", "activation_scheme": "dynamic"}, None),
    ({"quant_method": "fp8", "weight_block_size": None}, (0, 0)),
    ({"quant_method": "fp8", "weight_block_size": [64, 128]}, (64, 128)),
    ({"quant_method": "fbgemm_fp8"}, (1, 0)),  # FbgemmFp8Linear weight_scale [out, 1]
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {
        "num_bits": 8, "type": "float", "strategy": "channel"}}}}, (1, 0)),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {
        "num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]}}}},
     (128, 128)),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {
        "num_bits": 8, "type": "float", "strategy": "tensor"}}}}, (0, 0)),
])
def test_fp8_scale_blocks(config, block):
    stored = detect(config)
    assert (stored.fmt, stored.block) == ("fp8", block)
    expected = block or (128, 128)
    assert quant_params(None, stored, "fp8", stored_format="fp8").block == expected


def test_fp8_without_a_block_is_transformers_default_128_blocks_in_estimate():
    # Llama-3.1-8B converted to fp8 at load: FineGrainedFP8Config() → 128×128 blocks per matrix
    f = facts_of(LLAMA)
    bd = weight_breakdown(f, "fp8", compute_dtype="bf16")
    per_layer = (4096 // 128) ** 2 * 2 + (1024 // 128) * (4096 // 128) * 2 \
        + 3 * (14336 // 128) * (4096 // 128)
    assert bd.metadata_bytes == 32 * per_layer * 4
    per_tensor = replace(f, stored_format="fp8",
                         quantization_config={"quant_method": "fp8", "weight_block_size": None})
    assert weight_breakdown(per_tensor, "fp8", compute_dtype="bf16").metadata_bytes == \
        32 * 7 * 4  # one fp32 scale per matrix
