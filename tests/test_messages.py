"""Messages a new user found wrong (issue 12, point 8), one test each: what the text says, and
that it says nothing a person cannot use (Python reprs, test-data paths)."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest
import yaml

from gpusizer import api
from gpusizer.memory.estimate import estimate_memory
from gpusizer.report.markdown import render_markdown

from .conftest import EXAMPLES, REPO_ROOT, run_cli
from .decision.test_criteria import FULL_OFFER, SHEET, compat, measurement, plan
from .memory.conftest import facts_of, sheet

TODAY = dt.date(2026, 12, 1)
SERVING = EXAMPLES / "llama-3.1-8b-serving.yaml"


def test_estimate_with_a_card_names_it_and_keeps_the_rules_section():
    text = run_cli("estimate", str(SERVING), "--card", "RTX 4090").stdout
    rules = text.split("## Rules applied and what lies outside the calculation", 1)
    assert len(rules) == 2, "the rules section is missing with --card"
    # RTX 4090: compute capability 8.9 (card table), bf16 runs natively
    assert ("- card RTX 4090 (compute capability 8.9): weights run as bf16, compute dtype bf16, "
            "attention kernel sdpa; nothing changed from the sheet") in rules[1]
    without = run_cli("estimate", str(SERVING)).stdout
    assert "- no card given: no card-specific rule (kernel, dtype support) was applied" in without


def test_estimate_with_an_older_card_lists_what_its_rules_changed():
    text = run_cli("estimate", str(SERVING), "--card", "T4").stdout
    assert "- card T4 (compute capability 7.5): weights run as fp16" in text
    assert "bf16 needs CC &gt;= 8.0 (card 7.5)" in text


def test_fsdp_bitsandbytes_note_only_with_a_quantized_base():
    fsdp = {"gpus": 2, "strategy": "fsdp"}
    train = {"sequence_length": 1024, "microbatch": 1}
    llama = facts_of("meta-llama/Meta-Llama-3.1-8B")
    note = "FSDP: a quantized (bitsandbytes) base needs bnb_4bit_quant_storage"
    bf16 = estimate_memory(sheet(task="lora", weights="bf16", training=train, placement=fsdp),
                           llama)
    nf4 = estimate_memory(sheet(task="qlora", weights="nf4", training=train, placement=fsdp),
                          llama)
    assert any(it.name == "fsdp_gathered_layers" for it in bf16.items)
    assert not any(note in text for text in bf16.note_texts)
    assert any(note in text for text in nf4.note_texts)


def test_vllm_compatibility_condition_names_vllms_backend_and_the_resolved_format():
    doc = api.plan(EXAMPLES / "deepseek-v3-8xh200-vllm.yaml",
                   catalogs=[EXAMPLES / "catalogs" / "h200-lots.yaml"], today=TODAY).to_json()
    for offer in doc["offers"]:
        condition = offer["criteria"]["compatibility"]["condition"]
        # the sheet says weights: auto and attention: sdpa (the default); vLLM picks its own
        # backend (an MLA one for DeepSeek-V3's latent attention) and DeepSeek-V3 stores fp8
        # (config.json quantization_config)
        assert "attention vLLM's MLA backend" in condition and "fp8 weights" in condition
        assert "sdpa" not in condition and "auto" not in condition


def test_vllm_compatibility_condition_without_mla_names_flashattention():
    doc = api.plan(EXAMPLES / "validation" / "vllm10517-llama31-8b-rtx3090.yaml",
                   today=TODAY).to_json()
    condition = doc["offers"][0]["criteria"]["compatibility"]["condition"]
    assert "attention vLLM's FlashAttention backend, bf16 weights" in condition


def test_transformers_compatibility_condition_keeps_the_sheets_kernel():
    doc = api.plan(SERVING, today=TODAY).to_json()
    condition = doc["offers"][0]["criteria"]["compatibility"]["condition"]
    assert "attention sdpa, bf16 weights" in condition


def test_distribution_reason_names_the_hub_index_and_no_test_data_path():
    doc = api.plan(SERVING, today=TODAY).to_json()
    for offer in doc["offers"]:
        reason = offer["criteria"]["distribution"]["reason"]
        assert "Hub index total_size" in reason
        for leak in ("shared/", "truth.json", "test data"):
            assert leak not in reason
    registry = REPO_ROOT / "src" / "gpusizer" / "data" / "registry"
    for path in registry.glob("*.json"):
        source = json.loads(path.read_text(encoding="utf-8")).get("stored_bytes_source") or ""
        assert "shared/" not in source and "test data" not in source, path.name


# A Python repr in prose: a bare True / False / None (not a keyword argument quoted from an
# API, such as zero_grad(set_to_none=True)), a dict or a tuple.
_REPR = re.compile(r"(?<![=\w])(True|False|None)\b|\{'|\('")
_SHEETS = ["llama-3.1-8b-serving.yaml", "llama-3.1-8b-qlora.yaml", "seed-7b-fp16.yaml",
           "qwen3-30b-a3b-moe.yaml", "deepseek-v3-8xh200-vllm.yaml",
           "validation/vllm10517-llama31-8b-rtx3090.yaml",
           "validation/fms-mistral7b-fullft-fp16-1xa100-bs4.yaml",
           "validation/llamafactory257-llama2-70b-lora-8xa100-load-oom.yaml"]


@pytest.mark.parametrize("name", _SHEETS)
def test_no_python_repr_in_plan_or_estimate_markdown(name):
    path = EXAMPLES / name
    cats = [EXAMPLES / "catalogs" / "h200-lots.yaml"] if "deepseek" in name else None
    docs = {"plan": api.plan(path, catalogs=cats, today=TODAY).to_json(),
            "estimate": api.estimate(path).to_json(),
            "estimate --card H100 SXM": api.estimate(path, card="H100 SXM").to_json()}
    for what, doc in docs.items():
        for line in render_markdown(doc).splitlines():
            found = _REPR.search(line)
            assert found is None, f"{what}: {line[max(0, found.start() - 60):found.end() + 20]!r}"


def test_the_repr_scan_sees_what_it_must():
    assert _REPR.search("gradient checkpointing True")
    assert _REPR.search("| vLLM starts | False |")
    assert _REPR.search("versions: {'torch': '2.5'}")
    assert _REPR.search("cc ('8', '0')")
    assert not _REPR.search("freed by zero_grad(set_to_none=True) after the update")


def test_fit_shows_gib_beside_bytes():
    text = run_cli("fit", str(SERVING), "--card", "RTX 4090").stdout
    # RTX 4090: 24564 MiB = 25 757 220 864 B = 23.99 GiB (card table)
    assert "(device 23.99 GiB (25 757 220 864 B), margin 5%)" in text.splitlines()[0]
    assert re.search(r": 4 \(estimated device peak \d+\.\d\d GiB \([\d ]+ B\), headroom", text)


def test_ignored_evidence_says_which_scope_field_differed(tmp_path):
    r = plan(tmp_path, [FULL_OFFER], evidence=[
        compat(provider="elsewhere"), compat(image="acme/other:1"),
        measurement(SHEET, card="H100 SXM", device_bytes=85520809984),
        measurement(SHEET, device_bytes=51527024640 - 2**20)])
    why = {Path(f).name: reason for f, reason in r.evidence.ignored}
    assert "its scope.provider 'elsewhere' is no offer's provider (acme)" in why["e0.json"]
    assert ("its scope.environment.image 'acme/other:1' is not the environment of any acme "
            "offer") in why["e1.json"]
    assert "its scope.card H100 SXM is rented by no offer" in why["e2.json"]
    # RTX 6000 Ada: 49140 MiB = 51 527 024 640 B in the card table; the run saw 1 MiB less
    assert ("its scope.device_bytes 51525976064 differs from RTX 6000 Ada's 51527024640 in the "
            "card table") in why["e3.json"]


def _skypilot(tmp_path, *rows: tuple[str, int, int]) -> Path:
    """A vms.csv of one-GPU rows (accelerator, SizeInMiB, USD per hour)."""
    lines = ["InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,Region"]
    for i, (name, mib, usd) in enumerate(rows):
        info = (f"{{'Gpus': [{{'Name': '{name}', 'Count': 1, 'MemoryInfo': {{'SizeInMiB': {mib}}}"
                f"}}], 'TotalGpuMemoryInMiB': {mib}}}")
        lines.append(f'1x-{name}-{i},{name},1,8,64,"{info}",{usd},r{i}')
    path = tmp_path / "test_vms.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _offers(sheet_path: Path, catalog: Path) -> dict[str, dict]:
    doc = api.plan(sheet_path, catalogs=[catalog], today=TODAY).to_json()
    return {o["card"]: o for o in doc["offers"]}, doc


def test_an_unknown_card_is_judged_at_the_catalogs_claim(tmp_path):
    from gpusizer.sheet import load_sheet
    # L40 is not in the card table; the catalog claims 49152 MiB = 51 539 607 552 B per GPU
    offers, doc = _offers(SERVING, _skypilot(tmp_path, ("L40", 49152, 1)))
    o = offers["L40"]
    claim = 49152 * 2**20
    assert o["canonical_card"] is None and o["device_bytes"] is None
    assert o["claimed_device_bytes"] == claim and o["estimated_fit_basis"] == "catalog's claim"
    margin = load_sheet(SERVING).margin.of(claim)  # 5 % of the claim
    assert o["estimated_fit"] == "fits"
    assert o["headroom_bytes"] == claim - margin - doc["memory"]["device_peak_bytes"]
    memory = o["criteria"]["memory"]
    assert memory["state"] == "to_confirm"  # a claim proves nothing (R4)
    assert "(catalog's claim): fits" in memory["reason"]
    # CONTRACT: every conditional offer whose estimated_fit is fits gets a provisional rank
    assert o["verdict"] == "conditional" and o["provisional_rank"] == 1
    # and every view labels the figure as the catalog's claim
    from gpusizer.report.offer_words import fit_words
    assert fit_words(doc, o).startswith("estimated (catalog's claim): fits, ")


def test_an_ambiguous_name_of_one_memory_is_judged_at_that_memory(tmp_path):
    from gpusizer.sheet import load_sheet
    # 'H100' with 81920 MiB fits H100 SXM and H100 PCIe, both 81559 MiB = 85 520 809 984 B
    offers, doc = _offers(SERVING, _skypilot(tmp_path, ("H100", 81920, 2)))
    o = offers["H100"]
    device = 81559 * 2**20
    assert o["canonical_card"] is None and o["claimed_device_bytes"] == 81920 * 2**20
    assert "H100 SXM, H100 PCIe" in o["estimated_fit_basis"]
    assert o["estimated_fit"] == "fits"
    assert o["headroom_bytes"] == (device - load_sheet(SERVING).margin.of(device)
                                   - doc["memory"]["device_peak_bytes"])
    assert o["criteria"]["memory"]["state"] == "to_confirm"


def test_memory_is_excluded_when_the_lower_bound_exceeds_every_variant(tmp_path):
    # RTX 3060 is 12 GB (card table) or 8 GB (unlisted variants): a claim of 8192 MiB leaves
    # the name undecided; the README example's certain lower bound is weights
    # 16 060 522 496 B + KV cache 8 GiB = 24 650 457 088 B, above every variant
    offers, _ = _offers(SERVING, _skypilot(tmp_path, ("RTX3060", 8192, 1), ("A100", 60000, 3)))
    assert offers["RTX3060"]["canonical_card"] is None
    memory = offers["RTX3060"]["criteria"]["memory"]
    assert memory["state"] == "exclude" and offers["RTX3060"]["verdict"] == "excluded"
    assert "24 650 457 088 B) per GPU exceed every card 'RTX3060' may mean" in memory["reason"]
    # 60000 MiB fits neither A100: it may mean 40 GB or 80 GB, the bound is below 80 GB, so
    # memory stays to confirm
    assert offers["A100"]["canonical_card"] is None
    assert offers["A100"]["criteria"]["memory"]["state"] == "to_confirm"


def test_one_place_says_how_to_install_an_extra():
    # quoted for zsh (brackets glob there), and the clone's form with CI's constraints
    from gpusizer.errors import install_line
    assert install_line("simulate") == ('pip install "gpusizer[simulate]" (from a checkout: '
                                        'pip install -c constraints.txt -e ".[simulate]")')
    import tomllib
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert {"simulate", "measure", "quality"} <= set(extras)
    # no message builds its own line: every missing-extra message goes through install_line
    for path in (REPO_ROOT / "src" / "gpusizer").rglob("*.py"):
        text = path.read_text()
        if path.name != "errors.py":
            assert "pip install gpusizer[" not in text and 'pip install "gpusizer[' not in \
                text.replace('``pip install "gpusizer[', ""), path
