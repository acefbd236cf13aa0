"""A fixed sample of ``benchmarks/simulate_any.py``: model types the pinned transformers ships
(most without a gpusizer family, three vision-language models), each on the benchmark's
scaled-down config from the library's defaults, through the CLI's entry (``run_simulate`` on a
sheet whose ``model.path`` holds the config.json)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import load_benchmark

CAUSAL = ["olmo2", "granite", "gpt_neox", "cohere", "bloom", "codegen", "gptj", "glm4",
          "starcoder2", "opt", "phi", "stablelm", "jamba", "ernie4_5_moe", "olmoe", "lfm2",
          "exaone4", "granitemoe", "gemma2", "deepseek_v2"]
"""Causal LMs: dense, MoE (ERNIE 4.5, OLMoE, Granite MoE), a Mamba/attention hybrid (Jamba), a
convolution hybrid (LFM2), and two with a family (their arithmetic is untouched; the run goes
through the family's facts)."""

VISION_LANGUAGE = ["llava", "idefics3", "paligemma", "mistral3"]

SHEET = {"task": "inference", "weights": "bf16",
         "inference": {"prompt_tokens": 16, "new_tokens": 4, "concurrency": 1}}


def _allocator_bytes(nbytes: int) -> int:
    """bytes the CUDA caching allocator books for one tensor: 512-byte blocks."""
    return -(-nbytes // 512) * 512


def _meta_weights(cfg: dict) -> tuple[int, int]:
    """(parameters, booked bf16 bytes) of the model transformers builds from ``cfg`` on the meta
    device: the test's own count, outside the simulator."""
    import torch
    from transformers import AutoConfig

    from gpusizer.simulate.build import model_class_for
    auto, _ = model_class_for(cfg["model_type"])
    with torch.device("meta"):
        model = auto.from_config(AutoConfig.for_model(**cfg), dtype=torch.bfloat16)
    params = list(model.parameters())  # a tied parameter once
    return (sum(p.numel() for p in params),
            sum(_allocator_bytes(p.numel() * p.element_size()) for p in params))


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("simulate_any")


@pytest.mark.parametrize("model_type", CAUSAL + VISION_LANGUAGE)
def test_simulates(model_type, bench, tmp_path):
    from gpusizer.pipeline import run_simulate
    from gpusizer.sheet import parse_sheet
    cfg = bench.tiny_config(model_type)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = run_simulate(parse_sheet({"model": {"path": str(tmp_path)}, **SHEET}))
    params, booked = _meta_weights(cfg)
    # every parameter is stored in bf16 (2 B) and booked in 512-byte blocks: the weights item
    # is their sum at load
    assert r.memory.item("weights").bytes == booked
    assert booked >= 2 * params
    if r.estimate is None:  # no family: the simulation counted the parameters
        assert r.parameters == params
        assert "no arithmetic for this architecture" in r.comparison["note"]
    assert r.memory.item("kv_cache") is not None or model_type == "jamba"
    assert [p.name for p in r.memory.phases] == ["load", "prefill", "decode"]
    assert any("text tokens only" in n for n in r.notes) == (model_type in VISION_LANGUAGE)


def test_lora_all_linear_step(bench, tmp_path):
    """OLMo 2 (no family), one LoRA step: PEFT's all-linear adapts q, k, v, o, gate, up, down
    in both layers (lm_head excluded); rank r adds r × (in + out) parameters per module."""
    from gpusizer.pipeline import run_simulate
    from gpusizer.sheet import parse_sheet
    cfg = bench.tiny_config("olmo2")
    h, inter, kv = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_key_value_heads"]
    kv_width = kv * h // cfg["num_attention_heads"]
    assert (h, inter, kv_width) == (64, 128, 64)  # OLMo 2's default: as many KV heads as heads
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = run_simulate(parse_sheet({"model": {"path": str(tmp_path)}, **bench.SHEETS["lora"]}))
    shapes = [(h, h), (h, kv_width), (h, kv_width), (h, h), (h, inter), (h, inter), (inter, h)]
    rank = bench.SHEETS["lora"]["training"]["lora"]["rank"]
    # 2 layers × 8 × (4 × (64 + 64) + 3 × (64 + 128)) = 2 × 8 × 1 088
    assert r.trainable_parameters == 2 * sum(rank * (i + o) for i, o in shapes) == 17_408
    assert r.memory.item("lora_adapters").provenance == "simulated"
    assert r.memory.item("gradients") is not None


def test_library_defaults_left_none_are_completed_as_checkpoints_state_them(bench):
    """head_dim = hidden ÷ heads, KV heads = heads, layer_types = full attention: what the
    models compute when a checkpoint leaves the key out (Hunyuan, Nemotron, LFM2-MoE)."""
    d = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": None,
         "head_dim": None, "num_hidden_layers": 2, "layer_types": None}
    bench._complete(d, "any")
    assert (d["head_dim"], d["num_key_value_heads"]) == (16, 4)
    assert d["layer_types"] == ["full_attention", "full_attention"]
    given = {"hidden_size": 64, "num_attention_heads": 4, "head_dim": 32}
    bench._complete(given, "any")
    assert given["head_dim"] == 32  # a stated value is never changed


def test_plain_linear_targets_leave_out_subclasses_and_refused_modules(bench):
    """Where PEFT refuses all-linear, the LoRA step adapts the plain nn.Linear layers: Llama 4's
    router (an nn.Linear subclass returning a tuple) is left out, and a module PEFT names as
    incompatible (Mamba's out_proj) too."""
    names = bench._plain_linear_names(bench.tiny_config("llama4_text"), RuntimeError("x"))
    assert "router" not in names and {"q_proj", "k_proj", "v_proj", "o_proj"} <= set(names)
    refusal = RuntimeError("Module 'out_proj' is incompatible with Mamba-based models")
    names = bench._plain_linear_names(bench.tiny_config("mamba"), refusal)
    assert "out_proj" not in names and "in_proj" in names
