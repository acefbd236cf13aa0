"""Issue 11 (reliability findings F1, F4, F5, F6, F8, F26): a criterion is ``acceptable`` only
with evidence the criterion's own rule accepts; the budget criterion never crashes."""

from __future__ import annotations

import pytest

from gpusizer.errors import EvidenceError

from .test_criteria import FULL_OFFER, SHEET, measurement, plan, quality_doc, states

NF4 = {**SHEET, "weights": "nf4"}


# --- F1: quality evidence judged by the sheet's locked criteria ---------------------------------

def test_f1_a_document_with_its_own_looser_tolerance_does_not_pass(tmp_path):
    # perplexity 8 → 12 is +50 %; the document claims max_regression 0.9, the sheet locks 0.02
    loose = quality_doc(NF4, ref=8.0, cand=12.0, max_regression=0.9)
    assert loose["passed"] is True
    st, d = states(plan(tmp_path, [FULL_OFFER], sheet=NF4, evidence=[loose]), "full")
    assert st["quality"] == "to_confirm", d.criteria["quality"].reason
    assert "its max_regression 0.9 is not the sheet's 0.02" in d.criteria["quality"].reason


def test_f1_a_document_with_the_wrong_direction_does_not_pass(tmp_path):
    # "higher is better" turns perplexity 8 → 12 into a -50 % "regression"
    doc = {**quality_doc(NF4, ref=8.0, cand=12.0), "direction": "higher", "regression": -0.5,
           "passed": True}
    st, d = states(plan(tmp_path, [FULL_OFFER], sheet=NF4, evidence=[doc]), "full")
    assert st["quality"] == "to_confirm"
    assert "its direction 'higher' is not 'lower'" in d.criteria["quality"].reason


def test_f1_a_document_on_another_metric_does_not_pass(tmp_path):
    doc = {**quality_doc(NF4, ref=0.5, cand=0.5), "metric": "exact_match", "direction": "higher"}
    st, d = states(plan(tmp_path, [FULL_OFFER], sheet=NF4, evidence=[doc]), "full")
    assert st["quality"] == "to_confirm"
    assert "its metric 'exact_match' is not the sheet's 'perplexity'" in \
        d.criteria["quality"].reason


def test_f1_the_regression_is_recomputed_on_the_sheets_tolerance(tmp_path):
    # 10 → 10.5 is +5 % > 0.02: exclude; 10 → 10.1 is +1 % <= 0.02: acceptable
    st, d = states(plan(tmp_path, [FULL_OFFER], sheet=NF4,
                        evidence=[quality_doc(NF4, ref=10.0, cand=10.5)]), "full")
    assert st["quality"] == "exclude" and "+5%" in d.criteria["quality"].reason
    st, d = states(plan(tmp_path, [FULL_OFFER], sheet=NF4,
                        evidence=[quality_doc(NF4, ref=10.0, cand=10.1)]), "full")
    assert st["quality"] == "acceptable"
    assert "regression +1% <= 0.02" in d.criteria["quality"].reason


@pytest.mark.parametrize("field", ["candidate_value", "reference_value", "regression"])
def test_f1_non_finite_values_are_malformed_evidence(tmp_path, field):
    doc = quality_doc(NF4, ref=8.0, cand=12.0)
    doc.update({field: float("-inf")})
    with pytest.raises(EvidenceError, match=f"{field}: .*finite"):
        plan(tmp_path, [FULL_OFFER], sheet=NF4, evidence=[doc])


# --- F5: two limit rungs -------------------------------------------------------------------------

def _truncated_limit():
    return {"name": "limit", "result": "truncated",
            "executed": {"prompt_tokens": 1536, "new_tokens": 1024, "concurrency": 2},
            "truncation": {"prompt_tokens": {"executed": 1536, "planned": 3072}}, "phases": []}


def test_f5_a_document_with_two_limit_rungs_is_set_aside_as_not_one_run(tmp_path):
    doc = measurement(SHEET, reserved=20_000_000_000)
    doc["rungs"].append(_truncated_limit())
    r = plan(tmp_path, [FULL_OFFER], evidence=[doc])
    st, _ = states(r, "full")
    assert st["workload"] == "to_confirm" and st["memory"] == "to_confirm"
    assert r.evidence.ignored[0][1] == ("rung limit appears 2 times: not one run (merge of "
                                        "several files?)")


def test_f5_the_worst_limit_rung_of_several_documents_counts(tmp_path):
    passed = measurement(SHEET, reserved=20_000_000_000)
    truncated = measurement(SHEET)
    truncated["rungs"] = [_truncated_limit()]
    st, d = states(plan(tmp_path, [FULL_OFFER], evidence=[passed, truncated]), "full")
    assert st["workload"] == "exclude", d.criteria["workload"].reason
    assert st["memory"] == "to_confirm"


def test_f5_of_two_passed_runs_the_larger_measurement_counts(tmp_path):
    device, non_torch = 51_527_024_640, 600 * 2**20     # RTX 6000 Ada; the helper's non-PyTorch
    margin = -(-5 * device // 100)
    over = device - margin - non_torch + 1              # one byte over the margin
    st, d = states(plan(tmp_path, [FULL_OFFER], evidence=[
        measurement(SHEET, reserved=20_000_000_000), measurement(SHEET, reserved=over)]), "full")
    assert st["memory"] == "to_confirm" and "exceeds" in d.criteria["memory"].reason


# --- F6: no workload dimensions -------------------------------------------------------------------

def test_f6_memory_is_not_acceptable_on_a_sheet_without_dimensions(tmp_path):
    bare = {k: v for k, v in SHEET.items() if k != "inference"}
    doc = measurement(bare, executed={"prompt_tokens": 1, "new_tokens": 1, "concurrency": 1},
                      reserved=14_000_000_000)
    st, d = states(plan(tmp_path, [FULL_OFFER], sheet=bare, evidence=[doc]), "full")
    assert st["memory"] == "to_confirm", d.criteria["memory"].reason
    assert "states no workload dimensions" in d.criteria["memory"].reason
    assert st["workload"] == "to_confirm"


# --- F4: unknown checkpoint size ------------------------------------------------------------------

def test_f4_distribution_is_not_acceptable_with_an_unknown_checkpoint(tmp_path, shared_dir):
    import json
    cfg = json.loads((shared_dir / "data" / "models" / "meta-llama--Llama-3.2-1B-Instruct"
                      / "config.json").read_text())
    cfg.pop("torch_dtype", None)
    cfg.pop("dtype", None)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(cfg))
    sheet = {"model": {"path": str(model)}, "task": "inference", "weights": "bf16",
             "inference": {"prompt_tokens": 100, "new_tokens": 10}}
    tiny = {**FULL_OFFER, "id": "tiny", "card": "H100-SXM", "host_ram": "1 B", "storage": "1 B"}
    st, d = states(plan(tmp_path, [tiny], sheet=sheet), "tiny")
    assert st["distribution"] == "to_confirm", d.criteria["distribution"].reason
    assert "the checkpoint's size" in d.criteria["distribution"].condition


def test_f4_a_known_checkpoint_still_decides(tmp_path):
    st, d = states(plan(tmp_path, [FULL_OFFER]), "full")
    assert st["distribution"] == "acceptable", d.criteria["distribution"].reason


# --- F8: budget without days, open-ended windows -------------------------------------------------

def test_f8_no_days_anywhere_asks_for_them_instead_of_crashing(tmp_path):
    sheet = {**SHEET, "budget": {"max_usd": 100}}
    offer = {**FULL_OFFER, "days": None, "available_from": "2025-01-01",
             "available_until": "2099-12-31"}
    st, d = states(plan(tmp_path, [offer], sheet=sheet), "full")
    assert st["budget"] == "to_confirm"
    assert "the days the campaign needs (budget.days or the offer's days)" in \
        d.criteria["budget"].reason


def test_f8_an_open_ended_window_does_not_overflow(tmp_path):
    offer = {**FULL_OFFER, "available_until": "9999-12-31"}
    st, d = states(plan(tmp_path, [offer]), "full")
    assert st["budget"] == "acceptable", d.criteria["budget"].reason
    assert "window covers 3 days" in d.criteria["budget"].reason


def test_f8_a_window_one_day_short_still_excludes(tmp_path):
    # work from 2026-12-01 for 3 days ends on 2026-12-03; a window to 2026-12-02 is too short
    offer = {**FULL_OFFER, "available_until": "2026-12-02"}
    st, d = states(plan(tmp_path, [offer]), "full")
    assert st["budget"] == "exclude" and "shorter than 3 days" in d.criteria["budget"].reason
    offer = {**FULL_OFFER, "available_until": "2026-12-03"}
    assert states(plan(tmp_path, [offer]), "full")[0]["budget"] == "acceptable"


# --- F26: unknown card --------------------------------------------------------------------------

def test_f26_quality_stays_to_confirm_on_an_unknown_card(tmp_path):
    odd = {**FULL_OFFER, "id": "odd", "card": "Acme Tensor 9000"}
    st, d = states(plan(tmp_path, [odd]), "odd")
    assert st["quality"] == "to_confirm"
    assert "unknown to the card table: the format it runs is unknown" in \
        d.criteria["quality"].reason
    assert states(plan(tmp_path, [FULL_OFFER]), "full")[0]["quality"] == "acceptable"
