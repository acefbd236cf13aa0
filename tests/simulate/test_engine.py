"""Simulated items and phases against arithmetic written here, one test per model-reader family,
and the refusals."""

from __future__ import annotations

import pytest

from gpusizer.cli import exit_code_for
from gpusizer.errors import GpusizerError
from gpusizer.model.config import facts_from_config
from gpusizer.model.families import FAMILIES
from gpusizer.pipeline import resolve_facts
from gpusizer.sheet import parse_sheet
from gpusizer.simulate.engine import simulate_memory

from .conftest import FAMILY_CONFIGS, FAMILY_OVERRIDES, real_config, tiny_config


def _simulate(folder, task, block, **top):
    sheet = parse_sheet({"model": {"path": str(folder)}, "task": task, "weights": "bf16",
                         **top, **block})
    return simulate_memory(sheet, resolve_facts(sheet))


def _item(result, name):
    return result.memory.item(name)


@pytest.fixture
def tiny_llama(shared_dir, write_model):
    """TinyLlama-1.1B's config with 2 layers, hidden 64, 4 heads, 2 KV heads of 16, MLP 128,
    vocab 256, untied lm_head."""
    return write_model(tiny_config(real_config(shared_dir, "TinyLlama--TinyLlama-1.1B-Chat-v1.0")))


# Parameter bytes (bf16), each tensor rounded up to 512 B as the CUDA allocator books it:
EMBED = 256 * 64 * 2                        # 32 768
LAYER = (64 * 64 * 2 + 64 * 32 * 2 * 2      # q, k, v: 8192 + 2 × 4096
         + 64 * 64 * 2                      # o: 8192
         + 3 * 64 * 128 * 2                 # gate, up, down: 3 × 16 384
         + 2 * 512)                         # two RMSNorm weights of 128 B → 512 B each
WEIGHTS = EMBED + 2 * LAYER + 512 + EMBED   # + final norm + lm_head = 215 552
TENSORS = 1 + 2 * 9 + 1 + 1                 # parameter tensors: 21


def test_inference_weights_and_kv_cache(tiny_llama):
    r = _simulate(tiny_llama, "inference",
                  {"inference": {"prompt_tokens": 48, "new_tokens": 16, "concurrency": 2}})
    assert WEIGHTS == 215_552
    assert _item(r, "weights").bytes == WEIGHTS
    assert r.memory.weights_bytes == WEIGHTS
    # rotary inv_freq and original_inv_freq: 8 fp32 values each, 512 B booked each
    assert _item(r, "buffers").bytes == 2 * 512
    kv = _item(r, "kv_cache")
    # prefill: 2 layers × (K, V) × [2 sequences × 2 KV heads × 48 tokens × 16 × 2 B = 6144 B]
    assert kv.phase_bytes["prefill"] == 2 * 2 * (2 * 2 * 48 * 16 * 2)
    # decode reaches 64 tokens: 2 × 2 × 8192 B, plus the layer being concatenated
    assert kv.phase_bytes["decode"] >= 2 * 2 * (2 * 2 * 64 * 16 * 2)
    load = next(p for p in r.memory.phases if p.name == "load")
    assert r.tracked_peak_bytes >= load.peak_bytes
    assert all(it.provenance == "simulated" for it in r.memory.items
               if it.name in ("weights", "buffers", "kv_cache"))
    assert r.comparison["phases"][0]["phase"] == "load"


def test_static_cache_is_whole_before_prefill(tiny_llama):
    r = _simulate(tiny_llama, "inference", {"inference": {
        "prompt_tokens": 48, "new_tokens": 16, "concurrency": 2, "cache": "static"}})
    kv = _item(r, "kv_cache")
    # StaticCache(max_cache_len = 48 + 16): 2 layers × (K, V) × 2 × 2 × 64 × 16 × 2 B
    assert kv.phase_bytes["prefill"] == kv.phase_bytes["decode"] == 2 * 2 * (2 * 2 * 64 * 16 * 2)


def test_logits_all_keeps_every_position(shared_dir, write_model):
    # TinyLlama's own vocabulary (32 000), so that the logits dominate the prefill peak
    folder = write_model(tiny_config(real_config(shared_dir, "TinyLlama--TinyLlama-1.1B-Chat-v1.0"),
                                     vocab=32000))
    block = {"prompt_tokens": 48, "new_tokens": 16, "concurrency": 2}
    last = _simulate(folder, "inference", {"inference": block})
    every = _simulate(folder, "inference", {"inference": {**block, "logits": "all"}})
    prefill = lambda r: sum(it.phase_bytes.get("prefill", 0) for it in r.memory.items  # noqa
                            if it.provenance == "simulated")
    # bf16 logits of 2 × 48 positions × 32 000 = 6 144 000 B instead of 2 × 1 × 32 000 × 2 B
    assert prefill(every) - prefill(last) >= 2 * 48 * 32000 * 2 - 2 * 32000 * 2


def test_full_training_states_and_gradients(tiny_llama):
    r = _simulate(tiny_llama, "full", {"training": {"sequence_length": 64, "microbatch": 2}})
    step = "optimizer_step"
    assert _item(r, "gradients").phase_bytes[step] == WEIGHTS
    # AdamW foreach: exp_avg and exp_avg_sq like each parameter, plus a 4-byte `step` per tensor
    assert _item(r, "optimizer_states").phase_bytes[step] == 2 * WEIGHTS + TENSORS * 512
    # the steady state: the second step's forward and backward hold the states
    assert _item(r, "optimizer_states").phase_bytes["forward"] == 2 * WEIGHTS + TENSORS * 512
    # every parameter: bytes without the norms' rounding (5 × 384 B), at 2 B each
    assert r.trainable_parameters == (WEIGHTS - 5 * (512 - 128)) // 2 == 106_816
    assert [p.name for p in r.memory.phases] == ["load", "forward", "backward", "optimizer_step",
                                                 "validation"]


def test_lora_adapters_through_peft(tiny_llama):
    r = _simulate(tiny_llama, "lora", {"training": {"sequence_length": 64, "microbatch": 2,
                                                    "lora": {"rank": 16}}})
    # PEFT's llama default targets q_proj, v_proj: per layer q A 16×64 + B 64×16 = 2048,
    # v A 16×64 + B 32×16 = 1536 → 2 layers × 3584
    assert r.trainable_parameters == 2 * (16 * 64 + 64 * 16 + 16 * 64 + 32 * 16) == 7168
    assert _item(r, "weights").bytes == WEIGHTS
    # 8 adapter matrices, each under 4096 B → 4 × 2048 B + 4 × 1024 B (q: 2 × 2048; v: 2048 + 1024)
    assert _item(r, "lora_adapters").bytes == 2 * (2048 + 2048 + 2048 + 1024)
    assert "optimizer_states" in [it.name for it in r.memory.items]


def test_gradient_checkpointing_lowers_backward_activations(tiny_llama):
    block = {"sequence_length": 64, "microbatch": 2}
    plain = _simulate(tiny_llama, "full", {"training": block})
    ckpt = _simulate(tiny_llama, "full", {"training": {**block, "gradient_checkpointing": True}})
    assert _item(ckpt, "activations").phase_bytes["forward"] < \
        _item(plain, "activations").phase_bytes["forward"]


def test_amp_full_keeps_fp32_master_weights_and_states(tiny_llama):
    r = _simulate(tiny_llama, "full", {"training": {"sequence_length": 64, "microbatch": 2,
                                                    "precision": "amp"}})
    # fp32: every linear/embedding tensor twice its bf16 bytes; the 64-value norms are 256 B,
    # still booked as 512 B
    fp32 = 2 * (WEIGHTS - 5 * 512) + 5 * 512
    assert _item(r, "weights").bytes == fp32
    assert _item(r, "gradients").phase_bytes["optimizer_step"] == fp32
    assert _item(r, "optimizer_states").phase_bytes["optimizer_step"] == 2 * fp32 + TENSORS * 512


def test_amp_lora_adapters_in_fp32(tiny_llama):
    r = _simulate(tiny_llama, "lora", {"training": {"sequence_length": 64, "microbatch": 2,
                                                    "precision": "amp"}})
    assert _item(r, "weights").bytes == WEIGHTS                  # the base stays bf16
    # q: A 16×64, B 64×16 (4096 B each in fp32); v: A 16×64 (4096 B), B 32×16 (2048 B)
    assert _item(r, "lora_adapters").bytes == 2 * (4096 + 4096 + 4096 + 2048)


def test_eight_bit_states_by_byte_size(tiny_llama):
    r = _simulate(tiny_llama, "full", {"training": {"sequence_length": 64, "microbatch": 2,
                                                    "optimizer": "adamw-8bit"}})
    # tensors ≥ 4096 values: 2 uint8 states + 2 fp32 absmax of ⌈n/256⌉; smaller: 2 fp32 states;
    # plus the two 256-value fp32 quantile maps (1024 B each)
    sizes = ([256 * 64] * 2 + [64]
             + [64 * 64, 64 * 32, 64 * 32, 64 * 64, 64 * 128, 64 * 128, 64 * 128, 64, 64] * 2)
    booked = lambda n: max(512, -(-n // 512) * 512)  # noqa: E731
    expected = sum(2 * booked(n) + 2 * booked(4 * -(-n // 256)) if n >= 4096
                   else 2 * booked(4 * n) for n in sizes) + 2 * 1024
    assert expected == 281_600
    assert _item(r, "optimizer_states").bytes == expected


# families without a real config in ../shared run in tests/model/test_families_vs_simulate.py
@pytest.mark.parametrize("family", sorted(set(FAMILIES) & set(FAMILY_CONFIGS)))
def test_family(family, shared_dir, write_model):
    """Every family of the model reader runs through transformers on fake tensors; the simulated
    weights are the reader's parameter count × 2 B (bf16), plus at most 511 B of allocator
    rounding per tensor (fewer than 64 tensors in these 2-layer models)."""
    cfg = tiny_config(real_config(shared_dir, FAMILY_CONFIGS[family]))
    cfg.update(FAMILY_OVERRIDES.get(family, {}))
    facts = facts_from_config(cfg, model_id="tiny", revision="main", source="path",
                              source_detail="tiny", file="config.json")
    folder = write_model(cfg)
    r = _simulate(folder, "inference",
                  {"inference": {"prompt_tokens": 48, "new_tokens": 16, "concurrency": 2}})
    extra = _item(r, "weights").bytes - 2 * facts.architecture.total_parameters
    assert 0 <= extra < 64 * 512
    assert _item(r, "kv_cache").phase_bytes["prefill"] > 0
    assert r.attention and r.attention[0]["kernel"] in ("flash", "efficient", "math", "eager")
    t = _simulate(folder, "full", {"training": {"sequence_length": 32, "microbatch": 1}})
    assert _item(t, "gradients").phase_bytes["optimizer_step"] == _item(t, "weights").bytes


@pytest.mark.parametrize("top, field", [
    ({"model": {"parameters": 7_000_000_000}, "weights": "bf16"}, "model.parameters"),
    ({"weights": "mxfp4"}, "weights"),
    ({"inference": {"prompt_tokens": 8, "new_tokens": 8, "kv_cache_dtype": "fp8"},
      "task": "inference", "training": None}, "inference.kv_cache_dtype"),
])
def test_refusals_name_the_field(tiny_llama, top, field):
    base = {"model": {"path": str(tiny_llama)}, "task": "full", "weights": "bf16",
            "training": {"sequence_length": 64, "microbatch": 1}}
    with pytest.raises(GpusizerError) as info:   # a training sheet on a bare count: the sheet
        sheet = parse_sheet({**base, **top})
        simulate_memory(sheet, resolve_facts(sheet))
    assert info.value.field == field
    assert exit_code_for(info.value) == 2
