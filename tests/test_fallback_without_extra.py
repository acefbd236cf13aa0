"""``estimate`` / ``plan`` on a model_type no family counts, without the simulate extra: one
line naming ``pip install "gpusizer[simulate]"``, exit 1 (the sheet is valid: installing the
extra makes the same input work; cli.EXIT_CODES keeps 2 for input the user must fix)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import gpusizer.simulate as simulate_pkg
from gpusizer.cli import app
from gpusizer.model.families import FAMILIES

OLMO2 = {"model_type": "olmo2", "torch_dtype": "bfloat16", "num_hidden_layers": 2,
         "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
         "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 4096}


@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_missing_extra_is_one_line_exit_1(tmp_path, monkeypatch, command):
    folder = tmp_path / "olmo2"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(OLMO2))
    sheet = tmp_path / "s.yaml"
    sheet.write_text(f"model: {{path: {folder}}}\ntask: inference\nweights: auto\n"
                     "inference: {prompt_tokens: 64, new_tokens: 16}\n")
    monkeypatch.setattr(simulate_pkg, "find_spec", lambda name: None)  # no torch, no peft …
    monkeypatch.delitem(FAMILIES, "olmo2", raising=False)  # stands for a type with no family
    res = CliRunner().invoke(app, [command, str(sheet)])
    assert res.exit_code == 1, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1
    assert "no arithmetic for model_type 'olmo2'" in lines[0]
    assert lines[0].endswith('pip install "gpusizer[simulate]" (from a checkout: '
                             'pip install -c constraints.txt -e ".[simulate]")')
