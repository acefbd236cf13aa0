"""``gpusizer measure`` on quantized bases (issue 15 point 6): bitsandbytes nf4 / fp4 / int8 and
QLoRA, GPTQ / AWQ inference. This machine has neither CUDA nor bitsandbytes: the refusals are
tested as they are, and the code past them with the kernels' presence stubbed."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from gpusizer.cli import exit_code_for
from gpusizer.errors import MeasureExtraMissingError, MeasureUnsupportedError
from gpusizer.measure import quantized_bases as qb
from gpusizer.measure import run_measurement
from gpusizer.sheet import load_sheet

from .conftest import INFERENCE, LORA, write_sheet

NO_QUANT = SimpleNamespace(quantization_config=None)


def _sheet(tmp_path, body):
    return load_sheet(write_sheet(tmp_path, body))


@pytest.fixture
def bnb_absent(monkeypatch):
    monkeypatch.setattr(qb, "_installed", lambda module: False)


@pytest.fixture
def kernels_present(monkeypatch):
    monkeypatch.setattr(qb, "_installed", lambda module: True)


@pytest.mark.parametrize("body, line", [
    ({**INFERENCE, "weights": "nf4"}, "weights nf4 needs bitsandbytes, not installed on this "
                                      "machine: pip install bitsandbytes (with a CUDA torch)"),
    ({**LORA, "task": "qlora"}, "weights nf4 needs bitsandbytes"),
    ({**LORA, "training": {**LORA["training"], "optimizer": "paged-adamw-8bit"}},
     "optimizer paged-adamw-8bit needs bitsandbytes, not installed"),
])
def test_a_missing_library_is_one_line(tmp_path, bnb_absent, body, line):
    with pytest.raises(MeasureExtraMissingError, match=re.escape(line)) as exc:
        run_measurement(_sheet(tmp_path, body), tmp_path / "o", random_weights=True,
                        device="cpu")
    assert "\n" not in str(exc.value) and exit_code_for(exc.value) == 1


def test_with_the_library_the_cpu_and_random_weights_are_refused(tmp_path, kernels_present,
                                                                 monkeypatch):
    monkeypatch.setattr(qb, "_bnb_cpu_backend", lambda: False)   # a CUDA-only bitsandbytes
    sheet = _sheet(tmp_path, {**INFERENCE, "weights": "int8"})
    with pytest.raises(MeasureUnsupportedError,
                       match="weights int8 runs on bitsandbytes's CUDA kernels; this run is on "
                             "cpu") as exc:
        run_measurement(sheet, tmp_path / "o", random_weights=True, device="cpu")
    assert exit_code_for(exc.value) == 2
    base = qb.quantized_base(sheet, NO_QUANT)
    with pytest.raises(MeasureUnsupportedError, match="quantized from the real weights"):
        qb.require_kernels(base, "cuda", random_weights=True)
    qb.require_kernels(base, "cuda", random_weights=False)   # what a CUDA machine runs


def test_bitsandbytes_config_follows_the_sheet(tmp_path):
    sheet = _sheet(tmp_path, {**LORA, "task": "qlora",
                              "quantization": {"double_quant": True, "compute_dtype": "bf16"}})
    base = qb.quantized_base(sheet, NO_QUANT)
    assert (base.fmt, base.method, base.prequantized) == ("nf4", "bitsandbytes", False)
    assert qb.bnb_config_kwargs(base, sheet) == {
        "load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True,
        "bnb_4bit_compute_dtype": "bfloat16"}
    int8 = _sheet(tmp_path, {**INFERENCE, "weights": "int8"})
    assert qb.bnb_config_kwargs(qb.quantized_base(int8, NO_QUANT), int8) == {"load_in_8bit": True}
    assert qb.quantized_base(_sheet(tmp_path, INFERENCE), NO_QUANT) is None


def test_prequantized_gptq_and_awq(tmp_path, bnb_absent):
    sheet = _sheet(tmp_path, INFERENCE)
    gptq = SimpleNamespace(quantization_config={"quant_method": "gptq", "bits": 4})
    base = qb.quantized_base(sheet, gptq)
    assert (base.fmt, base.prequantized) == ("gptq-int4", True)
    with pytest.raises(MeasureExtraMissingError,
                       match=re.escape("weights gptq-int4 needs gptqmodel or auto-gptq + "
                                       "optimum, not installed")):
        qb.require_kernels(base, "cuda", random_weights=False)
    awq = qb.quantized_base(sheet, SimpleNamespace(quantization_config={"quant_method": "awq"}))
    with pytest.raises(MeasureExtraMissingError, match="needs autoawq"):
        qb.require_kernels(awq, "cuda", random_weights=False)
    with pytest.raises(MeasureUnsupportedError, match="GPTQ / AWQ inference only"):
        qb.quantized_base(_sheet(tmp_path, LORA), gptq)
    with pytest.raises(MeasureUnsupportedError, match="a fp8 checkpoint"):
        qb.quantized_base(sheet, SimpleNamespace(quantization_config={"quant_method": "fp8"}))


def test_qlora_training_path_runs_on_the_cpu_with_a_16_bit_stand_in(tmp_path):
    """The QLoRA branch of prepare_training (PEFT's prepare_model_for_kbit_training, then LoRA)
    on the tiny model in bf16 (bitsandbytes itself is absent here): adapters trainable, the
    base frozen."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from gpusizer.measure.runner_training import prepare_training

    from .conftest import TINY
    sheet = _sheet(tmp_path, {**LORA, "task": "qlora"})
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(TINY))
    model = prepare_training(model, sheet)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)


@pytest.fixture
def tiny_checkpoint(tmp_path):
    """The tiny model saved as a real safetensors checkpoint (random values, bf16), widened so
    every linear's output is a multiple of 64 (bitsandbytes' CPU gemm_4bit asserts "N must be
    divisible by block_n": the tiny config's 2 KV heads × 8 = 16 are not)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from .conftest import TINY
    config = AutoConfig.from_pretrained(TINY)
    config.update({"hidden_size": 128, "intermediate_size": 256, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "head_dim": 32})
    folder = tmp_path / "tiny-real"
    AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).save_pretrained(folder)
    return folder


@pytest.mark.parametrize("body", [
    {**INFERENCE, "weights": "nf4"},
    {**LORA, "task": "qlora", "training": {**LORA["training"], "export": "adapter"}},
])
def test_bitsandbytes_cpu_backend_runs_the_ladder(tmp_path, tiny_checkpoint, body):
    """Where bitsandbytes' CPU backend is installed (>= BNB_CPU_BACKEND), the nf4 inference and
    QLoRA ladders run for real on the CPU: the layers are bitsandbytes' Linear4bit."""
    pytest.importorskip("bitsandbytes")
    if not qb._bnb_cpu_backend():
        pytest.skip("bitsandbytes older than BNB_CPU_BACKEND: CUDA only")
    import yaml
    sheet_file = tmp_path / "s.yaml"
    sheet_file.write_text(yaml.safe_dump({"model": {"path": str(tiny_checkpoint)}, **body}))
    result = run_measurement(load_sheet(sheet_file), tmp_path / "o", random_weights=False,
                             device="cpu")
    ev = result.evidence
    assert ev["stopped_at"] is None, ev["stopped_at"]
    assert ev["model"]["dtype"] == "nf4" and ev["model"]["weights"] == "real"
    assert ev["scope"]["environment"]["bitsandbytes"]


def test_measure_trains_the_sheets_peft_method_not_lora(tmp_path):
    """training.peft: ia3 → measure's model carries PEFT's IA3 vectors (the method the sheet
    states, built from the registry estimate counts with), never LoRA matrices; the count
    equals the estimate's."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from gpusizer.measure.runner_training import prepare_training
    from gpusizer.memory.estimate import estimate_memory
    from gpusizer.pipeline import resolve_facts

    from .conftest import TINY
    body = {"task": "lora", "training": {"sequence_length": 16, "microbatch": 1,
                                         "peft": "ia3"}}
    sheet = _sheet(tmp_path, {"model": {"path": str(TINY)}, "weights": "bf16", **body})
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(TINY))
    model = prepare_training(model, sheet)
    trained = {n: p for n, p in model.named_parameters() if p.requires_grad}
    assert trained and all("ia3_l" in n for n in trained)
    est = estimate_memory(sheet, resolve_facts(sheet))
    assert sum(p.numel() for p in trained.values()) == est.training.trainable_parameters
