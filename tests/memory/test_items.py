"""The memory stage's values: a MemoryEstimate derives its totals, item names and note codes come
from closed tables, and one phase cycle per task.

Hand-made item tables; the arithmetic is written out beside each assertion.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import get_args

import pytest

from gpusizer.catalog.cards import require_card
from gpusizer.catalog.types import Offer
from gpusizer.decision.criteria import OfferContext, compatibility
from gpusizer.evidence import EvidenceSet
from gpusizer.memory.engines import PoolSplit
from gpusizer.memory.estimate import estimate_memory
from gpusizer.memory.items import (ITEM_KINDS, NOTE_CODES, ONE_SHOT_PHASES, INFERENCE_PHASES,
                                   TRAINING_PHASES, Item, ItemName, MemoryEstimate, Note,
                                   NoteCode, required_phases)
from gpusizer.report.json_report import memory_dict
from gpusizer.simulate.compare import ITEM_MAPPING
from gpusizer.simulate.engine import CARRIED_ITEMS, CATEGORY_ITEMS

from .conftest import facts_of, sheet

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
INF = {"prompt_tokens": 1024, "new_tokens": 256}
GOLDEN = Path(__file__).parents[1] / "golden"


def _items():
    return (Item("weights", 1000, "estimated", INFERENCE_PHASES, "s"),
            Item("kv_cache", 300, "estimated", ("prefill", "decode"), "s",
                 phase_bytes={"prefill": 100}),
            Item("prefill_working", 50, "estimated", ("prefill",), "s"),
            Item("cuda_context", 500, "declared", INFERENCE_PHASES, "s", non_torch=True))


def _estimate(items, phase_names=INFERENCE_PHASES, **kw):
    lower = tuple(it for it in items if it.name in ("weights", "kv_cache"))
    return MemoryEstimate(weights_bytes=1000, reserve_bytes=7, items=tuple(items),
                          phase_names=phase_names, lower_bound_items=lower,
                          lower_bound_phase="decode", **kw)


def test_totals_are_derived_when_the_estimate_is_made():
    est = _estimate(_items())
    by_phase = {p.name: (p.peak_bytes, p.device_peak_bytes) for p in est.phases}
    # load: weights (+ context); prefill: 1000 + KV 100 + 50 (+ 500); decode: 1000 + 300 (+ 500)
    assert by_phase == {"load": (1000, 1500), "prefill": (1150, 1650), "decode": (1300, 1800)}
    assert (est.peak_bytes, est.device_peak_bytes) == (1300, 1800)
    assert est.conservative_envelope_bytes == 1000 + 300 + 50 + 500
    assert est.envelope_bytes == 1000 + 7
    assert est.lower_bound_bytes == 1000 + 300 and est.lower_bound_covers == "weights and KV cache"
    assert est.peak_phase.name == "decode"


def test_an_unknown_item_makes_the_totals_unknown_and_the_bound_its_known_part():
    items = list(_items())
    items[1] = Item("kv_cache", None, "estimated", ("prefill", "decode"), "s", unknown_reason="x")
    est = _estimate(items)
    assert est.peak_bytes is None and est.device_peak_bytes is None
    assert est.conservative_envelope_bytes is None
    assert est.lower_bound_bytes == 1000 and est.lower_bound_covers == "weights"


def test_weights_only_has_no_peak_and_no_envelope():
    est = _estimate(_items()[:1], phase_names=())
    assert est.phases == () and est.peak_bytes is None
    assert est.conservative_envelope_bytes is None and est.envelope_bytes == 1007


def test_a_preallocated_pool_makes_the_budget_the_peak():
    split = PoolSplit(engine="vllm", total_bytes=10_000, total_source="t", budget_bytes=9_000, weights_bytes=1000,
                      activation_bytes=50, non_torch_bytes=500, kv_cache_bytes=7450,
                      block_bytes=10, kv_blocks=745, kv_tokens=745 * 16, max_concurrency=1.0,
                      starts=True)
    est = _estimate(_items(), pool=split)
    assert est.peak_bytes == est.device_peak_bytes == 9_000
    assert est.phases[-1].peak_bytes == 1300   # the phase rows still show the allocated parts


def test_fields_are_keyword_only_frozen_and_derived_ones_are_not_arguments():
    with pytest.raises(TypeError):
        MemoryEstimate(1000, 0, (), (), (), "load")   # the old positional call
    with pytest.raises(TypeError):
        _estimate(_items(), peak_bytes=1)
    est = _estimate(_items())
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.peak_bytes = 0
    # replace() derives again from the new items
    assert dataclasses.replace(est, items=_items()[:1]).peak_bytes == 1000


def test_only_kinds_that_may_count_enter_the_lower_bound():
    items = _items()
    with pytest.raises(ValueError, match="prefill_working"):
        MemoryEstimate(weights_bytes=0, reserve_bytes=0, items=items, phase_names=(),
                       lower_bound_items=items[2:3], lower_bound_phase="prefill")


def test_item_names_come_from_the_table():
    assert set(get_args(ItemName)) == set(ITEM_KINDS)
    with pytest.raises(ValueError, match="weights_copy"):
        Item("weights_copy", 1, "estimated", ("load",), "s")
    with pytest.raises(ValueError, match="non_torch"):
        Item("cuda_context", 1, "declared", ("load",), "s")   # outside PyTorch's allocator
    assert {n for n, k in ITEM_KINDS.items() if k.holder == "non_torch"} == {
        "cuda_context", "nccl_buffers", "optimizer_states_paged"}
    # reserved by the caching allocator, held by no tensor: inside reserved, outside allocated
    assert {n for n, k in ITEM_KINDS.items() if k.holder == "allocator"} == {
        "allocator_slack", "allocator_fragmentation"}


def _golden_item_names() -> set[str]:
    names: set[str] = set()

    def walk(x):
        if isinstance(x, dict):
            for it in x.get("items", []) if isinstance(x.get("items"), list) else []:
                if isinstance(it, dict) and "name" in it:
                    names.add(it["name"])
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    for path in GOLDEN.glob("*.json"):
        walk(json.loads(path.read_text()))
    return names


def test_every_name_written_is_a_known_kind_and_every_kind_is_written():
    f = facts_of(LLAMA)
    train = {"sequence_length": 512, "microbatch": 1}
    produced = _golden_item_names()
    for kw in ({"task": "full", "training": {**train, "precision": "amp"}},
               {"task": "lora", "training": {**train, "export": "merged"}},
               {"task": "full", "training": train, "placement": {"gpus": 2, "strategy": "fsdp"}},
               {"task": "full", "training": train,
                "placement": {"gpus": 2, "strategy": "zero2"}},
               {"task": "full", "training": {**train, "precision": "master"},
                "placement": {"gpus": 2, "strategy": "zero3"}},
               # PEFT methods: VeRA's buffers and activations, a trained lm_head copy,
               # AdaLoRA's rank-allocator state
               {"task": "lora", "training": {**train, "peft": "vera",
                                             "modules_to_save": ["lm_head"]}},
               {"task": "lora", "training": {**train, "peft": "adalora"}}):
        produced |= {it.name for it in estimate_memory(sheet(**kw), f).items}
    # GPTQ on a T4 (compute capability 7.5): transformers' exllama v1 scratch, vLLM's GPTQ
    # exllama transient (formats/int4_kernels.py)
    for engine in ("transformers", "vllm"):
        produced |= {it.name for it in estimate_memory(
            sheet(weights="gptq-int4", quantization={"prequantized": True},
                  inference={**INF, "engine": engine}), f, card=require_card("T4")).items}
    mapped = set(ITEM_MAPPING) | {n for names in ITEM_MAPPING.values() for n in names}
    written = produced | set(CATEGORY_ITEMS.values()) | set(CARRIED_ITEMS) | mapped
    assert written <= set(ITEM_KINDS), written - set(ITEM_KINDS)
    assert set(ITEM_KINDS) <= produced | set(CATEGORY_ITEMS.values()), \
        set(ITEM_KINDS) - produced


def test_note_codes_come_from_the_table_and_the_json_keeps_strings():
    assert set(get_args(NoteCode)) == set(NOTE_CODES)
    with pytest.raises(ValueError, match="nccl"):
        Note("nccl", "text")
    est = estimate_memory(sheet(inference=INF, attention="flash"), facts_of(LLAMA),
                          card=require_card("T4"))
    notes = memory_dict(est)["notes"]
    assert notes == [n.text for n in est.notes] and all(isinstance(n, str) for n in notes)
    assert [n.code for n in est.notes if n.code == "card_rule"] == ["card_rule"] * 2  # bf16, flash


def test_compatibility_quotes_card_rules_by_code_not_by_text():
    s = sheet(inference=INF)
    card = require_card("T4")
    est = estimate_memory(s, facts_of(LLAMA), card=card)
    # a note that mentions NCCL holds "CC" in its text; only the card_rule code is quoted
    est = dataclasses.replace(est, notes=est.notes + (Note("training", "NCCL buffers"),))
    offer = Offer(id="o", provider="p", card=card.name, cards=1, days=None, total_usd=None)
    ctx = OfferContext(s, facts_of(LLAMA), offer, card, est, EvidenceSet((), ()), None, None,
                       None)
    reason = compatibility(ctx).reason
    assert "card rules: bf16 needs CC >= 8.0" in reason and "NCCL" not in reason


def test_invalidators_quote_the_bare_count_note_by_code():
    from gpusizer.decision.invalidators import invalidators as _invalidators
    from gpusizer.sheet import parse_sheet
    s = parse_sheet({"model": {"parameters": 7_000_000_000}, "task": "inference",
                     "weights": "fp16"})
    est = estimate_memory(s, None)
    bare = [n.text for n in est.notes if n.code == "bare_count"]
    assert len(bare) == 1 and bare[0] in _invalidators(s, None, est, [])


def test_required_phases_are_the_task_cycle():
    assert required_phases(sheet(inference=INF)) == ("load", "prefill", "decode")
    train = {"sequence_length": 512, "microbatch": 1}
    assert required_phases(sheet(task="lora", training=train)) == TRAINING_PHASES[:-1]
    assert required_phases(sheet(task="lora", training={**train, "export": "adapter"})) \
        == TRAINING_PHASES
    assert ONE_SHOT_PHASES == {"load", "prefill", "decode", "optimizer_step", "validation",
                               "export"}
