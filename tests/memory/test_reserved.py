"""Reserved memory in the estimate: the allocator's items (``memory.reserved``) and the three
figures, peak ≤ reserved ≤ device, never added together (CONTRACT.md)."""

from __future__ import annotations

from gpusizer.memory.allocator import cat_growth_reserved_bytes
from gpusizer.memory.estimate import estimate_memory
from gpusizer.units import MiB

from .conftest import facts_of, sheet

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
INF = {"prompt_tokens": 3072, "new_tokens": 1024, "concurrency": 2}


def test_weight_slack_of_llama_8b_by_hand():
    # Llama-3.1-8B bf16, per layer in load order: q 32 MiB and o 32 MiB, gate / up / down
    # 112 MiB (>= 10 MiB: own segments, already 2 MiB multiples, no slack); k and v 8 MiB
    # each (1-10 MiB): k opens a 20 MiB segment, v takes 8 of its 12 MiB rest, 4 MiB stay
    # free and the next layer's k does not fit there. Embedding and lm_head 128256 × 4096 ×
    # 2 B = 1002 MiB exactly. Slack: 32 layers × 4 MiB.
    est = estimate_memory(sheet(inference=INF), facts_of(LLAMA))
    slack = est.item("allocator_slack")
    assert slack.bytes == 32 * 4 * MiB
    assert slack.holder == "allocator" and not slack.non_torch


def test_reserved_sits_between_allocated_and_device():
    est = estimate_memory(sheet(inference=INF), facts_of(LLAMA))
    decode = {p.name: p for p in est.phases}["decode"]
    allocator = [est.item(n) for n in decode.items if est.item(n).holder == "allocator"]
    assert {i.name for i in allocator} == {"allocator_slack", "allocator_fragmentation"}
    assert decode.reserved_peak_bytes == decode.peak_bytes + sum(i.bytes for i in allocator)
    outside = sum(est.item(n).bytes_in("decode") for n in decode.items
                  if est.item(n).non_torch)
    assert decode.device_peak_bytes == decode.reserved_peak_bytes + outside
    assert est.peak_bytes <= est.reserved_peak_bytes <= est.device_peak_bytes


def test_decode_fragmentation_is_the_replay_of_the_cache_growth():
    # 32 layers × K and V, each 2 sequences × 8 KV heads × 128 × 2 B = 4 KiB per token,
    # growing from 3072 to 4096 tokens one token per step
    est = estimate_memory(sheet(inference=INF), facts_of(LLAMA))
    replay = cat_growth_reserved_bytes(tensors=64, bytes_per_token=4096, start_tokens=3072,
                                       steps=1024)
    frag = est.item("allocator_fragmentation")
    assert frag.bytes == replay.max_held_bytes - replay.max_requested_bytes
    assert frag.phases == ("decode",)
    # the replay's peak requested bytes are the items' own: the whole cache + one K of a layer,
    # less one token (the last torch.cat's old tensor holds 4095 tokens, 4 KiB each)
    kv = est.item("kv_cache").bytes
    transient = est.item("kv_cache_growth_transient").bytes
    assert replay.max_requested_bytes == kv + transient - 4096


def test_static_cache_does_not_fragment():
    est = estimate_memory(sheet(inference={**INF, "cache": "static"}), facts_of(LLAMA))
    assert "allocator_fragmentation" not in {i.name for i in est.items}


def test_training_slack_counts_gradients_and_states_after_load():
    tr = {"sequence_length": 512, "microbatch": 1}
    est = estimate_memory(sheet(task="full", training=tr), facts_of(LLAMA))
    slack = est.item("allocator_slack")
    assert "weight, gradient and optimizer-state tensors" in slack.formula
    # at load only the weights are resident: their slack is the 128 MiB of the inference case
    assert slack.bytes_in("load") == 32 * 4 * MiB
    # bf16 full fine-tuning: each k / v gradient and its two AdamW states are 8 MiB more
    # tensors of the same kind, so the slack changes after load
    assert slack.bytes_in("optimizer_step") != slack.bytes_in("load")
