"""bitsandbytes 4-bit bases: stored tensors at their exact sizes, against estimate's arithmetic."""

from __future__ import annotations

import pytest

from gpusizer.memory.estimate import estimate_memory
from gpusizer.model.config import facts_from_config
from gpusizer.sheet import parse_sheet
from gpusizer.simulate.engine import simulate_memory
from gpusizer.simulate.quantized import packed_sizes

from .conftest import real_config


def test_packed_sizes():
    # 4096 × 4096 values: 8 388 608 B packed; 262 144 absmax (fp32, or uint8 + 1024 fp32)
    n = 4096 * 4096
    assert packed_sizes(n, False) == {"weight": (n // 2, "uint8"), "absmax": (n // 64, "float32")}
    assert packed_sizes(n, True) == {"weight": (n // 2, "uint8"), "absmax": (n // 64, "uint8"),
                                     "nested_absmax": (n // 64 // 256, "float32")}


@pytest.fixture
def eight_b_two_layers(shared_dir, write_model):
    cfg = real_config(shared_dir, "meta-llama--Meta-Llama-3.1-8B")
    cfg["num_hidden_layers"] = 2
    return cfg, write_model(cfg)


@pytest.mark.parametrize("double_quant", [False, True])
def test_nf4_inference_matches_estimate_arithmetic(eight_b_two_layers, double_quant):
    cfg, folder = eight_b_two_layers
    sheet = parse_sheet({"model": {"path": str(folder)}, "task": "inference", "weights": "nf4",
                         "quantization": {"double_quant": double_quant},
                         "inference": {"prompt_tokens": 256, "new_tokens": 32}})
    facts = facts_from_config(cfg, model_id="x", revision="main", source="path",
                              source_detail="x", file="config.json")
    r = simulate_memory(sheet, facts)
    est = estimate_memory(sheet, facts)
    # every 4-bit tensor of these shapes is a multiple of 512 B, so the allocator rounding adds
    # nothing: the stored sizes are the estimate's arithmetic exactly
    assert r.memory.item("weights").bytes == est.item("weights").bytes
    assert r.memory.item("quantization_metadata").bytes == est.item("quantization_metadata").bytes
    # per layer: q 4096², k/v 1024×4096, o 4096², gate/up/down 14336×4096 → 218 103 808 values
    layer = 2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 14336 * 4096
    blocks = 2 * layer // 64
    meta = blocks + blocks // 256 * 4 if double_quant else blocks * 4
    assert r.memory.item("quantization_metadata").bytes == meta
    # converted while loading from the bf16 checkpoint: the largest matrix (14336 × 4096) in bf16
    load = next(p for p in r.memory.phases if p.name == "load")
    assert r.memory.item("temporaries").phase_bytes["load"] == 14336 * 4096 * 2
    assert load.peak_bytes is not None


def test_qlora_runs_through_peft(eight_b_two_layers):
    cfg, folder = eight_b_two_layers
    sheet = parse_sheet({"model": {"path": str(folder)}, "task": "qlora", "weights": "nf4",
                         "training": {"sequence_length": 256, "microbatch": 1,
                                      "prepare_kbit_training": False}})
    facts = facts_from_config(cfg, model_id="x", revision="main", source="path",
                              source_detail="x", file="config.json")
    r = simulate_memory(sheet, facts)
    # PEFT's llama default: q_proj (A 16×4096, B 4096×16) and v_proj (A 16×4096, B 1024×16)
    assert r.trainable_parameters == 2 * (16 * 4096 * 2 + 16 * 4096 + 1024 * 16)
    assert r.memory.item("lora_adapters").bytes == r.trainable_parameters * 2
    assert r.memory.item("gradients").phase_bytes["optimizer_step"] == r.trainable_parameters * 2
