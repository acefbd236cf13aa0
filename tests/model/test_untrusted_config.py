"""Issue 11 (reliability findings F9, F14, F25): config.json numbers pass ``gpusizer.bounds`` and
configs transformers could not build are refused naming the key (exit 2), before any sizing."""

from __future__ import annotations

import json

import pytest

from gpusizer.errors import ModelError
from gpusizer.model.config import facts_from_config

from ..conftest import run_cli


def _config(shared_dir, name: str) -> dict:
    return json.loads((shared_dir / "data" / "models" / name / "config.json").read_text())


def _facts(config: dict):
    return facts_from_config(config, model_id="m", revision=None, source="path",
                             source_detail="model/config.json")


def _estimate(tmp_path, config: dict) -> str:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text(json.dumps(config))
    sheet = tmp_path / "s.yaml"
    sheet.write_text(f"model: {{path: {model}}}\ntask: inference\n"
                     "inference: {prompt_tokens: 16, new_tokens: 16}\n")
    p = run_cli("estimate", str(sheet), check=2)
    assert "Traceback" not in p.stderr
    return p.stderr


# --- F9: layer counts ----------------------------------------------------------------------------

@pytest.mark.parametrize("layers, expected", [
    (1_000_000_000, "num_hidden_layers: expected an integer <= 4096, got 1000000000"),
    (9223372036854775808, "num_hidden_layers: expected an integer <= 4096, got "
                          "9223372036854775808"),
])
def test_f9_an_absurd_layer_count_is_refused_before_any_tuple_is_built(shared_dir, layers,
                                                                       expected):
    cfg = {**_config(shared_dir, "Qwen--Qwen3-0.6B"), "num_hidden_layers": layers}
    with pytest.raises(ModelError, match=expected):
        _facts(cfg)


def test_f9_cli_exits_2_naming_the_key(shared_dir, tmp_path):
    cfg = {**_config(shared_dir, "Qwen--Qwen3-0.6B"), "num_hidden_layers": 1_000_000_000}
    assert "num_hidden_layers: expected an integer <= 4096" in _estimate(tmp_path, cfg)


def test_f9_every_config_integer_is_bounded(shared_dir):
    cfg = {**_config(shared_dir, "Qwen--Qwen3-0.6B"), "vocab_size": 2**31}
    with pytest.raises(ModelError, match="vocab_size: expected an integer <= 2147483647"):
        _facts(cfg)


def test_f9_real_layer_counts_still_read(shared_dir):
    assert _facts(_config(shared_dir, "Qwen--Qwen3-0.6B")).architecture.num_layers == 28


# --- F14: fp8 weight_block_size ------------------------------------------------------------------

@pytest.mark.parametrize("block", [[0, 0], [-1, 128], [128], [1.5, 128], [True, 128], "128x128"])
def test_f14_a_bad_weight_block_size_is_refused(shared_dir, tmp_path, block):
    cfg = {**_config(shared_dir, "Qwen--Qwen3-0.6B"),
           "quantization_config": {"quant_method": "fp8", "weight_block_size": block}}
    err = _estimate(tmp_path, cfg)
    assert "quantization_config.weight_block_size: expected [rows, cols], two integers >= 1" \
        in err, err


def test_f14_a_good_weight_block_size_still_sizes(shared_dir):
    cfg = {**_config(shared_dir, "Qwen--Qwen3-0.6B"),
           "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}
    assert _facts(cfg).quantization_config is not None


# --- F25: configs transformers could not build ---------------------------------------------------

def test_f25_kv_heads_that_do_not_divide_the_query_heads_are_refused(shared_dir):
    cfg = {**_config(shared_dir, "meta-llama--Meta-Llama-3.1-8B"), "num_key_value_heads": 7}
    with pytest.raises(ModelError, match="num_key_value_heads: 7 KV heads do not divide the 32 "
                                         "query heads"):
        _facts(cfg)
    cfg["num_key_value_heads"] = 64
    with pytest.raises(ModelError, match="num_key_value_heads: 64 KV heads do not divide"):
        _facts(cfg)


def test_f25_more_experts_per_token_than_experts_is_refused(shared_dir, tmp_path):
    cfg = {**_config(shared_dir, "mistralai--Mixtral-8x22B-v0.1"), "num_experts_per_tok": 10000}
    assert "num_experts_per_tok: 10000 experts per token out of 8 experts: expected at most 8" \
        in _estimate(tmp_path, cfg)


def test_f25_real_gqa_and_moe_configs_still_read(shared_dir):
    arch = _facts(_config(shared_dir, "meta-llama--Meta-Llama-3.1-8B")).architecture
    assert (arch.num_attention_heads, arch.num_key_value_heads) == (32, 8)
    moe = _facts(_config(shared_dir, "mistralai--Mixtral-8x22B-v0.1")).architecture.moe
    assert (moe.num_experts, moe.experts_per_token) == (8, 2)
