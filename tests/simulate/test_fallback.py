"""A model_type no gpusizer family counts: ``simulate`` runs it with facts=None, and
``estimate`` / ``plan`` fall back to the simulation (issue 13 points 1 and 2). OLMo 2 stands for
it, with its family taken out of the registry for the test (olmo2 has a family since issue 13
point 3; its tiny config keeps the hand arithmetic below)."""

from __future__ import annotations

import json

import pytest

from gpusizer.model.families import FAMILIES
from gpusizer.units import MiB

OLMO2 = {"model_type": "olmo2", "architectures": ["Olmo2ForCausalLM"], "torch_dtype": "bfloat16",
         "num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128,
         "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512,
         "max_position_embeddings": 4096, "tie_word_embeddings": False, "pad_token_id": 1,
         "bos_token_id": None, "eos_token_id": 2, "rms_norm_eps": 1e-6}
"""A tiny OLMo 2 (allenai/OLMo-2-1124-7B's keys, two layers, small widths)."""


def _rounded(elements: int) -> int:
    """bf16 bytes of one tensor as the CUDA allocator books it (512-byte blocks)."""
    return -(-elements * 2 // 512) * 512


# transformers' modeling_olmo2.py: per layer q/k/v/o projections (no bias), q_norm over
# heads × head_dim, k_norm over kv_heads × head_dim, gate/up/down, and two norms after the
# attention and the MLP; the embedding, the final norm and an untied lm_head.
HEAD_DIM = 64 // 4
LAYER = [64 * 64, 64 * 2 * HEAD_DIM, 64 * 2 * HEAD_DIM, 64 * 64,  # q, k, v, o
         64, 2 * HEAD_DIM,                                         # q_norm, k_norm
         64 * 128, 64 * 128, 128 * 64,                             # gate, up, down
         64, 64]                                                   # the two layer norms
WEIGHTS = 2 * sum(_rounded(n) for n in LAYER) + 2 * _rounded(512 * 64) + _rounded(64)
assert WEIGHTS == 283_136  # 2 × 75 776 + 2 × 65 536 + 512


@pytest.fixture
def olmo2(tmp_path, monkeypatch):
    monkeypatch.delitem(FAMILIES, "olmo2", raising=False)  # the point: no arithmetic for it
    folder = tmp_path / "olmo2"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(OLMO2))
    return folder


def _sheet(folder, **inference):
    from gpusizer.sheet import parse_sheet
    inf = {"prompt_tokens": 64, "new_tokens": 16, "concurrency": 2, **inference}
    return parse_sheet({"model": {"path": str(folder)}, "task": "inference", "weights": "auto",
                        "inference": inf})


def test_simulate_without_facts_counts_the_module_tree(olmo2):
    from gpusizer.simulate.engine import simulate_memory
    r = simulate_memory(_sheet(olmo2), None)
    assert r.estimate is None and r.model_class == "Olmo2ForCausalLM"
    assert r.comparison["phases"] == [] and \
        r.comparison["note"].startswith("no arithmetic for this architecture")
    assert r.memory.item("weights").bytes == WEIGHTS
    assert r.memory.weights_format == "bf16" and r.memory.stored_format == "bf16"
    # prefill KV: 2 layers × (K, V) × 2 sequences × 2 KV heads × 64 tokens × 16 × 2 B
    assert r.memory.item("kv_cache").phase_bytes["prefill"] == 2 * 2 * (2 * 2 * 64 * 16 * 2)
    # carried items from estimate's own rules, without a family: no card → the Hopper cuBLAS
    # workspace (32 MiB), the declared CUDA context, and the slack of the 25 weight tensors,
    # every one under 1 MiB, sharing 2 MiB segments: their exact bytes (139 776 parameters × 2 B
    # = 279 552 B, model.num_parameters()) fill one segment, the rest of it is slack
    assert r.parameters == 139_776
    assert r.memory.item("cublas_workspace").bytes == 32 * MiB
    assert r.memory.item("cuda_context").bytes == 500 * MiB
    assert r.memory.item("allocator_slack").bytes == 2 * MiB - 139_776 * 2


def test_estimate_falls_back_to_the_simulation(olmo2):
    from gpusizer.catalog.cards import require_card
    from gpusizer.pipeline import run_estimate
    r = run_estimate(_sheet(olmo2), card=require_card("H100-SXM"))
    est = r.estimate
    assert r.facts.model_type == "olmo2" and r.facts.architecture is None  # config-only
    assert est.notes[0].code == "no_arithmetic"
    assert "no arithmetic for model_type 'olmo2'" in est.notes[0].text
    assert "Olmo2ForCausalLM" in est.notes[0].text
    by_name = {it.name: it for it in est.items}
    assert {n for n, it in by_name.items() if it.provenance == "simulated"} >= {
        "weights", "kv_cache", "temporaries"}
    assert by_name["weights"].bytes == WEIGHTS
    assert est.card == "H100 SXM"
    assert by_name["cublas_workspace"].bytes == 32 * MiB  # CC 9.0
    assert r.judgement is not None and r.judgement.state == "fits"


def test_plan_simulates_once_per_compute_capability(olmo2, tmp_path, monkeypatch):
    import gpusizer.simulate.engine as engine
    from gpusizer.pipeline import run_plan
    calls = []
    real = engine.simulate_memory

    def counted(sheet, facts, *, card=None, **kw):
        calls.append(card.name if card is not None else None)
        return real(sheet, facts, card=card, **kw)

    monkeypatch.setattr(engine, "simulate_memory", counted)
    catalog = tmp_path / "offers.yaml"
    catalog.write_text(
        "- {id: a, provider: p, card: H100-SXM, cards: 1, usd_per_hour: 3.0, days: 1}\n"
        "- {id: b, provider: q, card: H100-SXM, cards: 1, usd_per_hour: 2.5, days: 1}\n"
        "- {id: c, provider: q, card: H200, cards: 1, usd_per_hour: 4.0, days: 1}\n")
    r = run_plan(_sheet(olmo2), catalogs=[catalog])
    # one simulation without a card (the plan's headline memory), then one for compute
    # capability 9.0, reused for the two H100 offers and the H200 (also 9.0)
    assert calls == [None, "H100 SXM"]
    assert {d.offer.id: d.estimate.card for d in r.decisions} == {
        "a": "H100 SXM", "b": "H100 SXM", "c": "H200"}
    for d in r.decisions:
        assert d.estimate.item("weights").provenance == "simulated"
        assert d.estimate.item("weights").bytes == WEIGHTS
        assert d.estimate.notes[0].code == "no_arithmetic"
    assert r.estimate.notes[0].code == "no_arithmetic"


def test_cli_estimate_says_simulated(olmo2, tmp_path):
    # in this process (the family is taken out here only), through the CLI's own code
    from typer.testing import CliRunner

    from gpusizer.cli import app
    sheet = tmp_path / "s.yaml"
    sheet.write_text(f"model: {{path: {olmo2}}}\ntask: inference\nweights: auto\n"
                     "inference: {prompt_tokens: 64, new_tokens: 16}\n")
    result = CliRunner().invoke(app, ["estimate", str(sheet), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    items = {it["name"]: it for it in doc["memory"]["items"]}
    assert items["weights"]["provenance"] == "simulated" and items["weights"]["bytes"] == WEIGHTS
    assert any(n.startswith("no arithmetic for model_type 'olmo2'") for n in doc["memory"]["notes"])
    assert doc["model"]["architecture"] == "olmo2" and doc["model"]["stored_format"] == "bf16"


def test_model_type_transformers_does_not_ship_is_an_input_error(tmp_path):
    from gpusizer.errors import SheetError
    from gpusizer.pipeline import run_estimate
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**OLMO2, "model_type": "no_such_model",
                                                    "architectures": ["NoSuchModel"]}))
    with pytest.raises(SheetError, match="without remote code"):
        run_estimate(_sheet(folder))
