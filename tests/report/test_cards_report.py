"""``gpusizer cards [SHEET]``: JSON keys and units, the Markdown view (answer first, lines
within 120 characters), the card table listing, and bad input (one line, exit 2)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpusizer import api
from gpusizer.catalog.cards import all_cards
from gpusizer.cli import app

from ..conftest import REPO_ROOT

SERVING = REPO_ROOT / "examples" / "llama-3.1-8b-serving.yaml"
DEEPSEEK = REPO_ROOT / "examples" / "deepseek-v3-8xh200-vllm.yaml"
COUNT_KEYS = {"gpus", "strategy", "estimated_fit", "headroom_bytes", "certain", "peak_bytes",
              "device_peak_bytes", "provenance", "reason", "refused", "sheet_count"}


def _run(*args: str):
    return CliRunner().invoke(app, ["cards", *args])


def test_json_keys_bytes_and_provenance():
    res = _run(str(SERVING), "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc == api.cards(SERVING).to_json()
    assert doc["schema_version"] == 2
    assert doc["strategy"] == {"name": "tensor-parallel", "default": True,
                               "source": "default for inference: the sheet names no "
                                         "multi-GPU strategy"}
    assert doc["gpu_counts"] == [1, 2, 4, 8] and doc["sheet_gpus"] == 1
    assert doc["provenance"]["figures"] == "estimated"
    assert len(doc["cards"]) == len(all_cards())
    rtx = next(c for c in doc["cards"] if c["card"] == "RTX 4090")
    assert rtx["device_bytes"] == 24564 * 2**20 and rtx["fewest_gpus"] == 2
    one = rtx["counts"][0]
    assert set(one) == COUNT_KEYS and one["sheet_count"] and one["strategy"] == "single"
    assert isinstance(one["headroom_bytes"], int) and one["headroom_bytes"] < 0
    assert doc["answer"]["gpus"] == 1 and doc["answer_text"].startswith(
        "fewest GPUs that fit: 1 × ")


def test_markdown_answers_first_then_the_table_within_120_characters():
    res = _run(str(SERVING))
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[2].startswith("**fewest GPUs that fit: 1 × ")
    assert max(len(line) for line in lines) <= 120
    assert "| card | memory GiB/GPU | 1 GPU* | 2 GPUs | 4 GPUs | 8 GPUs | fewest GPUs |" in lines
    assert "tensor-parallel (default for inference" in res.stdout
    rtx = next(line for line in lines if line.startswith("| RTX 4090 |"))
    assert rtx == "| RTX 4090 | 23.99 | no −5.70 | fits +7.16 | fits +12.77 | fits +15.53 | 2 |"
    ada = next(line for line in lines if line.startswith("| RTX 6000 Ada |"))
    assert "| fits +17.10 |" in ada


def test_the_sheets_own_count_is_marked_and_named_strategy_shown():
    res = _run(str(DEEPSEEK))
    assert res.exit_code == 0, res.output
    assert "| 8 GPUs* |" in res.stdout and "(the sheet's placement.strategy)" in res.stdout
    assert "**fewest GPUs that fit: 8 × H200 (tensor-parallel)" in res.stdout


def test_card_table_listing():
    res = _run("--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc == api.cards().to_json() and doc["schema_version"] == 2
    h100 = next(c for c in doc["cards"] if c["name"] == "H100 SXM")
    assert h100["compute_capability"] == "9.0" and h100["device_bytes"] % 2**20 == 0
    md = _run().stdout.splitlines()
    assert md[0] == f"# Card table (gpusizer/data/cards.yaml, {len(all_cards())} cards)"
    assert max(len(line) for line in md) <= 120
    assert any(line.startswith("| RTX 4090 | 23.99 | 25757220864 | 8.9 |") for line in md)


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {id: meta-llama/Meta-Llama-3.1-8B}\ntask: inference\nweights: bf16\n"
                   "inference: {prompt_tokens: -1, new_tokens: 1}\n")
    res = _run(str(bad))
    assert res.exit_code == 2
    assert len(res.output.strip().splitlines()) == 1 and "prompt_tokens" in res.output
    res = _run(str(tmp_path / "missing.yaml"))
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1
