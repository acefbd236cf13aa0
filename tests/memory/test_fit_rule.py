"""The one fit rule (``memory.fit_rule.judge_fit``) on hand-made estimates, each branch with its
arithmetic, then through the CLI (CONTRACT.md ``estimated_fit`` / ``headroom_bytes``)."""

from __future__ import annotations

import pytest

import dataclasses

from gpusizer.memory.engines import PoolSplit
from gpusizer.memory.fit_rule import judge_fit
from gpusizer.memory.items import INFERENCE_PHASES, Item, MemoryEstimate

from ..conftest import cli_json


@pytest.fixture(autouse=True)
def _point_estimates_only(monkeypatch):
    """These tests pin the rule on point figures; its error intervals (``borderline``) are
    tested in tests/memory/test_intervals.py, apart from the shipped calibration."""
    from gpusizer.memory import intervals
    monkeypatch.setattr(intervals, "load_calibration", lambda: None)

DEVICE, MARGIN = 1000, 50
ALL = INFERENCE_PHASES


def _item(name: str, size: int | None, phases=ALL, non_torch: bool = False) -> Item:
    return Item(name, size, "estimated", phases, "hand-made", non_torch=non_torch,
                unknown_reason=None if size is not None else "hand-made unknown")


def _estimate(items: list[Item], *, lower: int, pool: PoolSplit | None = None,
              phases: tuple[str, ...] = ALL) -> MemoryEstimate:
    """An estimate made as estimate_memory makes one (``MemoryEstimate`` derives the phases and
    peaks); ``lower`` is the certain lower bound the test expects: weights + KV cache."""
    weights = sum(it.bytes or 0 for it in items if it.name == "weights")
    est = MemoryEstimate(weights_bytes=weights, reserve_bytes=0, items=tuple(items),
                         phase_names=phases,
                         lower_bound_items=tuple(it for it in items
                                                 if it.name in ("weights", "kv_cache")),
                         lower_bound_phase="decode" if phases else "load", pool=pool)
    assert est.lower_bound_bytes == lower
    return est


def _serving(kv: int, *, held: int, kv_cache_bytes: int = 300, weights: int = 500,
             budget: int = 900, starts: bool = True) -> tuple[list[Item], PoolSplit]:
    return [_item("weights", weights), _item("kv_cache", kv, ("prefill", "decode"))], \
        PoolSplit(engine="vllm", total_bytes=DEVICE, total_source="hand-made",
                  budget_bytes=budget, weights_bytes=weights, activation_bytes=50,
                  non_torch_bytes=50, kv_cache_bytes=kv_cache_bytes, block_bytes=10,
                  kv_blocks=kv_cache_bytes // 10, kv_tokens=kv_cache_bytes // 10 * 16,
                  max_concurrency=held + 0.5, starts=starts, sequences_held=held,
                  tokens_per_sequence=32, required_sequences=2, required_kv_bytes=200)


def judge(est: MemoryEstimate):
    return judge_fit(est, device_bytes=DEVICE, margin_bytes=MARGIN)


def test_fits_when_device_peak_plus_margin_is_within_the_device():
    # decode: weights 600 + KV 200 + CUDA context 100 = 900; 900 + 50 <= 1000
    est = _estimate([_item("weights", 600), _item("kv_cache", 200, ("decode",)),
                     _item("cuda_context", 100, non_torch=True)], lower=800)
    j = judge(est)
    assert (j.state, j.certain, j.headroom_bytes) == ("fits", False, 1000 - 50 - 900)
    assert (j.device_bytes, j.margin_bytes) == (1000, 50)


def test_an_estimated_overflow_is_not_certain():
    # 600 + 300 + 100 = 1000; 1000 + 50 > 1000, but weights + KV = 900 <= 1000
    est = _estimate([_item("weights", 600), _item("kv_cache", 300, ("decode",)),
                     _item("cuda_context", 100, non_torch=True)], lower=900)
    j = judge(est)
    assert (j.state, j.certain, j.headroom_bytes) == ("does_not_fit", False, -50)


def test_a_lower_bound_beyond_the_device_is_a_certain_overflow():
    # weights 700 + KV 400 = 1100 > 1000 (no margin needed); headroom 1000 − 50 − 1200 = −250
    est = _estimate([_item("weights", 700), _item("kv_cache", 400, ("decode",)),
                     _item("cuda_context", 100, non_torch=True)], lower=1100)
    j = judge(est)
    assert (j.state, j.certain, j.headroom_bytes) == ("does_not_fit", True, -250)
    assert "a certain lower bound" in j.reason


def test_an_unknown_item_makes_the_judgement_unknown():
    # known part 600 + 200 + 100 = 900; 900 + 50 <= 1000, NCCL unknown
    est = _estimate([_item("weights", 600), _item("kv_cache", 200, ("decode",)),
                     _item("cuda_context", 100, non_torch=True),
                     _item("nccl_buffers", None, non_torch=True)], lower=800)
    j = judge(est)
    assert (j.state, j.certain, j.headroom_bytes) == ("unknown", False, None)
    assert j.unknown_items == ("nccl_buffers",)


def test_unknown_but_the_known_part_alone_already_does_not_fit():
    # known part 600 + 280 + 100 = 980; 980 + 50 > 1000: does_not_fit whatever NCCL takes
    est = _estimate([_item("weights", 600), _item("kv_cache", 280, ("decode",)),
                     _item("cuda_context", 100, non_torch=True),
                     _item("nccl_buffers", None, non_torch=True)], lower=880)
    j = judge(est)
    assert (j.state, j.certain, j.headroom_bytes) == ("does_not_fit", False, 1000 - 50 - 980)


def test_weights_only_is_unknown_unless_the_weights_alone_do_not_fit():
    only = _estimate([_item("weights", 600, ("load",))], lower=600, phases=())
    assert judge(only).state == "unknown" and judge(only).headroom_bytes is None
    heavy = _estimate([_item("weights", 980, ("load",))], lower=980, phases=())
    assert (judge(heavy).state, judge(heavy).certain) == ("does_not_fit", False)  # 980 + 50
    over = _estimate([_item("weights", 1100, ("load",))], lower=1100, phases=())
    assert (judge(over).state, judge(over).certain) == ("does_not_fit", True)


def test_a_pool_that_holds_the_sequences_fits_with_its_kv_headroom():
    # 3 whole sequences held >= 2 required; headroom = pool KV 300 − needed 200 = 100
    items, pool = _serving(200, held=3)
    j = judge(_estimate(items, lower=700, pool=pool))
    assert (j.state, j.certain, j.headroom_bytes) == ("fits", False, 100)
    assert ">= 2 required" in j.reason


def test_a_pool_that_holds_fewer_sequences_does_not_fit_but_starts():
    # 1 whole sequence held < 2 required: the rest would queue (not certain: it starts)
    items, pool = _serving(200, held=1, kv_cache_bytes=150)
    j = judge(_estimate(items, lower=700, pool=pool))
    assert (j.state, j.certain, j.headroom_bytes) == ("does_not_fit", False, 150 - 200)
    assert "(the rest would queue)" in j.reason


def test_a_pool_that_refuses_to_start_is_a_certain_overflow():
    items, pool = _serving(200, held=0, kv_cache_bytes=5, starts=False)
    j = judge(_estimate(items, lower=700, pool=pool))
    assert (j.state, j.certain, j.headroom_bytes) == ("does_not_fit", True, 5 - 200)
    assert "refuses to start" in j.reason
    items, pool = _serving(200, held=0, kv_cache_bytes=-100, weights=950, starts=False)
    j = judge(_estimate(items, lower=1150, pool=pool))
    assert (j.state, j.certain) == ("does_not_fit", True) and "exceed its pool budget" in j.reason


def test_a_pool_with_an_unknown_item_is_unknown_or_does_not_fit():
    items, pool = _serving(200, held=3)
    items.append(_item("nccl_buffers", None, non_torch=True))
    j = judge(_estimate(items, lower=700, pool=pool))
    assert (j.state, j.headroom_bytes) == ("unknown", None) and "upper bound" in j.reason
    items, pool = _serving(200, held=1, kv_cache_bytes=150)
    items.append(_item("nccl_buffers", None, non_torch=True))
    assert judge(_estimate(items, lower=700, pool=pool)).state == "does_not_fit"


def test_estimate_card_json_gives_estimated_fit_and_headroom():
    doc = cli_json("estimate", "examples/llama-3.1-8b-serving.yaml", "--card", "H100 SXM")
    f, mem = doc["fit"], doc["memory"]
    device = f["device_bytes"]
    margin = -(-5 * device // 100)  # the sheet's default margin: 5 % rounded up to whole bytes
    assert f["estimated_fit"] == "fits"
    assert f["headroom_bytes"] == device - margin - mem["device_peak_bytes"]


def test_a_serving_engines_headroom_is_its_kv_pool_minus_the_required_kv():
    doc = cli_json("estimate", "examples/validation/vllm10517-llama31-8b-rtx3090.yaml",
                   "--card", "NVIDIA GeForce RTX 3090")
    pool = doc["memory"]["pool"]
    assert doc["fit"]["estimated_fit"] == "fits"  # 1 whole 20000-token sequence >= 1 required
    assert doc["fit"]["headroom_bytes"] == pool["kv_cache_bytes"] - 20000 * 131072


def test_offers_carry_the_judgement_and_rank_on_its_headroom():
    doc = cli_json("plan", "examples/llama-3.1-8b-serving.yaml")
    for o in doc["offers"]:
        assert o["estimated_fit"] in ("fits", "does_not_fit", "unknown")
        if o["device_bytes"] is None:
            assert (o["estimated_fit"], o["headroom_bytes"]) == ("unknown", None)
            continue
        margin = -(-5 * o["device_bytes"] // 100)
        peak = o["memory"]["device_peak_bytes"]
        assert o["headroom_bytes"] == o["device_bytes"] - margin - peak
        assert (o["estimated_fit"] == "fits") == (o["headroom_bytes"] >= 0)
    # provisional rank: only the conditional offers estimated to fit, by total cost (CONTRACT.md)
    ranked = [(o["id"], o["provisional_rank"]) for o in doc["offers"]]
    assert ranked == [("seed-rtx-6000-ada", 1), ("seed-rtx-4090", None)]


def test_judge_lot_makes_a_short_lot_unknown_and_keeps_a_full_one():
    from gpusizer.memory.fit_rule import FitJudgement, judge_lot
    j = FitJudgement("fits", False, 80 * 2**30, 4 * 2**30, 10 * 2**30, "fits")
    assert judge_lot(j, cards=8, gpus=8) is j
    short = judge_lot(j, cards=4, gpus=8)
    assert (short.state, short.headroom_bytes, short.device_bytes) == ("unknown", None, 80 * 2**30)
    assert short.reason.startswith("the lot has 4 cards; the placement needs 8")


def test_vllm_says_its_own_reason_for_not_starting():
    # 16 GiB total at utilization 0.9: budget 14.40 GiB; weights 12 + activation 1 + non-torch
    # 0.5 GiB leave 0.90 GiB = 100 blocks of 16 tokens = 1600 KV tokens < one sequence of 2048
    from gpusizer.memory.engines.vllm import VLLM
    gib = 2**30
    pool = PoolSplit(engine="vllm", total_bytes=16 * gib, total_source="hand-made",
                     budget_bytes=int(14.4 * gib), weights_bytes=12 * gib,
                     activation_bytes=gib, non_torch_bytes=gib // 2,
                     kv_cache_bytes=int(0.9 * gib), block_bytes=int(0.009 * gib), kv_blocks=100,
                     kv_tokens=1600, max_concurrency=0.78, starts=False, sequences_held=0,
                     tokens_per_sequence=2048)
    c = VLLM.pool_condition(pool)
    assert (c.starts, c.reason) == (False, (
        "vLLM: the pool budget 14.40 GiB (15 461 882 265 B) (0.90 × total 16.00 GiB) − "
        "weights 12.00 GiB − "
        "activation 1.00 GiB − non-torch 0.50 GiB leaves 1600 KV tokens < one sequence of 2048 "
        "tokens: vLLM refuses to start (\"To serve at least one request with the models's max "
        "seq len (2048), (1.15 GiB KV cache is needed, which is larger than the available KV "
        "cache memory (0.90 GiB). Based on the available memory, the estimated maximum model "
        "length is 1600. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
        "when initializing the engine.\")"))
    # vLLM V1's words (v1/core/kv_cache_utils.py): one sequence of 2048 tokens is 128 blocks of
    # int(0.009 × 2^30) B = 1.15 GiB
    heavy = dataclasses.replace(pool, weights_bytes=15 * gib)
    assert VLLM.pool_condition(heavy).reason == (
        "vLLM: weights 15.00 GiB (16 106 127 360 B) exceed its pool budget 14.40 GiB "
        "(15 461 882 265 B) (0.90 × total 16.00 GiB): vLLM refuses to start")


def test_fit_on_a_card_too_small_for_vllm_says_the_engines_reason():
    # Qwen2.5-7B-Instruct bf16 under vLLM on a T4: weights 15 239 621 632 B = 14.19 GiB exceed
    # 0.9 × the CUDA-visible 15 837 691 904 B = 14 253 922 713 B = 13.27 GiB
    from gpusizer.catalog.cards import resolve_card
    from gpusizer.pipeline.fitting import run_fit
    from gpusizer.sheet import parse_sheet
    sheet = parse_sheet({"model": {"id": "Qwen/Qwen2.5-7B-Instruct"}, "task": "inference",
                         "weights": "bf16", "inference": {"engine": "vllm", "prompt_tokens": 2048,
                                                          "new_tokens": 512, "concurrency": 1}})
    answer = run_fit(sheet, resolve_card("T4").card)
    note = answer.notes[-1]
    assert note == ("not even one sequence of the required length fits; at concurrency 1: vLLM: "
                    "weights 14.19 GiB (15 239 621 632 B) exceed its pool budget 13.27 GiB "
                    "(14 253 922 713 B) (0.90 × total 14.75 GiB): vLLM refuses to start")
    assert not any(n.startswith("null") for n in answer.notes)
