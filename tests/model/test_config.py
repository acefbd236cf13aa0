"""config.json → ModelFacts: errors name the key and the file, unused keys are recorded, the
stored format follows quantization_config then torch_dtype."""

from __future__ import annotations

import pytest

from gpusizer.errors import ModelError, UnknownArchitectureError
from gpusizer.model.config import KEYS_WITHOUT_MEMORY_EFFECT, facts_from_config
from gpusizer.model.families import FAMILIES
from gpusizer.model.stored_format import stored_format

from .conftest import config_of, facts_of

LLAMA = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
         "vocab_size": 100, "max_position_embeddings": 512, "torch_dtype": "bfloat16"}
"""A tiny Llama config written for these tests."""


def facts(config: dict, file: str = "tiny/config.json"):
    return facts_from_config(config, model_id="tiny", revision="main", source="path",
                             source_detail=file, file=file)


def test_tiny_llama_hand_count() -> None:
    # embed 100·64 + 2 · (q 64·64 + k, v 2·32·64 + o 64·64 + MLP 3·64·128 + 2 norms 2·64)
    # + final norm 64 + lm_head 100·64 = 6,400 + 2 · 36,992 + 64 + 6,400
    assert facts(LLAMA).architecture.total_parameters == 6_400 + 2 * 36_992 + 64 + 6_400


def test_unknown_model_type_names_type_and_file() -> None:
    with pytest.raises(UnknownArchitectureError) as err:
        facts({**LLAMA, "model_type": "mamba"})
    message = str(err.value)
    assert "tiny/config.json" in message and "'mamba'" in message and "llama" in message
    assert err.value.field == "model_type"


def test_unknown_model_type_with_auto_map_is_still_an_error() -> None:
    config = {**LLAMA, "model_type": "my_remote_arch", "auto_map": {"AutoConfig": "x.Config"}}
    with pytest.raises(UnknownArchitectureError, match="never runs remote code"):
        facts(config)


def test_missing_model_type() -> None:
    config = {k: v for k, v in LLAMA.items() if k != "model_type"}
    with pytest.raises(ModelError, match="tiny/config.json: model_type: missing"):
        facts(config)


@pytest.mark.parametrize("key", ["hidden_size", "num_hidden_layers", "num_attention_heads",
                                 "vocab_size", "intermediate_size"])
def test_missing_required_field_names_field_and_file(key: str) -> None:
    config = {k: v for k, v in LLAMA.items() if k != key}
    with pytest.raises(ModelError) as err:
        facts(config)
    assert str(err.value).startswith(f"tiny/config.json: {key}: missing required key")
    assert err.value.field == key and err.value.file == "tiny/config.json"


def test_wrong_type_names_the_value() -> None:
    with pytest.raises(ModelError, match="hidden_size: expected an integer >= 1, got '64'"):
        facts({**LLAMA, "hidden_size": "64"})
    with pytest.raises(ModelError, match="tie_word_embeddings: expected true or false"):
        facts({**LLAMA, "tie_word_embeddings": "yes"})


def test_unrecognised_keys_are_recorded_and_boilerplate_is_not() -> None:
    result = facts({**LLAMA, "my_new_knob": 3, "rope_theta": 1e4, "bos_token_id": 1})
    assert result.unrecognised_keys == ("my_new_knob",)


def test_unrecognised_keys_of_real_configs() -> None:
    # Early Gemma-2 configs carry sliding_window_size (ignored by Gemma2Config) and a generation
    # cache_implementation (a cache policy: the memory stage must see it).
    assert facts_of("google/gemma-2-9b").unrecognised_keys == ("cache_implementation",
                                                               "sliding_window_size")
    # Phi3Attention has no bias whatever attention_bias says: recorded, not used.
    assert facts_of("microsoft/phi-4").unrecognised_keys == ("attention_bias",)
    assert facts_of("meta-llama/Meta-Llama-3.1-8B").unrecognised_keys == ()


def test_every_family_has_documented_ignored_keys() -> None:
    for name, module in FAMILIES.items():
        assert isinstance(module.IGNORED_KEYS, frozenset), name
        assert callable(module.describe), name
        assert not module.IGNORED_KEYS & {"hidden_size", "vocab_size"}, name
    assert "architectures" in KEYS_WITHOUT_MEMORY_EFFECT


def test_known_model_type_with_auto_map_is_read_and_noted() -> None:
    result = facts_of("tiiuae/falcon-7b-instruct")  # its config still has auto_map
    assert "auto_map" in result.source_detail and "remote code not executed" in result.source_detail
    assert "auto_map" not in result.unrecognised_keys


def test_context_window_as_config_states_it() -> None:
    assert facts_of("meta-llama/Meta-Llama-3.1-8B").architecture.context_window_tokens == 131072
    # gpt2: n_positions; falcon: not stated
    assert facts_of("openai-community/gpt2").architecture.context_window_tokens == 1024
    assert facts_of("tiiuae/falcon-7b-instruct").architecture.context_window_tokens is None


def test_explicit_head_dim_is_used() -> None:
    result = facts_of("meta-llama/Llama-3.2-3B-Instruct")  # 3072 / 24 = 128, given explicitly
    assert (result.architecture.head_dim, result.architecture.num_key_value_heads) == (128, 8)
    gemma = facts_of("google/gemma-2b-it")  # MQA, head_dim 256 ≠ 2048 / 8
    assert (gemma.architecture.head_dim, gemma.architecture.num_key_value_heads) == (256, 1)
    moe = facts_of("Qwen/Qwen3-30B-A3B")  # 128 ≠ 2048 / 32
    assert moe.architecture.head_dim == 128


def test_absent_head_dim_takes_the_config_class_default() -> None:
    qwen3 = {k: v for k, v in config_of("Qwen/Qwen3-8B").items() if k != "head_dim"}
    assert facts(qwen3).architecture.head_dim == 128  # Qwen3Config.head_dim = 128
    # LlamaConfig: hidden_size // num_attention_heads
    assert facts(LLAMA).architecture.head_dim == 64 // 4


@pytest.mark.parametrize(("quantization_config", "expected"), [
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "int8"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, "nf4"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "fp4"}, "fp4"),
    ({"load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, "nf4"),  # before quant_method existed
    ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "gptq-int4"),
    ({"quant_method": "gptq", "bits": 8}, None),
    ({"quant_method": "awq", "bits": 4, "version": "gemm"}, "awq-int4"),
    ({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}, "fp8"),
    ({"quant_method": "mxfp4"}, "mxfp4"),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 8, "type": "float"}}}}, "fp8"),
    ({"quant_method": "compressed-tensors", "config_groups": {"a": {}, "b": {}}}, None),
    ({"quant_method": "hqq"}, None),
])
def test_stored_format_from_quantization_config(quantization_config: dict,
                                                expected: str | None) -> None:
    dtype, fmt, note = stored_format({"torch_dtype": "float16",
                                      "quantization_config": quantization_config}, file="c.json")
    assert (dtype, fmt) == ("float16", expected)
    assert (note is None) == (expected is not None)


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("torch_dtype", "bfloat16", "bf16"), ("torch_dtype", "float16", "fp16"),
    ("torch_dtype", "float32", "fp32"), ("dtype", "bfloat16", "bf16")])
def test_stored_format_from_dtype(key: str, value: str, expected: str) -> None:
    assert stored_format({key: value}, file="c.json")[:2] == (value, expected)


def test_stored_format_of_real_configs() -> None:
    assert facts_of("deepseek-ai/DeepSeek-V3").stored_format == "fp8"
    assert facts_of("openai/gpt-oss-120b").stored_format == "mxfp4"
    int8 = facts_of("jeevanchaps/Meta-Llama3.1-8B-Instruct-assessment")
    assert (int8.stored_format, int8.stored_dtype) == ("int8", "float16")
    assert int8.quantization_config["load_in_8bit"] is True
    gpt2 = facts_of("openai-community/gpt2")  # the original config has no torch_dtype
    assert gpt2.stored_format is None and "no torch_dtype" in gpt2.source_detail


def test_quantization_config_must_be_an_object() -> None:
    with pytest.raises(ModelError, match="quantization_config"):
        facts({**LLAMA, "quantization_config": "fp8"})
