"""Activation checkpointing plans (memory/training/checkpointing.py) and the backward sweep under
selective, every-k and offloaded checkpointing, against hand arithmetic."""

from __future__ import annotations

from gpusizer.memory.activations import LayerActivations
from gpusizer.memory.estimate import estimate_memory
from gpusizer.memory.training.checkpointing import OFFLOAD_STASH_TENSORS, layer_plan
from gpusizer.sheet import parse_sheet

from .conftest import facts_of, sheet

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
# one layer: 100 B saved, of which attention 40 and MLP 60; its input 10 B
LAYER = LayerActivations(100, 0, 10, "", attention_block_bytes=40, mlp_block_bytes=60)


def _training(**tr):
    return parse_sheet({"model": {"id": "x"}, "task": "lora",
                        "training": {"sequence_length": 8, "microbatch": 1, **tr}}).training


def test_full_keeps_inputs_and_recomputes_everything():
    plan = layer_plan(_training(gradient_checkpointing=True), LAYER, [False] * 4)
    assert plan.kept_bytes == [10] * 4 and plan.recomputed_bytes == [100] * 4


def test_every_k_follows_transformers_or_torchtune():
    t = _training(gradient_checkpointing=True, checkpointing={"every": 2})
    # transformers: layer_index % 2 == 0 → layers 1 and 3 (of 4) checkpointed
    assert layer_plan(t, LAYER, [False] * 4).kept_bytes == [10, 100, 10, 100]
    # torchtune: _count % 2 == 0 with the count from 1 → layers 2 and 4
    assert layer_plan(t, LAYER, [False] * 4, "torchtune").kept_bytes == [100, 10, 100, 10]


def test_selective_keeps_the_unwrapped_block_and_the_wrapped_inputs():
    t = _training(checkpointing={"mode": "selective", "modules": ["mlp"]})
    plan = layer_plan(t, LAYER, [False] * 2)
    assert plan.kept_bytes == [100 - 60 + 10] * 2 and plan.recomputed_bytes == [60] * 2
    both = layer_plan(_training(checkpointing={"mode": "selective",
                                               "modules": ["attention", "mlp"]}), LAYER, [False])
    assert both.kept_bytes == [100 - 100 + 2 * 10]


def test_offload_moves_the_kept_bytes_to_the_host():
    t = _training(gradient_checkpointing=True, checkpointing={"offload": True})
    plan = layer_plan(t, LAYER, [False] * 8)
    assert plan.offloaded_bytes == 80 and plan.forward_gpu_bytes == 0 and not plan.prefetch
    tune = layer_plan(t, LAYER, [False] * 8, "torchtune")
    assert tune.forward_gpu_bytes == OFFLOAD_STASH_TENSORS * 10 and tune.prefetch
    # without checkpointing (torchtune / TRL OffloadActivations): two layers' saved tensors
    plain = layer_plan(_training(checkpointing={"offload": True}), LAYER, [False] * 8)
    assert plain.offloaded_bytes == 800 and plain.forward_gpu_bytes == 200


def test_estimate_with_offload_reports_the_host_bytes():
    def est(**tr):
        s = sheet(task="lora", training={"sequence_length": 4096, "microbatch": 2,
                                         "gradient_checkpointing": True, **tr})
        return estimate_memory(s, facts_of(LLAMA))
    plain, off = est(), est(checkpointing={"offload": True})
    # 32 layer inputs of c·T·h = 2·8192·4096 B each go to the host
    assert off.training.activation_offload_bytes == 32 * 2 * 8192 * 4096
    assert plain.training.activation_offload_bytes == 0
    act = {e: next(i for i in e.items if i.name == "activations") for e in (plain, off)}
    assert act[plain].bytes - act[off].bytes == 32 * 2 * 8192 * 4096
    assert any("activation offload" in n for n in off.note_texts)


def test_packing_under_sdpa_adds_the_mask_and_expanded_kv():
    def est(**tr):
        s = sheet(task="lora", training={"sequence_length": 1024, "microbatch": 2, **tr})
        return estimate_memory(s, facts_of(LLAMA))
    plain, packed = est(), est(packing=True)
    act = {e: next(i for i in e.items if i.name == "activations").bytes for e in (plain, packed)}
    # repeat_kv: k and v at q's width (4096 instead of 1024) in each of 32 layers, 2 B each, and
    # one B × s × s bool mask
    t = 2 * 1024
    assert act[packed] - act[plain] == 32 * 2 * t * 2 * (4096 - 1024) + 2 * 1024 * 1024
    flash = estimate_memory(sheet(task="lora", attention="flash", training={
        "sequence_length": 1024, "microbatch": 2, "packing": True}), facts_of(LLAMA))
    flash_plain = estimate_memory(sheet(task="lora", attention="flash", training={
        "sequence_length": 1024, "microbatch": 2}), facts_of(LLAMA))
    assert flash.peak_bytes == flash_plain.peak_bytes
