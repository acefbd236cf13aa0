"""Security holds and is tested (issue 11, point 4; reliability findings, "Security probes"):
remote model code is never run, nothing is unpickled, YAML tags and SkyPilot cells never execute.
Each probe plants code that would write a marker file; no command may create it."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest

from .conftest import SHARED, run_cli

QWEN = SHARED / "data" / "models" / "Qwen--Qwen3-0.6B" / "config.json"


class _Planted:
    """Unpickling this writes the marker (``__reduce__`` → ``pathlib.Path.touch``)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def _armed_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A model folder whose config asks for remote code and which holds pickles, both planted."""
    if not QWEN.is_file():
        pytest.skip(f"{QWEN} absent (../shared not beside the checkout)")
    marker = tmp_path / "MARKER"
    folder = tmp_path / "m"
    folder.mkdir()
    config = json.loads(QWEN.read_text())
    config["auto_map"] = {"AutoConfig": "configuration_evil.EvilConfig",
                          "AutoModelForCausalLM": "modeling_evil.EvilModel"}
    (folder / "config.json").write_text(json.dumps(config))
    code = f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n"
    for name in ("configuration_evil.py", "modeling_evil.py", "evil.py"):
        (folder / name).write_text(code)
    for name in ("pytorch_model.bin", "training_args.bin", "optimizer.pt", "model.pt"):
        (folder / name).write_bytes(pickle.dumps(_Planted(marker)))
    return folder, marker


@pytest.mark.parametrize("trust", ["false", "true"])
def test_remote_code_and_pickles_are_never_run(tmp_path: Path, trust: str) -> None:
    folder, marker = _armed_folder(tmp_path)
    sheet = tmp_path / "s.yaml"
    sheet.write_text(f"model: {{path: {folder}, trust_remote_code: {trust}}}\ntask: inference\n"
                     "weights: bf16\ninference: {prompt_tokens: 64, new_tokens: 8}\n")
    for command in ("estimate", "plan", "alternatives"):
        run_cli(command, str(sheet), "--format", "json")
        assert not marker.exists(), command
    # measure refuses a folder without safetensors: the pickles are never loaded
    proc = run_cli("measure", str(sheet), "--out", str(tmp_path / "o"), "--device", "cpu",
                   check=None)
    assert proc.returncode in (1, 2) and not marker.exists()


@pytest.mark.parametrize("where", ["sheet", "catalog"])
def test_yaml_python_tags_never_execute(tmp_path: Path, where: str) -> None:
    marker = tmp_path / "MARKER"
    tag = f"!!python/object/apply:os.system ['touch {marker}']"
    sheet = tmp_path / "s.yaml"
    cat = tmp_path / "c.yaml"
    if where == "sheet":
        sheet.write_text(f"model: {{parameters: 7000000000}}\ntask: inference\nweights: {tag}\n")
        proc = run_cli("plan", str(sheet), check=2)
    else:
        sheet.write_text("model: {parameters: 7000000000}\ntask: inference\nweights: fp16\n")
        cat.write_text(f"- {{id: {tag}, provider: p, card: RTX 4090, cards: 1, total_usd: 1}}\n")
        proc = run_cli("plan", str(sheet), "--catalog", str(cat), check=2)
    assert "could not determine a constructor" in proc.stderr and not marker.exists()


def test_skypilot_cells_are_never_evaluated(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    sheet = tmp_path / "s.yaml"
    sheet.write_text("model: {parameters: 7000000000}\ntask: inference\nweights: fp16\n")
    cat = tmp_path / "x_vms.csv"
    cell = f"\"__import__('os').system('touch {marker}')\""
    cat.write_text("InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,"
                   f"GpuInfo,SpotPrice\ngpu_1x_h100,H100-SXM,1,26,200,2.49,us-east-1,{cell},\n")
    run_cli("plan", str(sheet), "--catalog", str(cat), "--format", "json", check=None)
    assert not marker.exists()


def test_simulate_never_runs_remote_code(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    folder, marker = _armed_folder(tmp_path)
    shutil.rmtree(tmp_path / "o", ignore_errors=True)
    sheet = tmp_path / "s.yaml"
    sheet.write_text(f"model: {{path: {folder}, trust_remote_code: true}}\ntask: inference\n"
                     "weights: bf16\ninference: {prompt_tokens: 16, new_tokens: 2}\n")
    run_cli("simulate", str(sheet), "--card", "RTX 4090", "--format", "json", check=None)
    assert not marker.exists()
