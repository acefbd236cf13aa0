"""The distribution criterion against memory.host_ram_bytes (issue 14, point 2), and a bare
parameter count for training through the whole plan (point 8)."""

from __future__ import annotations

import datetime as dt

import yaml

from gpusizer.pipeline import run_plan
from gpusizer.sheet import parse_sheet

TODAY = dt.date(2026, 11, 30)
OFFER = {"id": "eight", "provider": "acme", "card": "H100 SXM", "cards": 8, "days": 3,
         "total_usd": 900.0, "host_ram": "2 TB", "storage": "2 TB", "interconnect": "nvlink",
         "document": "acme quote 7", "version": "2026-11-29"}
# 7e9 parameters, zero3, optimizer+params offloaded, precision master, AdamW: each of the 8 GPUs
# keeps in host RAM 2 B (16-bit shard) + 4 B (master) + 4 B (fp32 gradients) + 8 B (states)
# per parameter ÷ 8, so the node holds 18 × 7e9 = 126 000 000 000 B
SHEET = {"model": {"parameters": 7_000_000_000}, "task": "full", "weights": "bf16",
         "training": {"sequence_length": 2048, "microbatch": 1, "precision": "master"},
         "placement": {"gpus": 8, "strategy": "zero3", "offload": "optimizer+params"}}


def _plan(tmp_path, offers, sheet=SHEET):
    cat = tmp_path / "offers.yaml"
    cat.write_text(yaml.safe_dump(offers))
    return run_plan(parse_sheet(sheet), catalogs=[cat], today=TODAY)


def _decision(result, offer_id):
    return next(d for d in result.decisions if d.offer.id == offer_id)


def test_offload_needs_the_host_ram_it_keeps(tmp_path):
    small = {**OFFER, "id": "small", "host_ram": "100 GB"}
    bare = {k: v for k, v in {**OFFER, "id": "bare"}.items() if k != "host_ram"}
    r = _plan(tmp_path, [OFFER, small, bare])
    assert r.estimate.host_ram_bytes == 18 * 7_000_000_000
    big, low, unknown = (_decision(r, i).criteria["distribution"]
                         for i in ("eight", "small", "bare"))
    assert low.state == "exclude" and "offloaded states" in low.reason
    assert unknown.state == "to_confirm" and "host RAM (undocumented)" in unknown.condition
    assert big.state != "exclude"


def test_bare_count_training_plan_keeps_memory_to_confirm_and_the_fit_unknown(tmp_path):
    sheet = {**SHEET, "task": "lora", "training": {"sequence_length": 2048, "microbatch": 1},
             "placement": {"gpus": 1}}
    r = _plan(tmp_path, [{**OFFER, "cards": 1}], sheet=sheet)
    d = _decision(r, "eight")
    assert d.criteria["memory"].state == "to_confirm"
    assert d.fit.state == "unknown" and r.estimate.peak_bytes is None
