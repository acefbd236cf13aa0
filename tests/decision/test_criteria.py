"""The six criteria on real sheets, catalogs and evidence files (R2, R3, R4)."""

from __future__ import annotations

import datetime as dt
import json

import yaml

from gpusizer.pipeline import run_plan
from gpusizer.sheet import parse_sheet, quality_sha256, sheet_sha256

TODAY = dt.date(2026, 11, 30)
SHEET = {"model": {"id": "meta-llama/Meta-Llama-3.1-8B"}, "task": "inference", "weights": "bf16",
         "inference": {"prompt_tokens": 3072, "new_tokens": 1024, "concurrency": 2},
         "budget": {"max_usd": 100, "days": 3, "deadline": "2026-12-20"},
         "quality": {"corpus": "eval/frozen.jsonl"}}
FULL_OFFER = {"id": "full", "provider": "acme", "card": "NVIDIA RTX 6000 Ada Generation",
              "cards": 1, "days": 3, "total_usd": 55.71, "available_from": "2026-12-01",
              "available_until": "2026-12-10", "host_ram": "128 GB", "storage": "500 GB",
              "interconnect": "pcie", "environment": "acme/pytorch:2.5-cuda12.4",
              "document": "acme quote 42", "version": "2026-11-29"}


def plan(tmp_path, offers, sheet=SHEET, evidence=None):
    cat = tmp_path / "offers.yaml"
    cat.write_text(yaml.safe_dump(offers))
    ev_dir = None
    if evidence is not None:
        ev_dir = tmp_path / "evidence"
        ev_dir.mkdir(exist_ok=True)
        for i, doc in enumerate(evidence):
            (ev_dir / f"e{i}.json").write_text(json.dumps(doc))
    return run_plan(parse_sheet(sheet), catalogs=[cat], evidence_dir=ev_dir, today=TODAY)


def states(result, offer_id):
    d = next(d for d in result.decisions if d.offer.id == offer_id)
    return {k: c.state for k, c in d.criteria.items()}, d


def measurement(sheet, result="passed", executed=None, card="RTX 6000 Ada",
                device_bytes=51527024640, reserved=30 * 2**30):
    return {"kind": "measurement", "document": "runs/a.jsonl", "version": "gpusizer 0.1.0",
            "date": "2026-11-29",
            "scope": {"provider": "acme", "card": card, "device_bytes": device_bytes},
            "sheet_sha256": sheet_sha256(parse_sheet(sheet)),
            "rungs": [{"name": "limit", "result": result, "failed_phase": "prefill" if
                       result == "oom" else None,
                       "executed": executed or {"prompt_tokens": 3072, "new_tokens": 1024,
                                                "concurrency": 2},
                       "phases": [{"name": name, "max_memory_allocated_bytes": reserved - 2**30,
                                   "max_memory_reserved_bytes": reserved,
                                   "non_torch_bytes": 600 * 2**20}
                                  for name in ("load", "prefill", "decode")]}]}


def compat(result="passed", provider="acme", image="acme/pytorch:2.5-cuda12.4"):
    return {"kind": "compatibility", "document": "check.log", "version": "1", "result": result,
            "scope": {"provider": provider, "environment": {"image": image}},
            "sheet_sha256": sheet_sha256(parse_sheet(SHEET))}


def test_everything_documented_and_measured_is_selected(tmp_path):
    r = plan(tmp_path, [FULL_OFFER], evidence=[measurement(SHEET), compat()])
    st, d = states(r, "full")
    assert st == {k: "acceptable" for k in st}, {k: c.reason for k, c in d.criteria.items()}
    assert d.verdict == "selected" and d.rank == 1 and d.provisional_rank is None


def test_without_evidence_stays_conditional_with_exact_conditions(tmp_path):
    r = plan(tmp_path, [FULL_OFFER])
    st, d = states(r, "full")
    assert st["memory"] == "to_confirm" and st["workload"] == "to_confirm"
    assert st["compatibility"] == "to_confirm" and "preference" in d.criteria["compatibility"].reason
    assert "gpusizer measure" in d.criteria["memory"].condition
    assert "device peak" in d.criteria["memory"].reason
    assert d.verdict == "conditional" and d.provisional_rank == 1 and d.rank is None


def test_memory_exclude_on_certain_lower_bound(tmp_path):
    # 32 sequences × 8192 tokens × 131072 B = 32 GiB of KV cache + 14.96 GiB of weights > 24 GiB
    sheet = {**SHEET, "inference": {"prompt_tokens": 7168, "new_tokens": 1024, "concurrency": 32}}
    r = plan(tmp_path, [{**FULL_OFFER, "id": "small", "card": "RTX 4090"}], sheet=sheet)
    st, d = states(r, "small")
    assert st["memory"] == "exclude" and d.verdict == "excluded"
    assert "lower bound" in d.criteria["memory"].reason


def test_measured_oom_excludes_and_out_of_scope_evidence_does_not_count(tmp_path):
    r = plan(tmp_path, [FULL_OFFER, {**FULL_OFFER, "id": "h100", "card": "H100-SXM"}],
             evidence=[measurement(SHEET, result="oom")])
    assert states(r, "full")[0]["memory"] == "exclude"
    assert states(r, "h100")[0]["memory"] == "to_confirm"  # another card: out of scope


def test_evidence_for_another_sheet_is_ignored_with_reason(tmp_path):
    other = {**SHEET, "inference": {"prompt_tokens": 1024, "new_tokens": 1024, "concurrency": 2}}
    r = plan(tmp_path, [FULL_OFFER], evidence=[measurement(other)])
    assert states(r, "full")[0]["memory"] == "to_confirm"
    assert r.evidence.ignored and "another workload" in r.evidence.ignored[0][1]


def test_workload_exclude_when_the_run_covered_less(tmp_path):
    short = measurement(SHEET, executed={"prompt_tokens": 2048, "new_tokens": 1024,
                                         "concurrency": 2})
    st, d = states(plan(tmp_path, [FULL_OFFER], evidence=[short]), "full")
    assert st["workload"] == "exclude" and "prompt_tokens 2048 < 3072" in d.criteria["workload"].reason


def test_compatibility_only_from_the_offers_own_environment(tmp_path):
    r = plan(tmp_path, [FULL_OFFER], evidence=[compat(provider="elsewhere")])
    assert states(r, "full")[0]["compatibility"] == "to_confirm"
    r = plan(tmp_path, [FULL_OFFER], evidence=[compat(result="failed")])
    assert states(r, "full")[0]["compatibility"] == "exclude"


def test_distribution(tmp_path):
    offers = [{**FULL_OFFER, "id": "nodisk", "storage": "10 GB"},
              {**FULL_OFFER, "id": "bare", "host_ram": None, "storage": None},
              {**FULL_OFFER, "id": "two", "cards": 1}]
    for o in offers:
        for k in [k for k, v in o.items() if v is None]:
            del o[k]
    two_gpu = {**SHEET, "placement": {"gpus": 2, "strategy": "tensor-parallel"}}
    r = plan(tmp_path, offers, sheet=two_gpu)
    assert states(r, "two")[0]["distribution"] == "exclude"  # 1 card, placement needs 2
    r = plan(tmp_path, offers)
    st, d = states(r, "nodisk")
    assert st["distribution"] == "exclude" and "storage" in d.criteria["distribution"].reason
    st, d = states(r, "bare")
    assert st["distribution"] == "to_confirm"
    assert "host RAM (undocumented)" in d.criteria["distribution"].condition


def test_budget_and_schedule(tmp_path):
    offers = [{**FULL_OFFER, "id": "dear", "total_usd": 150.0},
              {**FULL_OFFER, "id": "nowindow", "available_from": None, "available_until": None},
              {**FULL_OFFER, "id": "late", "available_from": "2026-12-19",
               "available_until": "2026-12-31"},
              {**FULL_OFFER, "id": "spot", "spot": True}]
    for o in offers:
        for k in [k for k, v in o.items() if v is None]:
            del o[k]
    r = plan(tmp_path, offers)
    assert states(r, "dear")[0]["budget"] == "exclude"
    st, d = states(r, "nowindow")
    assert st["budget"] == "to_confirm" and "hypothetical" in d.criteria["budget"].reason
    st, d = states(r, "late")
    assert st["budget"] == "exclude" and "deadline" in d.criteria["budget"].reason
    assert states(r, "spot")[0]["budget"] == "to_confirm"


def quality_doc(sheet, candidate="nf4", reference="bf16", ref=10.0, cand=10.5,
                max_regression=0.02, **extra):
    """A quality evidence document as `gpusizer quality run` writes it (perplexity)."""
    reg = (cand - ref) / ref
    return {"kind": "quality", "document": "q.samples.jsonl", "version": "gpusizer 0.1.0",
            "criteria_sha256": quality_sha256(parse_sheet(sheet)), "metric": "perplexity",
            "direction": "lower", "reference_format": reference, "candidate_format": candidate,
            "candidate_implementation": "test", "reference_value": ref, "candidate_value": cand,
            "regression": reg, "max_regression": max_regression,
            "passed": reg <= max_regression, **extra}


def test_quality(tmp_path):
    no_q = {k: v for k, v in SHEET.items() if k != "quality"}
    st, d = states(plan(tmp_path, [FULL_OFFER], sheet=no_q), "full")
    assert st["quality"] == "to_confirm" and "no quality criteria" in d.criteria["quality"].reason
    assert states(plan(tmp_path, [FULL_OFFER]), "full")[0]["quality"] == "acceptable"
    nf4 = {**SHEET, "weights": "nf4"}
    st, d = states(plan(tmp_path, [FULL_OFFER], sheet=nf4), "full")
    assert st["quality"] == "to_confirm" and "nf4 not yet evaluated" in d.criteria["quality"].reason
    q = quality_doc(nf4, cand=10.5)  # +5 % perplexity > 2 %
    st, d = states(plan(tmp_path, [FULL_OFFER], sheet=nf4, evidence=[q]), "full")
    assert st["quality"] == "exclude" and "+5%" in d.criteria["quality"].reason
    ok = quality_doc(nf4, cand=10.1)  # +1 %
    st, d = states(plan(tmp_path, [FULL_OFFER], sheet=nf4, evidence=[ok]), "full")
    assert st["quality"] == "acceptable" and "+1%" in d.criteria["quality"].reason
    # evidence judged against other criteria (another corpus) does not count
    other = {**ok, "criteria_sha256": "0" * 64}
    r = plan(tmp_path, [FULL_OFFER], sheet=nf4, evidence=[other])
    assert states(r, "full")[0]["quality"] == "to_confirm"
    assert "other criteria" in r.evidence.ignored[0][1]


def test_quality_when_the_card_forces_a_lower_precision(tmp_path):
    """A T4 has no bf16: the offer runs fp16, another format than the reference (bf16), so
    quality stays to_confirm until fp16 has evidence on the locked criteria."""
    t4 = {**FULL_OFFER, "id": "t4", "card": "T4"}
    st, d = states(plan(tmp_path, [t4]), "t4")
    assert d.estimate.weights_format == "fp16"
    assert st["quality"] == "to_confirm"
    assert "format fp16 not yet evaluated against the reference bf16" in \
        d.criteria["quality"].reason
    q = quality_doc(SHEET, candidate="fp16", cand=10.02)  # +0.2 %
    st, d = states(plan(tmp_path, [t4], evidence=[q]), "t4")
    assert st["quality"] == "acceptable" and "fp16 within tolerance of bf16" in \
        d.criteria["quality"].reason


def test_unknown_card_is_never_guessed(tmp_path):
    st, d = states(plan(tmp_path, [{**FULL_OFFER, "id": "x", "card": "Mystery GPU 9000"}]), "x")
    assert st["memory"] == "to_confirm" and d.card is None
    assert d.verdict == "conditional"


def test_ranking_selected_by_cost_then_conditional_provisional(tmp_path):
    cheap = {**FULL_OFFER, "id": "cheap", "total_usd": 40.0}
    r = plan(tmp_path, [FULL_OFFER, cheap], evidence=[measurement(SHEET), compat()])
    ranks = {d.offer.id: d.rank for d in r.decisions}
    assert ranks == {"cheap": 1, "full": 2}


def test_an_oom_run_never_makes_workload_acceptable(tmp_path):
    st, d = states(plan(tmp_path, [FULL_OFFER], evidence=[measurement(SHEET, result="oom")]),
                   "full")
    assert st["workload"] == "to_confirm" and "stopped (oom" in d.criteria["workload"].reason


def test_a_smaller_passing_run_never_makes_memory_acceptable(tmp_path):
    short = measurement(SHEET, executed={"prompt_tokens": 1024, "new_tokens": 1024,
                                         "concurrency": 2})
    st, _ = states(plan(tmp_path, [FULL_OFFER], evidence=[short]), "full")
    assert st["memory"] == "to_confirm" and st["workload"] == "exclude"


def test_an_oom_above_the_required_dimensions_proves_nothing(tmp_path):
    big = measurement(SHEET, result="oom", executed={"prompt_tokens": 6144, "new_tokens": 1024,
                                                     "concurrency": 2})
    assert states(plan(tmp_path, [FULL_OFFER], evidence=[big]), "full")[0]["memory"] == "to_confirm"


def test_vllm_memory_reason_states_the_pool_and_concurrency(tmp_path):
    sheet = {**SHEET, "inference": {"engine": "vllm", "prompt_tokens": 7168, "new_tokens": 1024,
                                    "concurrency": 30}}
    st, d = states(plan(tmp_path, [FULL_OFFER], sheet=sheet), "full")
    reason = d.criteria["memory"].reason
    assert st["memory"] == "to_confirm" and "max concurrency" in reason and "< 30 required" in reason


def test_unrecorded_executed_dimensions_stay_to_confirm(tmp_path):
    doc = measurement(SHEET)
    doc["rungs"][0]["executed"] = {}
    st, d = states(plan(tmp_path, [FULL_OFFER], evidence=[doc]), "full")
    assert st["workload"] == "to_confirm" and "did not record" in d.criteria["workload"].reason
    assert st["memory"] == "to_confirm"


def test_contract_order_fits_by_cost_then_other_conditional_then_excluded(tmp_path):
    """CONTRACT.md: provisional_rank only for conditional offers estimated to fit, by total cost
    (not by headroom: the H100's larger margin does not beat the cheaper 6000 Ada); then the other
    conditional offers, then excluded ones, each by total cost."""
    base = {"provider": "acme", "cards": 1, "days": 3, "document": "q", "version": "1"}
    offers = [{**base, "id": "h100", "card": "H100 SXM", "total_usd": 90.0},
              {**base, "id": "t4", "card": "T4", "total_usd": 10.0},  # 15 GiB: exclude
              {**base, "id": "a6000ada", "card": "RTX 6000 Ada", "total_usd": 55.0},
              {**base, "id": "mystery", "card": "Mystery GPU 9000", "total_usd": 5.0},
              {**base, "id": "over", "card": "H200", "total_usd": 500.0}]  # over max_usd 100
    r = plan(tmp_path, offers)
    got = [(d.offer.id, d.verdict, d.fit.state if d.fit else "unknown", d.provisional_rank)
           for d in r.decisions]
    assert got == [("a6000ada", "conditional", "fits", 1), ("h100", "conditional", "fits", 2),
                   ("mystery", "conditional", "unknown", None),
                   ("t4", "excluded", "does_not_fit", None),
                   ("over", "excluded", "fits", None)]
    heads = {d.offer.id: d.fit.headroom_bytes for d in r.decisions if d.fit}
    assert heads["h100"] > heads["a6000ada"]  # the margin is only the second key
