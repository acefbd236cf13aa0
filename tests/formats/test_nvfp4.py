"""NVFP4: E2M1 values, one FP8-E4M3 scale per 16 values, fp32 per-tensor scales; Blackwell.

Detection from public ModelOpt and compressed-tensors configs (``data/SOURCES.md``), bytes with
the arithmetic written out, the card rule per engine, and the refusals of simulate and measure.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpusizer.catalog.cards import require_card
from gpusizer.errors import SheetError
from gpusizer.pipeline import run_fit
from gpusizer.formats import FORMATS, detect, quantization_config_of
from gpusizer.memory.estimate import estimate_memory
from gpusizer.memory.weights import weight_breakdown
from gpusizer.model.registry import find_entry
from gpusizer.model.resolve import resolve_model
from gpusizer.sheet import parse_sheet

from ..conftest import run_cli

DATA = Path(__file__).parent / "data"
LLAMA_70B_FP4 = DATA / "nvidia--Llama-3.3-70B-Instruct-FP4"
R1_FP4 = DATA / "nvidia--DeepSeek-R1-0528-NVFP4"
CT_8B = DATA / "nm-testing--Meta-Llama-3-8B-Instruct-NVFP4"


def _folder(tmp_path: Path, registry_id: str, side: Path | None = None, **config) -> Path:
    """A model folder: the registry's config.json (a 16-bit dtype, no quantization_config) and
    the checkpoint's side files."""
    folder = tmp_path / registry_id.replace("/", "--")
    folder.mkdir(parents=True)
    cfg = {k: v for k, v in find_entry(registry_id).config.items() if k != "quantization_config"}
    cfg.update({"torch_dtype": "bfloat16", **config})
    (folder / "config.json").write_text(json.dumps(cfg))
    if side is not None:
        for f in side.iterdir():
            shutil.copy(f, folder)
    return folder


def _sheet(folder: Path, **kw):
    body = {"model": {"path": str(folder)}, "task": "inference", "weights": "auto",
            "inference": {"engine": "vllm", "prompt_tokens": 4096, "new_tokens": 1024,
                          "concurrency": 8}}
    body.update(kw)
    return parse_sheet(body)


# -- the record ------------------------------------------------------------------------------

def test_record():
    rec = FORMATS["nvfp4"]
    assert (rec.bits, rec.family, rec.min_compute_capability) == (4, "nvfp4", (10, 0))
    assert rec.packed_at_rest and not rec.produced_at_load and not rec.dequantizable
    assert not rec.dense and not rec.qlora_base and rec.quality is None
    # not a lower-precision alternative yet (no quality evidence, Blackwell only)
    assert rec.lower == () and all("nvfp4" not in r.lower for r in FORMATS.values())
    assert rec.packed_bytes(16) == 8  # 16 E2M1 values × 4 bit / 8


def test_card_rule_per_engine():
    rec = FORMATS["nvfp4"]
    assert rec.on_card("vllm", (10, 0)).note == ""  # B200: CUTLASS / FlashInfer FP4
    assert rec.on_card("vllm", (12, 0)).note == ""  # RTX 5090 / RTX PRO 6000 Blackwell
    h100 = rec.on_card("vllm", (9, 0))  # weight-only FP4 Marlin: same bytes
    assert h100.runs == "nvfp4" and h100.refusal is None and "Marlin" in h100.note
    v100 = rec.on_card("vllm", (7, 0))
    assert v100.refusal is not None and "7.5" in v100.refusal
    assert "transformers 5.24" in rec.on_card("transformers", (10, 0)).refusal


# -- detection from the public configs -------------------------------------------------------

def test_modelopt_hf_quant_config_in_a_model_folder(tmp_path):
    # nvidia/Llama-3.3-70B-Instruct-FP4 (ModelOpt 0.23.0): quantization in hf_quant_config.json
    f = resolve_model(model_id=None, revision=None,
                      path=_folder(tmp_path, "meta-llama/Meta-Llama-3.1-70B", LLAMA_70B_FP4))
    assert f.stored_format == "nvfp4" and f.stored_dtype == "bfloat16"
    assert (f.quant.method, f.quant.group_size, f.quant.excluded) == ("modelopt", 16,
                                                                     ("lm_head",))
    assert "quantization read from hf_quant_config.json" in f.source_detail


def test_modelopt_config_json_quantization_config():
    # what ModelOpt's convert_hf_quant_config_format writes into config.json
    qc = detect(json.loads((DATA / "modelopt_quantization_config.json").read_text()))
    assert (qc.fmt, qc.method, qc.excluded) == ("nvfp4", "modelopt", ("lm_head",))
    behemoth = json.loads(
        (DATA / "TheHouseOfTheDude--Behemoth-R1-V2_ModelOpt-NVFP4/hf_quant_config.json")
        .read_text())
    declared, where = quantization_config_of(None, {"hf_quant_config.json": behemoth})
    assert where == "hf_quant_config.json" and detect(declared).fmt == "nvfp4"
    # config.json's own quantization_config wins over a side file
    assert quantization_config_of({"quant_method": "fp8"}, {"hf_quant_config.json": behemoth}
                                  )[0] == {"quant_method": "fp8"}


def test_compressed_tensors_nvfp4_pack_quantized():
    cfg = json.loads((CT_8B / "config.json").read_text())
    qc = detect(cfg["quantization_config"])
    assert (qc.fmt, qc.method, qc.group_size, qc.excluded) == (
        "nvfp4", "compressed-tensors", 16, ("lm_head",))


def test_what_is_not_nvfp4():
    assert detect({"quant_method": "modelopt", "quant_algo": "FP8"}).fmt is None
    mxfp4 = {"quant_method": "compressed-tensors", "format": "mxfp4-pack-quantized",
             "config_groups": {"g": {"weights": {"num_bits": 4, "type": "float",
                                                 "group_size": 32}}}}
    assert detect(mxfp4).fmt is None  # E8M0 scales per 32: not NVFP4
    odd = detect({"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4",
                                                               "group_size": 32}})
    assert odd.fmt is None and "group_size 32" in odd.note


# -- bytes -----------------------------------------------------------------------------------

def test_llama_70b_nvfp4_bytes(tmp_path):
    f = resolve_model(model_id=None, revision=None,
                      path=_folder(tmp_path, "meta-llama/Meta-Llama-3.1-70B", LLAMA_70B_FP4))
    bd = weight_breakdown(f, "nvfp4", compute_dtype="bf16")
    # 80 layers × (q 8192×8192 + k, v 1024×8192 + o 8192×8192 + gate, up 28672×8192
    # + down 8192×28672) linear values
    values = 80 * (8192 * 8192 * 2 + 1024 * 8192 * 2 + 28672 * 8192 * 3)
    assert values == 68_451_041_280
    assert bd.packed_bytes == values // 2  # two E2M1 values per byte
    # one FP8-E4M3 scale (1 B) per 16 values along each row + per matrix two fp32 scalars
    # (weight_scale_2, input_scale): 7 matrices × 80 layers × 8 B
    assert bd.metadata_bytes == values // 16 + 7 * 80 * 8 == 4_278_194_560
    # kept in bf16: embed_tokens and lm_head (128256 × 8192 each, lm_head excluded), norms
    kept = 2 * 128256 * 8192 + (80 * 2 + 1) * 8192
    assert bd.kept_bytes == kept * 2 == 4_205_330_432
    assert bd.total_bytes == 42_709_045_632  # vs 141 GB in bf16


def test_compressed_tensors_llama_8b_bytes(tmp_path):
    folder = tmp_path / "ct"
    shutil.copytree(CT_8B, folder)
    f = resolve_model(model_id=None, revision=None, path=folder)
    bd = weight_breakdown(f, "nvfp4", compute_dtype="bf16")
    values = 32 * (4096 * 4096 * 2 + 1024 * 4096 * 2 + 14336 * 4096 * 3)  # 6 979 321 856
    assert bd.packed_bytes == values // 2 == 3_489_660_928
    assert bd.metadata_bytes == values // 16 + 7 * 32 * 8 == 436_209_408
    assert bd.kept_bytes == (2 * 128256 * 4096 + 65 * 4096) * 2 == 2_101_878_784
    # an ignore list without lm_head: compressed-tensors targets every Linear, lm_head too
    cfg = json.loads((folder / "config.json").read_text())
    cfg["quantization_config"]["ignore"] = []
    (folder / "config.json").write_text(json.dumps(cfg))
    packed_head = weight_breakdown(resolve_model(model_id=None, revision=None, path=folder),
                                   "nvfp4", compute_dtype="bf16")
    assert packed_head.packed_bytes == (values + 128256 * 4096) // 2


def test_deepseek_r1_keeps_attention_in_bf16_as_its_exclude_list_says(tmp_path):
    f = resolve_model(model_id=None, revision=None,
                      path=_folder(tmp_path, "deepseek-ai/DeepSeek-V3", R1_FP4))
    bd = weight_breakdown(f, "nvfp4", compute_dtype="bf16")
    groups = {g.name: g.count for g in f.architecture.params}
    # self_attn* of all 61 layers stays bf16: MLA attention 11 413 422 080 parameters
    assert groups["attention"] == 11_413_422_080
    packed = groups["mlp"] + groups["experts"] + groups["shared_experts"]
    assert bd.packed_bytes == packed // 2
    kept = (groups["attention"] + groups["embed_tokens"] + groups["lm_head"] + groups["router"]
            + groups["norms"])
    assert bd.kept_bytes == kept * 2 and bd.notes == ()
    everything = weight_breakdown(  # the same model without the exclusions: attention packed
        resolve_model(model_id=None, revision=None, path=_folder(
            tmp_path / "x", "deepseek-ai/DeepSeek-V3", LLAMA_70B_FP4)), "nvfp4",
        compute_dtype="bf16")
    assert everything.packed_bytes - bd.packed_bytes == groups["attention"] // 2


# -- estimate, plan, fit on cards ------------------------------------------------------------

def test_estimate_on_b200_runs_nvfp4_and_on_h100_the_marlin_fallback(tmp_path):
    folder = _folder(tmp_path, "meta-llama/Meta-Llama-3.1-70B", LLAMA_70B_FP4)
    s = _sheet(folder)
    facts = resolve_model(model_id=None, revision=None, path=folder)
    b200 = estimate_memory(s, facts, card=require_card("B200"))
    h100 = estimate_memory(s, facts, card=require_card("H100 SXM"))
    assert b200.weights_format == h100.weights_format == "nvfp4"
    assert not any("NVFP4 needs" in n.text for n in b200.notes)
    assert any("Marlin" in n.text for n in h100.notes)
    # the same stored bytes on both cards: packed + kept (weights) and scales (metadata)
    assert b200.item("weights").bytes == h100.item("weights").bytes == 34_225_520_640 \
        + 4_205_330_432
    assert b200.item("quantization_metadata").bytes == 4_278_194_560
    with pytest.raises(SheetError, match="no NVFP4 kernel below CC 7.5"):
        estimate_memory(s, facts, card=require_card("V100 16GB (SXM2)"))


def test_fit_on_b200_and_h100(tmp_path):
    folder = _folder(tmp_path, "meta-llama/Meta-Llama-3.1-70B", LLAMA_70B_FP4)
    s = _sheet(folder)
    b200 = run_fit(s, require_card("B200"), base_dir=tmp_path)
    h100 = run_fit(s, require_card("H100 SXM"), base_dir=tmp_path)
    key = "largest concurrency at the required length"
    # 42.7 GB of weights: the 80 GB H100 holds fewer 5120-token sequences than the 180 GB B200
    assert b200.answers[key] > h100.answers[key] >= 1


def test_plan_on_a_b200_and_h100_catalog(tmp_path):
    from gpusizer.pipeline import run_plan
    folder = _folder(tmp_path, "meta-llama/Meta-Llama-3.1-70B", LLAMA_70B_FP4)
    catalog = tmp_path / "offers.yaml"
    catalog.write_text(
        "- {id: b200, provider: p, card: B200, cards: 1, days: 1, usd_per_hour: 6.0}\n"
        "- {id: h100, provider: p, card: H100-SXM, cards: 1, days: 1, usd_per_hour: 3.0}\n")
    plan = run_plan(_sheet(folder), catalogs=[catalog])
    by_id = {d.offer.id: d for d in plan.decisions}
    assert {d.estimate.weights_format for d in plan.decisions} == {"nvfp4"}
    assert any("Marlin" in n.text for n in by_id["h100"].estimate.notes)
    assert by_id["b200"].criteria["memory"].state != "exclude"


def test_transformers_refuses_nvfp4_by_name(tmp_path):
    folder = _folder(tmp_path, "meta-llama/Meta-Llama-3.1-70B", LLAMA_70B_FP4)
    s = _sheet(folder, inference={"prompt_tokens": 128, "new_tokens": 16})
    facts = resolve_model(model_id=None, revision=None, path=folder)
    with pytest.raises(SheetError, match="nvfp4 with engine transformers") as err:
        estimate_memory(s, facts)
    assert err.value.field == "weights"
    # a weights-only sheet names no engine: the stored bytes are sized
    only = parse_sheet({"model": {"path": str(folder)}, "task": "inference"})
    assert estimate_memory(only, facts).weights_bytes == 42_709_045_632


# -- simulate and measure refuse it ----------------------------------------------------------

def _sheet_file(tmp_path: Path, folder: Path, weights: str, engine: str) -> Path:
    sheet = tmp_path / "nvfp4.yaml"
    sheet.write_text(f"model: {{path: {folder}}}\ntask: inference\nweights: {weights}\n"
                     "quantization: {prequantized: true}\n"
                     f"inference: {{engine: {engine}, prompt_tokens: 64, new_tokens: 4}}\n")
    return sheet


def test_simulate_refuses_nvfp4_exit_2(tmp_path):
    pytest.importorskip("torch")
    folder = _folder(tmp_path, "meta-llama/Meta-Llama-3.1-70B", LLAMA_70B_FP4)
    proc = run_cli("simulate", str(_sheet_file(tmp_path, folder, "nvfp4", "vllm")), check=2)
    line = proc.stderr.strip().splitlines()[-1]
    assert "weights" in line and "nvfp4" in line and "not simulated" in line


def test_measure_refuses_nvfp4_exit_2(tmp_path):
    pytest.importorskip("torch")
    folder = _folder(tmp_path, "meta-llama/Meta-Llama-3.1-70B", LLAMA_70B_FP4)
    sheet = _sheet_file(tmp_path, folder, "nvfp4", "transformers")
    proc = run_cli("measure", str(sheet), "--random-weights", "--device", "cpu", "--out",
                   str(tmp_path / "out"), check=2)
    line = proc.stderr.strip().splitlines()[-1]
    assert "weights" in line and "nvfp4" in line
    auto = tmp_path / "auto.yaml"  # auto: the side file says the checkpoint is pre-quantized
    auto.write_text(f"model: {{path: {folder}}}\ntask: inference\n"
                    "inference: {prompt_tokens: 64, new_tokens: 4}\n")
    proc = run_cli("measure", str(auto), "--random-weights", "--device", "cpu", "--out",
                   str(tmp_path / "out2"), check=2)
    assert "hf_quant_config.json" in proc.stderr
