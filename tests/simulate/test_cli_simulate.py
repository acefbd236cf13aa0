"""``gpusizer simulate`` as a user runs it: JSON and Markdown, errors, the extra, and the core
never importing torch."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO_ROOT, run_cli

from .conftest import real_config, tiny_config

SHEET = """model: {{path: {path}}}
task: inference
weights: bf16
inference: {{prompt_tokens: 48, new_tokens: 16, concurrency: 2}}
"""


def _sheet(tmp_path, write_model, shared_dir):
    folder = write_model(tiny_config(real_config(shared_dir, "Qwen--Qwen3-0.6B")))
    sheet = tmp_path / "sheet.yaml"
    sheet.write_text(SHEET.format(path=folder))
    return sheet


def test_json_document(tmp_path, write_model, shared_dir):
    sheet = _sheet(tmp_path, write_model, shared_dir)
    doc = json.loads(run_cli("simulate", str(sheet), "--card", "H100 SXM", "--format",
                             "json").stdout)
    mem, sim = doc["memory"], doc["simulation"]
    assert doc["card"] == "H100 SXM"
    names = {it["name"]: it for it in mem["items"]}
    assert names["weights"]["provenance"] == "simulated"
    assert names["kv_cache"]["provenance"] == "simulated"
    assert names["cuda_context"]["provenance"] == "declared"   # carried: not visible
    assert [p["name"] for p in mem["phases"]] == ["load", "prefill", "decode"]
    assert sim["compute_capability"]["value"] == [9, 0]
    assert sim["attention"][0]["kernel"] == "flash"
    assert any("CUDA context" in s for s in sim["not_seen"])
    diff = {p["phase"]: p for p in sim["difference_to_estimate"]["phases"]}
    load = diff["load"]
    assert load["difference_bytes"] == load["simulated_peak_bytes"] - load["estimate_peak_bytes"]
    assert sim["versions"]["torch"].startswith("2.")


def test_markdown_lists_what_simulation_cannot_see(tmp_path, write_model, shared_dir):
    sheet = _sheet(tmp_path, write_model, shared_dir)
    out = run_cli("simulate", str(sheet)).stdout
    assert out.startswith("# gpusizer memory simulation")
    assert "## What the simulation cannot see" in out
    assert "no card given: an sm80" in out


def test_bare_count_exits_2_naming_the_field(tmp_path):
    sheet = tmp_path / "s.yaml"
    sheet.write_text("model: {parameters: 7000000000}\ntask: inference\nweights: bf16\n"
                     "inference: {prompt_tokens: 8, new_tokens: 8}\n")
    proc = run_cli("simulate", str(sheet), check=2)
    assert "model.parameters" in proc.stderr


_BLOCK_TORCH = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('torch', 'transformers', 'peft'):
            raise ImportError('blocked for the test')
        return None
sys.meta_path.insert(0, Block())
import importlib.util
real = importlib.util.find_spec
importlib.util.find_spec = (lambda n, *a: None if n in ('torch', 'transformers', 'peft')
                            else real(n, *a))
from gpusizer.cli import main
sys.argv = ['gpusizer'] + sys.argv[1:]
main()
"""


def test_missing_extra_says_what_to_install(tmp_path):
    sheet = tmp_path / "s.yaml"
    sheet.write_text(SHEET.format(path=tmp_path))
    proc = subprocess.run([sys.executable, "-c", _BLOCK_TORCH, "simulate", str(sheet)],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=60)
    assert proc.returncode == 1
    assert 'pip install "gpusizer[simulate]" (from a checkout: pip install -c constraints.txt ' \
        '-e ".[simulate]")' in proc.stderr


def test_core_never_imports_torch(tmp_path):
    sheet = tmp_path / "s.yaml"
    sheet.write_text("model: {id: meta-llama/Meta-Llama-3.1-8B}\ntask: inference\n"
                     "weights: bf16\ninference: {prompt_tokens: 512, new_tokens: 64}\n")
    code = ("import sys; from gpusizer.sheet import load_sheet; "
            "from gpusizer.pipeline import run_estimate, run_plan; "
            f"s = load_sheet({str(sheet)!r}); run_estimate(s); run_plan(s); "
            "import gpusizer.cli, gpusizer.simulate; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'transformers', 'peft')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_plan_simulate_quotes_both_and_stays_to_confirm(tmp_path, write_model, shared_dir):
    sheet = _sheet(tmp_path, write_model, shared_dir)
    doc = json.loads(run_cli("plan", str(sheet), "--simulate", "--format", "json").stdout)
    per_card = doc["simulations"]["per_card"]
    assert set(per_card) == {"RTX 4090", "RTX 6000 Ada"}   # the seed's two offers
    for offer in doc["offers"]:
        mem = offer["criteria"]["memory"]
        assert mem["state"] == "to_confirm"
        sim = per_card[offer["canonical_card"]]["device_peak_bytes"]
        assert "simulated device peak" in mem["reason"] and "vs estimated" in mem["reason"]
        assert f"{sim:,}".replace(",", " ") in mem["reason"]


def test_quantized_bases_simulate_and_mxfp4_refuses(tmp_path, write_model, shared_dir):
    folder = write_model(tiny_config(real_config(shared_dir, "Qwen--Qwen3-0.6B")))
    sheet = tmp_path / "gptq.yaml"
    sheet.write_text(f"model: {{path: {folder}}}\ntask: inference\nweights: gptq-int4\n"
                     "quantization: {prequantized: true, group_size: 32}\n"
                     "inference: {prompt_tokens: 16, new_tokens: 2}\n")
    doc = json.loads(run_cli("simulate", str(sheet), "--format", "json").stdout)
    names = {it["name"]: it for it in doc["memory"]["items"]}
    assert names["quantization_metadata"]["provenance"] == "simulated"
    assert any(n.startswith("gptq-int4: 14 linear layers") for n in doc["memory"]["notes"])
    sheet.write_text(f"model: {{path: {folder}}}\ntask: inference\nweights: mxfp4\n"
                     "inference: {prompt_tokens: 16, new_tokens: 2}\n")
    proc = run_cli("simulate", str(sheet), check=2)
    assert "weights" in proc.stderr and "mxfp4" in proc.stderr
