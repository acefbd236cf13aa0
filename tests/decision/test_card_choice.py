"""Cards suggested without a catalog (decision.card_choice, ``gpusizer cards SHEET``): real
sheets, figures equal to ``gpusizer estimate --card`` on the same card and GPU count."""

from __future__ import annotations

import pytest

from gpusizer import api
from gpusizer.catalog.cards import all_cards
from gpusizer.decision import alternatives as alt_module
from gpusizer.decision.card_choice import GPU_COUNTS, multi_gpu_strategy
from gpusizer.errors import ArgumentError
from gpusizer.sheet import parse_sheet

from ..conftest import REPO_ROOT

SERVING = REPO_ROOT / "examples" / "llama-3.1-8b-serving.yaml"
DEEPSEEK = REPO_ROOT / "examples" / "deepseek-v3-8xh200-vllm.yaml"
QLORA = REPO_ROOT / "examples" / "llama-3.1-8b-qlora.yaml"
GiB = 2**30


def _by_name(result):
    return {c.card.name: c for c in result.cards}


def test_readme_example_fits_one_rtx_6000_ada_and_not_one_rtx_4090():
    r = api.cards(SERVING).result
    cards = _by_name(r)
    assert (r.strategy, r.strategy_is_default, r.gpu_counts) == ("tensor-parallel", True,
                                                                  GPU_COUNTS)
    ada, rtx = cards["RTX 6000 Ada"].at(1), cards["RTX 4090"].at(1)
    # the very figures `gpusizer estimate examples/llama-3.1-8b-serving.yaml --card X` prints
    for name, got in (("RTX 6000 Ada", ada), ("RTX 4090", rtx)):
        fit = api.estimate(SERVING, card=name).to_json()["fit"]
        assert (got.estimated_fit, got.headroom_bytes) == (fit["estimated_fit"],
                                                           fit["headroom_bytes"])
    assert ada.estimated_fit == "fits" and round(ada.headroom_bytes / GiB, 2) == 17.10
    assert rtx.estimated_fit == "does_not_fit" and round(rtx.headroom_bytes / GiB, 2) == -5.70
    assert cards["RTX 6000 Ada"].fewest_gpus == 1
    # two 4090s under tensor parallelism hold half the weights and KV heads each
    assert cards["RTX 4090"].fewest_gpus == 2 and cards["RTX 4090"].at(2).strategy == \
        "tensor-parallel"
    assert ada.sheet_count and not cards["RTX 6000 Ada"].at(2).sheet_count


def test_the_answer_is_the_fewest_gpus_then_the_smallest_card():
    r = api.cards(SERVING).result
    card, at = r.answer
    one_gpu = [c for c in r.cards if c.fewest_gpus == 1]
    assert at.gpus == 1 and card in one_gpu
    assert int(card.card.device_bytes.value) == min(int(c.card.device_bytes.value)
                                                    for c in one_gpu)


def test_deepseek_v3_needs_eight_of_the_largest_cards():
    """671 B parameters in fp8 (≈ 640 GiB of weights): only 8 × H200 or 8 × B200 hold them."""
    r = api.cards(DEEPSEEK).result
    assert (r.strategy, r.strategy_is_default, r.sheet_gpus) == ("tensor-parallel", False, 8)
    cards = _by_name(r)
    assert {n for n, c in cards.items() if c.fewest_gpus is not None} == {"H200", "B200"}
    assert cards["H200"].fewest_gpus == 8 and cards["H200"].at(8).sheet_count
    assert cards["H200"].at(4).estimated_fit == "does_not_fit"
    assert r.answer[0].card.name == "H200" and r.answer[1].gpus == 8
    one = cards["H100 SXM"].at(1)
    assert one.estimated_fit == "does_not_fit" and one.certain  # weights alone overflow


def test_a_70b_in_bf16_needs_several_h100s():
    sheet = {"model": {"id": "meta-llama/Meta-Llama-3.1-70B"}, "task": "inference",
             "weights": "bf16", "inference": {"prompt_tokens": 3072, "new_tokens": 1024,
                                              "concurrency": 4}}
    h100 = _by_name(api.cards(sheet).result)["H100 SXM"]
    # 70.55e9 parameters × 2 B = 131 GiB of weights > 79.65 GiB: certain at 1 GPU
    assert h100.at(1).estimated_fit == "does_not_fit" and h100.at(1).certain
    assert h100.fewest_gpus == 2 and h100.at(2).estimated_fit == "fits"


def test_training_defaults_to_fsdp_and_a_named_strategy_wins():
    r = api.cards(QLORA).result
    assert (r.strategy, r.strategy_is_default) == ("fsdp", True)
    assert {c.strategy for card in r.cards for c in card.counts if c.gpus > 1} == {"fsdp"}
    named = parse_sheet({"model": {"id": "meta-llama/Meta-Llama-3.1-8B"}, "task": "lora",
                         "weights": "bf16", "training": {"sequence_length": 2048,
                                                         "microbatch": 2},
                         "placement": {"gpus": 3, "strategy": "ddp"}})
    assert multi_gpu_strategy(named) == ("ddp", False)
    r = api.cards(named).result
    assert r.gpu_counts == (1, 2, 3, 4, 8) and r.sheet_gpus == 3
    assert _by_name(r)["H100 SXM"].at(3).sheet_count


def test_one_estimate_per_card_and_gpu_count(monkeypatch):
    calls = []
    real = alt_module.check_fit

    def counting(sheet, facts, card):
        calls.append((sheet.placement.gpus, card.name))
        return real(sheet, facts, card)

    monkeypatch.setattr(alt_module, "check_fit", counting)
    api.cards(SERVING)
    assert len(calls) == len(set(calls)) == len(all_cards()) * len(GPU_COUNTS)


def test_a_split_the_model_cannot_take_is_refused_not_judged():
    """Qwen2.5-7B has 28 attention heads: tensor parallelism over 8 GPUs cannot split them."""
    sheet = {"model": {"id": "Qwen/Qwen2.5-7B"}, "task": "inference", "weights": "bf16",
             "inference": {"prompt_tokens": 1024, "new_tokens": 256}}
    at8 = _by_name(api.cards(sheet).result)["H100 SXM"].at(8)
    assert at8.estimated_fit is None and at8.headroom_bytes is None
    assert "28 attention heads" in at8.refused


def test_wrong_kind_arguments():
    with pytest.raises(ArgumentError) as exc:
        api.cards(42)
    assert exc.value.field == "sheet"
    with pytest.raises(ArgumentError) as exc:
        api.cards(base_dir=3)
    assert exc.value.field == "base_dir"


def test_one_gpu_count_is_sized_unsharded_and_without_offload():
    """A zero3 + offload sheet: the 1-GPU column runs single, which offloads nothing (the sheet
    refuses offload under single), so it is the same figure as the unsharded sheet's."""
    from gpusizer.decision.card_choice import _count_sheet
    from gpusizer.sheet import parse_sheet
    body = {"model": {"parameters": 7_000_000_000}, "task": "full", "weights": "bf16",
            "training": {"sequence_length": 512, "microbatch": 1, "precision": "master"},
            "placement": {"gpus": 8, "strategy": "zero3", "offload": "optimizer+params"}}
    one = _count_sheet(parse_sheet(body), 1, "zero3").placement
    assert (one.gpus, one.strategy, one.offload) == (1, "single", "none")
    eight = _count_sheet(parse_sheet(body), 8, "zero3").placement
    assert (eight.strategy, eight.offload) == ("zero3", "optimizer+params")
