"""Measurement evidence in ``plan`` (R4, R9): memory from the limit rung's full cycle on the same
card, compatibility only from a run in the offer's own environment."""

from __future__ import annotations

from .test_criteria import FULL_OFFER, SHEET, measurement, plan, states

IMAGE = FULL_OFFER["environment"]
DEVICE = 51527024640          # RTX 6000 Ada, nvidia-smi memory.total (card table)
MARGIN = -(-5 * DEVICE // 100)  # the sheet's default 5 %, rounded up to whole bytes
NON_TORCH = 600 * 2**20


def in_env(doc, image=IMAGE, provider="acme"):
    doc = {**doc, "scope": {**doc["scope"], "provider": provider,
                            "environment": {"image": image, "torch": "2.5.1", "cuda": "12.4",
                                            "driver": "550.54"}}}
    return doc


def test_a_run_in_the_offers_own_environment_verifies_compatibility(tmp_path):
    st, d = states(plan(tmp_path, [FULL_OFFER], evidence=[in_env(measurement(SHEET))]), "full")
    assert st["compatibility"] == "acceptable"
    assert "torch 2.5.1, cuda 12.4, driver 550.54" in d.criteria["compatibility"].reason


def test_a_run_elsewhere_proves_no_compatibility(tmp_path):
    for doc in (in_env(measurement(SHEET), image="other/image:1"),
                in_env(measurement(SHEET), provider="elsewhere"),
                measurement(SHEET)):  # no image recorded
        st, d = states(plan(tmp_path, [FULL_OFFER], evidence=[doc]), "full")
        assert st["compatibility"] == "to_confirm", d.criteria["compatibility"].reason
        assert st["memory"] == "acceptable"  # memory holds on the same card wherever it ran


def test_a_non_memory_failure_in_the_own_environment_excludes_compatibility(tmp_path):
    doc = in_env(measurement(SHEET, result="failed"))
    st, d = states(plan(tmp_path, [FULL_OFFER], evidence=[doc]), "full")
    assert st["compatibility"] == "exclude" and st["memory"] == "to_confirm"


def test_memory_needs_every_phase_of_the_cycle(tmp_path):
    doc = measurement(SHEET)
    doc["rungs"][0]["phases"] = [p for p in doc["rungs"][0]["phases"] if p["name"] != "decode"]
    st, d = states(plan(tmp_path, [FULL_OFFER], evidence=[doc]), "full")
    assert st["memory"] == "to_confirm"
    assert d.criteria["memory"].reason == "the limit run passed but did not record the phases " \
                                          "decode"


def test_memory_margin_on_reserved_plus_non_torch_to_the_byte(tmp_path):
    fits = DEVICE - MARGIN - NON_TORCH          # reserved + non-PyTorch + margin == device
    st, d = states(plan(tmp_path, [FULL_OFFER], evidence=[measurement(SHEET, reserved=fits)]),
                   "full")
    assert st["memory"] == "acceptable", d.criteria["memory"].reason
    st, d = states(plan(tmp_path, [FULL_OFFER],
                        evidence=[measurement(SHEET, reserved=fits + 1)]), "full")
    assert st["memory"] == "to_confirm" and "exceeds" in d.criteria["memory"].reason


def test_a_cpu_run_has_no_reserved_counter_and_never_makes_memory_acceptable(tmp_path):
    doc = measurement(SHEET)
    for p in doc["rungs"][0]["phases"]:
        p.update(max_memory_allocated_bytes=None, max_memory_reserved_bytes=None,
                 non_torch_bytes=None, cpu_live_tensor_peak_bytes=123456)
    st, _ = states(plan(tmp_path, [FULL_OFFER], evidence=[doc]), "full")
    assert st["memory"] == "to_confirm" and st["workload"] == "acceptable"


def test_an_oom_on_a_lower_rung_already_excludes(tmp_path):
    doc = measurement(SHEET)
    doc["rungs"] = [{"name": "short", "result": "oom", "failed_phase": "load",
                     "executed": {}, "phases": doc["rungs"][0]["phases"][:1]}]
    st, d = states(plan(tmp_path, [FULL_OFFER], evidence=[doc]), "full")
    assert st["memory"] == "exclude"
    assert d.criteria["memory"].reason == ("out of memory already at the short rung (smaller "
                                           "than required) in phase load on RTX 6000 Ada")
    assert st["workload"] == "to_confirm"  # the limit was never run
