"""Bad input gets exit 2 and a one-line message naming the field, the value and the expectation;
nothing set by the user is silently ignored (found by a fresh-user trial)."""

from __future__ import annotations

import json
import shutil

import pytest

from .conftest import REPO_ROOT, SHARED, run_cli

OK = ("model: {id: meta-llama/Meta-Llama-3.1-8B}\ntask: inference\nweights: bf16\n"
      "inference: {prompt_tokens: 1024, new_tokens: 256}\n")


def _sheet(tmp_path, text, name="s.yaml"):
    p = tmp_path / name
    p.write_text(text) if isinstance(text, str) else p.write_bytes(text)
    return str(p)


@pytest.mark.parametrize("text,fragment", [
    (OK + "budget: {deadline: 2026-13-45}\n", "budget.deadline: expected a date"),
    (OK + "weights: fp16\n", "key 'weights' is given twice"),
    (b"\xff\xfe\x00garbage\x81", "not UTF-8 text"),
    ("", "the sheet is empty"),
    ("- a\n- b\n", "expected a mapping"),
    ("model: [\n", "invalid YAML at line"),
    (OK.replace("inference: {", "inference: {gpu_memory_utilization: 0.5, "),
     "inference.gpu_memory_utilization: applies to engine vllm only"),
    (OK + "quantization: {double_quant: true}\n", "quantization.double_quant"),
    (OK + "measure: {typical: {microbatch: 2}}\n", "measure.typical.microbatch"),
    (OK + "measure: {typical: {prompt_tokens: 99999}}\n", "must not exceed the limit 1024"),
    (OK + "margin: '5'\n", "expected a percentage"),
    (OK.replace("meta-llama/Meta-Llama-3.1-70B", "x").replace(
        "meta-llama/Meta-Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-70B")
     + "placement: {gpus: 3, strategy: tensor-parallel}\n", "cannot split 64 attention heads"),
    (OK.replace("meta-llama/Meta-Llama-3.1-8B", "nobody/not-a-model"), "not in the bundled"),
])
def test_invalid_sheets_exit_2_with_one_line(tmp_path, text, fragment):
    p = run_cli("estimate", _sheet(tmp_path, text), check=2)
    assert fragment in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_output_path_errors_exit_2(tmp_path):
    s = _sheet(tmp_path, OK)
    p = run_cli("plan", s, "-o", str(tmp_path), check=2)
    assert "-o/--out" in p.stderr and "Traceback" not in p.stderr
    run_cli("plan", s, "-o", str(tmp_path / "no" / "such" / "x.md"), check=2)


def test_format_follows_the_output_extension(tmp_path):
    s = _sheet(tmp_path, OK)
    run_cli("plan", s, "-o", str(tmp_path / "out.html"))
    assert (tmp_path / "out.html").read_text().startswith("<!DOCTYPE html>")
    run_cli("plan", s, "-o", str(tmp_path / "out.json"))
    assert json.loads((tmp_path / "out.json").read_text())["sheet_sha256"]


def _model_folder(tmp_path, name):
    """A folder holding the real Qwen3-0.6B config.json (skips without ../shared)."""
    cfg = SHARED / "data" / "models" / "Qwen--Qwen3-0.6B" / "config.json"
    if not cfg.is_file():
        pytest.skip(f"{cfg} absent (../shared not beside the checkout)")
    (tmp_path / name).mkdir()
    shutil.copy(cfg, tmp_path / name / "config.json")
    return tmp_path / name


def test_relative_model_path_is_read_from_the_sheets_folder(tmp_path):
    _model_folder(tmp_path, "qwen")
    s = _sheet(tmp_path, "model: {path: qwen}\ntask: inference\n"
                         "inference: {prompt_tokens: 100, new_tokens: 10}\n")
    p = run_cli("estimate", s, "--format", "json")  # cwd is the repository, not tmp_path
    assert json.loads(p.stdout)["model"]["parameters"] == 596_049_920


def _evidence(tmp_path, doc):
    d = tmp_path / "ev"
    d.mkdir(exist_ok=True)
    (d / "e.json").write_text(json.dumps(doc) if isinstance(doc, dict) else doc)
    return str(d)


@pytest.mark.parametrize("doc,fragment", [
    ({"kind": "measurement", "document": "d", "version": "1",
      "rungs": [{"name": "limit", "result": "passed",
                 "phases": [{"name": "decode", "max_memory_reserved_bytes": -100}]}]},
     "greater than or equal to 0"),
    ("{not json", "cannot read JSON"),
    ({"kind": "rumour", "document": "d", "version": "1"}, "kind"),
])
def test_malformed_evidence_exits_2(tmp_path, doc, fragment):
    p = run_cli("plan", _sheet(tmp_path, OK), "--evidence", _evidence(tmp_path, doc), check=2)
    assert fragment in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("name,text,fragment", [
    ("c.csv", "id,provider,card,cards,days,total_usd\na,p,L4,1,3\n", "5 cells for 6 columns"),
    ("c.yaml", "[]\n", "gave no offer"),
])
def test_bad_catalogs_exit_2(tmp_path, name, text, fragment):
    cat = tmp_path / name
    cat.write_text(text)
    p = run_cli("plan", _sheet(tmp_path, OK), "--catalog", str(cat), check=2)
    assert fragment in p.stderr


def test_lora_default_targets_are_counted(tmp_path):
    s = _sheet(tmp_path, "model: {id: meta-llama/Meta-Llama-3.1-8B}\ntask: lora\nweights: bf16\n"
                         "training: {sequence_length: 2048, microbatch: 2}\n")
    doc = json.loads(run_cli("estimate", s, "--format", "json").stdout)
    # PEFT's default for llama: q_proj (4096 → 4096) and v_proj (4096 → 1024), rank 16, 32 layers
    assert doc["model"]["trainable_parameters"] == 32 * 16 * ((4096 + 4096) + (4096 + 1024))
    assert doc["memory"]["peak_bytes"] is not None


@pytest.mark.parametrize("text,fragment", [
    ("training: {sequence_length: 2048, microbatch: 2, lora: {targets: [qq_proj]}}",
     "training.lora.targets"),
    ("training: {sequence_length: 2048, microbatch: 2, prepare_kbit_training: true}",
     "training.prepare_kbit_training"),
])
def test_bad_training_keys_name_the_field(tmp_path, text, fragment):
    s = _sheet(tmp_path, "model: {id: meta-llama/Meta-Llama-3.1-8B}\ntask: lora\nweights: bf16\n"
                         + text + "\n")
    p = run_cli("estimate", s, check=2)
    assert fragment in p.stderr


def test_repo_root_fixture():
    assert (REPO_ROOT / "pyproject.toml").is_file()


@pytest.mark.parametrize("text,fragment", [
    (OK.replace("meta-llama/Meta-Llama-3.1-8B}", "meta-llama/Meta-Llama-3.1-8B, revision: ''}"),
     "model.revision: expected a non-empty string"),
])
def test_more_invalid_sheets(tmp_path, text, fragment):
    p = run_cli("estimate", _sheet(tmp_path, text), check=2)
    assert fragment in p.stderr


def test_output_never_overwrites_an_input(tmp_path):
    s = _sheet(tmp_path, OK)
    before = (tmp_path / "s.yaml").read_text()
    p = run_cli("plan", s, "-o", s, check=2)
    assert "is an input" in p.stderr and (tmp_path / "s.yaml").read_text() == before
    p = run_cli("plan", s, "-o", str(tmp_path / "x.yaml"), check=2)
    assert "cannot tell the format" in p.stderr


def test_inconsistent_safetensors_header_is_an_error(tmp_path):
    import struct
    _model_folder(tmp_path, "m")
    header = json.dumps({"w": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 8]}}).encode()
    (tmp_path / "m" / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header
                                                       + b"\0" * 8)
    s = _sheet(tmp_path, "model: {path: m}\ntask: inference\n"
                         "inference: {prompt_tokens: 10, new_tokens: 10}\n")
    p = run_cli("estimate", s, check=2)
    assert "needs 32 B" in p.stderr


LORA = ("model: {id: meta-llama/Meta-Llama-3.1-8B}\ntask: lora\nweights: bf16\n"
        "training: {sequence_length: 1024, microbatch: 2, ")


@pytest.mark.parametrize("text,fragment", [
    (LORA + "lora: {targets: []}}\n", "expected at least one module name"),
    (LORA + "lora: {targets: q_proj}}\n", "expected 'default', 'all-linear' or a list"),
    (LORA + "gradient_checkpointing: 'yes'}\n", "training.gradient_checkpointing"),
    (LORA.replace("microbatch: 2", "microbatch: 10000000000") + "}\n",
     "training.microbatch: expected an integer <= 2147483647"),
    (OK + "budget: {max_usd: .inf}\n", "budget.max_usd"),
    (OK.replace("inference: {", "inference: {engine: vllm, ")
     + "placement: {gpus: 2, strategy: device-map}\n", "placement.strategy"),
    (OK + "placement: {gpus: 100, strategy: device-map}\n",
     "placement.gpus: device-map places whole decoder layers"),
    (OK + "reserve: 1.1 GiB\n", "write it in a smaller unit or in bytes"),
])
def test_bad_values_are_refused_with_the_field(tmp_path, text, fragment):
    p = run_cli("estimate", _sheet(tmp_path, text), check=2)
    assert fragment in p.stderr and "Traceback" not in p.stderr


def test_huge_reserve_is_exact_not_float_rounded(tmp_path):
    doc = json.loads(run_cli("estimate", _sheet(tmp_path, OK + "reserve: 99999999999999999999 TiB\n"),
                             "--format", "json").stdout)
    assert doc["memory"]["reserve_bytes"] == 99999999999999999999 * 2**40


def test_measure_on_cuda_without_cuda_is_an_input_error(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    tiny = REPO_ROOT / "tests" / "measure" / "data" / "tiny-llama-3.1"
    sheet = _sheet(tmp_path, f"model: {{path: {tiny}}}\ntask: inference\nweights: bf16\n"
                             "inference: {prompt_tokens: 16, new_tokens: 4}\n")
    p = run_cli("measure", sheet, "--random-weights", "--out", str(tmp_path / "o"),
                "--device", "cuda", check=2)
    assert "--device" in p.stderr and "Traceback" not in p.stderr


def test_errors_found_after_reading_name_the_sheet_file(tmp_path):
    """A sheet problem found against the model (here the context window) carries the file
    name, as the reading errors do."""
    s = _sheet(tmp_path, LORA.replace("sequence_length: 1024", "sequence_length: 200000") + "}\n")
    p = run_cli("estimate", s, check=2)
    assert p.stderr.startswith(f"error: {s}: training.sequence_length: 200000 tokens exceeds")


def test_unknown_catalog_card_gets_close_matches(tmp_path):
    from gpusizer.catalog.cards import resolve_card
    match = resolve_card("RTX 409")
    assert match.card is None and "close matches: RTX 4090" in match.reason
