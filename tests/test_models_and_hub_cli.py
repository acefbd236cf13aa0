"""``gpusizer models`` and the Hub as every command meets it: an unreachable Hub exits 1 at once
with the offline hint, a malformed id exits 2 naming model.id (finding F18), offline registry ids
work for simulate too (issue 13 points 5 and 6)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpusizer.cli import app
from gpusizer.model.registry import registry_entries, registry_fingerprint

from .conftest import run_cli
from .model.test_resolve import _unreachable_hub

RUNNER = CliRunner()


def test_models_lists_every_entry_as_json() -> None:
    result = RUNNER.invoke(app, ["models", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["registry"] == registry_fingerprint()
    rows = {r["id"]: r for r in doc["models"]}
    assert len(rows) == len(registry_entries())
    llama = rows["meta-llama/Meta-Llama-3.1-8B"]
    assert (llama["revision"], llama["architecture"], llama["parameters"],
            llama["stored_bytes"]) == ("main", "LlamaForCausalLM", 8_030_261_248, 16_060_522_496)
    assert llama["aliases"] == ["meta-llama/Llama-3.1-8B"]
    assert rows["deepseek-ai/DeepSeek-R1"]["commit"] == "56d4cbbb4d29f4355bab4b9a39ccb717a14ad5ad"
    assert all(r["source"].startswith(f"https://huggingface.co/{i}/") for i, r in rows.items())


def test_models_markdown_table() -> None:
    result = RUNNER.invoke(app, ["models"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"# Bundled registry: {len(registry_entries())} models (resolved offline)"
    row = next(line for line in lines if line.startswith("| Qwen/Qwen3-8B |"))
    assert "| main | qwen3 | 8 190 735 360 |" in row  # truth.json Qwen/Qwen3-8B


def _sheet(tmp_path: Path, model_id: str) -> Path:
    sheet = tmp_path / "sheet.yaml"
    sheet.write_text(f"model: {{id: {json.dumps(model_id)}}}\ntask: inference\nweights: bf16\n"
                     "inference: {prompt_tokens: 100, new_tokens: 10}\n")
    return sheet


COMMANDS = (["estimate"], ["plan"], ["simulate"], ["fit", "--card", "H100 SXM"],
            ["alternatives"])


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_unreachable_hub_exits_1_at_once_for_every_command(
        command: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = _unreachable_hub(monkeypatch, tmp_path)
    started = time.monotonic()
    result = RUNNER.invoke(app, [*command, str(_sheet(tmp_path, "someone/not-in-the-registry"))])
    assert result.exit_code == 1, result.output
    assert time.monotonic() - started < 10
    assert "cannot be reached (one attempt" in result.output
    assert "HF_HUB_OFFLINE=1" in result.output and "model.path" in result.output
    assert sum(url.endswith("/config.json") for _, url in calls) == 1


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
@pytest.mark.parametrize("bad", ["a//b", "../x", "a b c"])
def test_malformed_id_exits_2_naming_model_id(command: list[str], bad: str,
                                              monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    calls = _unreachable_hub(monkeypatch, tmp_path)  # online: F18 was the online case
    result = RUNNER.invoke(app, [*command, str(_sheet(tmp_path, bad))])
    assert result.exit_code == 2, result.output
    assert "is not a Hugging Face Hub id" in result.output and calls == []
    assert result.output.startswith("error: ") and "model.id: " in result.output


def test_simulate_runs_the_readme_example_offline() -> None:
    """examples/llama-3.1-8b-serving.yaml names a registry id: simulate reads the entry's whole
    config.json, no Hub. KV cache at prefill: 32 layers x 2 x 8 KV heads x 128 x 2 B = 131 072 B
    per token, x 7168 prompt tokens x 8 sequences = 7 516 192 768 B."""
    pytest.importorskip("torch")
    example = Path(__file__).resolve().parents[1] / "examples" / "llama-3.1-8b-serving.yaml"
    result = RUNNER.invoke(app, ["simulate", str(example), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["simulation"]["config_source"].startswith(
        "bundled registry gpusizer/data/registry/meta-llama--Meta-Llama-3.1-8B.json")
    kv = next(d for d in doc["simulation"]["difference_to_estimate"]["items"]
              if d["item"] == "kv_cache" and d["phase"] == "prefill")
    assert kv["simulated_bytes"] == 32 * 2 * 8 * 128 * 2 * 7168 * 8 == 7_516_192_768


def test_the_card_listing_cuts_with_an_ellipsis_and_explains_cc():
    out = run_cli("cards").stdout
    h100 = next(line for line in out.splitlines() if line.startswith("| H100 SXM |"))
    assert "| NVLink4, 900 GB/s nomin… |" in h100   # 23 characters + "…" = 24
    assert "CC: CUDA compute capability" in out


def test_the_model_listing_shows_model_type_in_one_kind():
    out = run_cli("models").stdout
    assert "| id | revision | model_type | parameters | source |" in out
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[2] for line in out.splitlines()
            if line.startswith("| ") and "/" in line.split(" | ")[0]}
    assert rows["deepseek-ai/DeepSeek-V3"] == "deepseek_v3"
    assert rows["google/gemma-2-9b"] == "gemma2"
    assert not any(v.endswith("ForCausalLM") for v in rows.values())
