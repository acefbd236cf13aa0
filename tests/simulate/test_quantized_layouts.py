"""int8, fp8, GPTQ and AWQ bases: stored tensors at their exact sizes, against estimate's
arithmetic (memory/weights.py), and the int8 matmul transient of working_memory.py."""

from __future__ import annotations

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from gpusizer.memory.estimate import estimate_memory
from gpusizer.model.config import facts_from_config
from gpusizer.sheet import parse_sheet
from gpusizer.simulate.engine import simulate_memory
from gpusizer.simulate.errors import UnsupportedBySimulation
from gpusizer.simulate.quantized_layouts import PackedLinear, stored_tensors
from gpusizer.simulate.tracker import LiveTracker, allocator_bytes

from .conftest import real_config

FP8_CONFIG = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
              "weight_block_size": [128, 128]}
"""A FineGrainedFP8 checkpoint's quantization_config (DeepSeek-V3's)."""

# Llama 3.1 8B, per decoder layer: (out, in) of q, k, v, o, gate, up, down
LAYER = [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (14336, 4096), (14336, 4096),
         (4096, 14336)]


def _metadata_by_hand(fmt: str) -> int:
    """Two layers' metadata bytes, from the layouts' formulas (groups of 128, blocks 128²)."""
    per_layer = 0
    for o, i in LAYER:
        g = i // 128
        if fmt in ("gptq-int4", "awq-int4"):
            per_layer += 2 * g * o + 4 * g * (o // 8) + (4 * i if fmt == "gptq-int4" else 0)
        elif fmt == "int8":
            per_layer += 4 * o
        else:
            per_layer += 4 * (-(-o // 128)) * (-(-i // 128))
    return 2 * per_layer


def test_stored_tensors():
    # down_proj of Llama 3.1 8B: in 14336, out 4096; 112 groups of 128 inputs
    assert stored_tensors("gptq-int4", 14336, 4096) == {
        "qweight": ((1792, 4096), "int32"), "qzeros": ((112, 512), "int32"),
        "scales": ((112, 4096), "float16"), "g_idx": ((14336,), "int32")}
    assert stored_tensors("awq-int4", 14336, 4096) == {
        "qweight": ((14336, 512), "int32"), "qzeros": ((112, 512), "int32"),
        "scales": ((112, 4096), "float16")}
    assert stored_tensors("awq-int4", 14336, 4096, group_size=-1)["scales"] == ((1, 4096),
                                                                                 "float16")
    assert stored_tensors("int8", 14336, 4096) == {"weight": ((4096, 14336), "int8"),
                                                   "SCB": ((4096,), "float32")}
    assert stored_tensors("fp8", 14336, 4096) == {
        "weight": ((4096, 14336), "float8_e4m3fn"), "weight_scale_inv": ((32, 112), "float32")}
    with pytest.raises(ValueError, match="mxfp4"):
        stored_tensors("mxfp4", 64, 64)


@pytest.fixture
def eight_b(shared_dir):
    cfg = real_config(shared_dir, "meta-llama--Meta-Llama-3.1-8B")
    cfg["num_hidden_layers"] = 2
    return cfg


def _sheet_and_facts(cfg, write_model, fmt, task):
    cfg = dict(cfg)
    quantization = {}
    if fmt in ("gptq-int4", "awq-int4"):
        quantization = {"prequantized": True, "group_size": 128}
    elif fmt == "fp8":
        cfg["quantization_config"] = FP8_CONFIG
    folder = write_model(cfg)
    body = {"model": {"path": str(folder)}, "task": task, "weights": fmt,
            "quantization": quantization}
    if task == "inference":
        body["inference"] = {"prompt_tokens": 256, "new_tokens": 4}
    else:
        body["training"] = {"sequence_length": 256, "microbatch": 1}
    facts = facts_from_config(cfg, model_id="x", revision="main", source="path",
                              source_detail="x", file="config.json")
    return parse_sheet(body), facts


@pytest.mark.parametrize("fmt", ["gptq-int4", "awq-int4", "int8", "fp8"])
def test_inference_matches_estimate_arithmetic(eight_b, write_model, fmt):
    sheet, facts = _sheet_and_facts(eight_b, write_model, fmt, "inference")
    r = simulate_memory(sheet, facts)
    est = estimate_memory(sheet, facts)
    # every stored tensor of these shapes is a multiple of 512 B: no allocator rounding, so the
    # simulated load phase is the estimate's arithmetic to the byte
    for item in ("weights", "quantization_metadata"):
        assert r.memory.item(item).phase_bytes["load"] == est.item(item).bytes
    assert r.memory.item("quantization_metadata").bytes == _metadata_by_hand(fmt)
    values = 2 * sum(o * i for o, i in LAYER)
    packed = values // 2 if fmt.endswith("int4") else values
    kept = facts.architecture.total_parameters - values
    assert r.memory.item("weights").bytes == packed + kept * 2
    prefill = next(p for p in r.memory.phases if p.name == "prefill")
    assert prefill.peak_bytes > r.memory.item("weights").bytes
    if fmt != "int8":  # a checkpoint that stores the format: no 16-bit matrix loaded first
        assert "load" not in r.memory.item("temporaries").phase_bytes


@pytest.mark.parametrize("fmt", ["gptq-int4", "awq-int4", "int8", "fp8"])
def test_lora_step_runs_on_quantized_base(eight_b, write_model, fmt):
    sheet, facts = _sheet_and_facts(eight_b, write_model, fmt, "lora")
    r = simulate_memory(sheet, facts)
    est = estimate_memory(sheet, facts)
    # PEFT's llama default: q_proj (A 16×4096, B 4096×16) and v_proj (A 16×4096, B 1024×16),
    # in the compute dtype (bf16), wrapped around the quantized base layers
    assert r.trainable_parameters == 2 * (16 * 4096 * 2 + 16 * 4096 + 1024 * 16)
    assert r.memory.item("lora_adapters").bytes == r.trainable_parameters * 2 \
        == est.item("lora_adapters").bytes
    assert r.memory.item("gradients").phase_bytes["optimizer_step"] == r.trainable_parameters * 2
    assert r.memory.item("quantization_metadata").bytes == _metadata_by_hand(fmt)
    assert {"forward", "backward", "optimizer_step"} <= {p.name for p in r.memory.phases}


def test_int8_converted_from_bf16_loads_one_matrix_at_a_time(eight_b, write_model):
    sheet, facts = _sheet_and_facts(eight_b, write_model, "int8", "inference")
    r = simulate_memory(sheet, facts)
    # bitsandbytes Int8Params quantizes on .cuda(): the largest bf16 matrix (14336 × 4096) first
    assert r.memory.item("temporaries").phase_bytes["load"] == 14336 * 4096 * 2


def test_fp8_converted_uses_finegrained_blocks(eight_b, write_model):
    # a bf16 checkpoint quantized while loading: FineGrainedFP8Config's 128×128 default blocks
    folder = write_model(eight_b)
    sheet = parse_sheet({"model": {"path": str(folder)}, "task": "inference", "weights": "fp8",
                         "inference": {"prompt_tokens": 64, "new_tokens": 2}})
    facts = facts_from_config(eight_b, model_id="x", revision="main", source="path",
                              source_detail="x", file="config.json")
    r = simulate_memory(sheet, facts)
    assert r.memory.item("quantization_metadata").bytes == _metadata_by_hand("fp8")
    assert r.memory.item("temporaries").phase_bytes["load"] == 14336 * 4096 * 2
    # estimate reads the same default (gpusizer.formats.FP8_DEFAULT_BLOCK): the two agree
    assert estimate_memory(sheet, facts).item("quantization_metadata").bytes == \
        _metadata_by_hand("fp8")


def test_int8_matmul_transient_is_estimates_formula():
    # working_memory._linear_transient: int8 [T, in] + fp32 [T] + int32 [T, out] + fp16 [T, out]
    t, i, o = 256, 4096, 14336
    tracker = LiveTracker(block_bytes=1)
    with FakeTensorMode(), tracker, torch.no_grad():
        layer = PackedLinear("int8", i, o, bias=None, compute_dtype=torch.bfloat16, loaded=False)
        x = torch.empty((1, t, i), dtype=torch.bfloat16)
        with tracker.phase("matmul"):
            y = layer(x)
        assert y.shape == (1, t, o) and y.dtype == torch.bfloat16
    (peak,) = tracker.peaks
    assert peak.by_category["temporaries"] == t * i + 4 * t + (4 + 2) * t * o


@pytest.mark.parametrize("fmt", ["gptq-int4", "awq-int4", "fp8"])
def test_fused_kernels_keep_no_transient(fmt):
    # tile-wise kernels: the output, and in backward the input gradient, nothing freed within
    tracker = LiveTracker(block_bytes=1)
    with FakeTensorMode(), tracker:
        layer = PackedLinear(fmt, 4096, 1024, bias=None, compute_dtype=torch.float16,
                             loaded=False)
        x = torch.empty((8, 4096), dtype=torch.float16, requires_grad=True)
        with tracker.phase("forward"):
            y = layer(x)
        grad_out = torch.empty_like(y)
        with tracker.phase("backward"):
            (g,) = torch.autograd.grad(y, x, grad_out)
        assert y.shape == (8, 1024) and g.shape == x.shape and g.dtype == torch.float16
    fwd, bwd = tracker.peaks
    assert fwd.by_category.get("temporaries", 0) == 0
    assert fwd.peak_bytes - tracker.peaks[0].end_bytes == 0
    assert bwd.by_category.get("temporaries", 0) == 0
    assert bwd.end_bytes - fwd.end_bytes == 8 * 1024 * 2 + 8 * 4096 * 2  # grad_out + input grad


@pytest.mark.parametrize("fmt", ["gptq-int4", "fp8"])
def test_expert_packing_formats_refuse_moe(shared_dir, write_model, fmt):
    cfg = real_config(shared_dir, "Qwen--Qwen3-30B-A3B")
    folder = write_model(cfg)
    q = {"prequantized": True} if fmt == "gptq-int4" else {}
    sheet = parse_sheet({"model": {"path": str(folder)}, "task": "inference", "weights": fmt,
                         "quantization": q, "inference": {"prompt_tokens": 8, "new_tokens": 1}})
    facts = facts_from_config(cfg, model_id="x", revision="main", source="path",
                              source_detail="x", file="config.json")
    with pytest.raises(UnsupportedBySimulation, match="routed experts") as e:
        simulate_memory(sheet, facts)
    assert e.value.field == "weights"


def test_int8_checkpoint_from_its_own_config(shared_dir, write_model):
    # a real LLM.int8 checkpoint (load_in_8bit): weights auto runs int8 as stored, no conversion
    cfg = real_config(shared_dir, "jeevanchaps--Meta-Llama3.1-8B-Instruct-assessment")
    cfg["num_hidden_layers"] = 2
    folder = write_model(cfg)
    sheet = parse_sheet({"model": {"path": str(folder)}, "task": "inference", "weights": "auto",
                         "inference": {"prompt_tokens": 128, "new_tokens": 2}})
    facts = facts_from_config(cfg, model_id="x", revision="main", source="path",
                              source_detail="x", file="config.json")
    r = simulate_memory(sheet, facts)
    est = estimate_memory(sheet, facts)
    assert r.memory.weights_format == "int8" and r.memory.stored_format == "int8"
    for item in ("weights", "quantization_metadata"):
        assert r.memory.item(item).bytes == est.item(item).bytes
    assert r.memory.item("quantization_metadata").bytes == _metadata_by_hand("int8")
    assert "load" not in r.memory.item("temporaries").phase_bytes


@pytest.mark.parametrize("group_size", [32, -1])
def test_gptq_group_size_follows_sheet_or_checkpoint(eight_b, write_model, group_size):
    # 32 from the sheet; -1 (one group per output row) only a checkpoint's config can say
    cfg = dict(eight_b)
    if group_size < 0:
        cfg["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": -1,
                                      "desc_act": False, "sym": True}
        body = {"weights": "auto"}
    else:
        body = {"weights": "gptq-int4",
                "quantization": {"prequantized": True, "group_size": group_size}}
    folder = write_model(cfg)
    sheet = parse_sheet({"model": {"path": str(folder)}, "task": "inference", **body,
                         "inference": {"prompt_tokens": 64, "new_tokens": 2}})
    facts = facts_from_config(cfg, model_id="x", revision="main", source="path",
                              source_detail="x", file="config.json")
    r = simulate_memory(sheet, facts)
    est = estimate_memory(sheet, facts)
    meta = r.memory.item("quantization_metadata").bytes
    assert meta == est.item("quantization_metadata").bytes
    groups = [1 if group_size < 0 else i // group_size for _, i in LAYER]
    assert meta == 2 * sum(2 * g * o + 4 * g * (o // 8) + 4 * i
                           for g, (o, i) in zip(groups, LAYER, strict=True))


def test_int8_backward_dequantizes_the_whole_weight():
    # MatMul8bitLt.backward: CB.to(dtype_A).mul_(SCB / 127), then grad_output @ CB
    tracker = LiveTracker(block_bytes=1)
    with FakeTensorMode(), tracker:
        layer = PackedLinear("int8", 4096, 1024, bias=None, compute_dtype=torch.bfloat16,
                             loaded=False)
        x = torch.empty((8, 4096), dtype=torch.bfloat16, requires_grad=True)
        y = layer(x)
        grad_out = torch.empty_like(y)
        with tracker.phase("backward"):
            (g,) = torch.autograd.grad(y, x, grad_out)
        assert g.shape == x.shape
    (bwd,) = tracker.peaks
    assert bwd.by_category["temporaries"] == 1024 * 4096 * 2


def _two_layers(shared_dir, write_model, folder, quantization_config=None):
    cfg = real_config(shared_dir, folder)
    cfg["num_hidden_layers"] = 2
    cfg.pop("quantization_config", None)
    if quantization_config:
        cfg["quantization_config"] = quantization_config
    facts = facts_from_config(cfg, model_id="x", revision="main", source="path",
                              source_detail="x", file="config.json")
    return write_model(cfg), facts


@pytest.mark.parametrize("folder", ["Qwen--Qwen2.5-1.5B", "mistralai--Mistral-7B-v0.3",
                                    "google--gemma-2-9b", "microsoft--phi-4"])
@pytest.mark.parametrize("fmt", ["gptq-int4", "awq-int4", "int8"])
def test_families_match_estimate_to_the_byte(shared_dir, write_model, folder, fmt):
    # biases (Qwen2), fused qkv / gate_up (Phi-4), tied embeddings (Gemma 2), GQA (Mistral)
    path, facts = _two_layers(shared_dir, write_model, folder)
    q = {"prequantized": True} if fmt != "int8" else {}
    sheet = parse_sheet({"model": {"path": str(path)}, "task": "inference", "weights": fmt,
                         "quantization": q, "inference": {"prompt_tokens": 32, "new_tokens": 2}})
    r = simulate_memory(sheet, facts)
    est = estimate_memory(sheet, facts)
    for item in ("weights", "quantization_metadata"):
        assert r.memory.item(item).bytes == est.item(item).bytes


def test_fp8_small_scale_tensors_round_as_the_allocator(shared_dir, write_model):
    # Qwen2.5-1.5B: k/v 256 × 1536 → weight_scale_inv [2, 12] fp32 = 96 B, booked 512 B by the
    # CUDA caching allocator; estimate counts the stored bytes
    path, facts = _two_layers(shared_dir, write_model, "Qwen--Qwen2.5-1.5B", FP8_CONFIG)
    sheet = parse_sheet({"model": {"path": str(path)}, "task": "inference", "weights": "auto",
                         "inference": {"prompt_tokens": 32, "new_tokens": 2}})
    r = simulate_memory(sheet, facts)
    est = estimate_memory(sheet, facts)
    h, inter = 1536, 8960
    shapes = [(h, h), (256, h), (256, h), (h, h), (inter, h), (inter, h), (h, inter)]
    stored = [4 * (-(-o // 128)) * (-(-i // 128)) for o, i in shapes]
    assert est.item("quantization_metadata").bytes == 2 * sum(stored)
    assert r.memory.item("quantization_metadata").bytes == 2 * sum(
        allocator_bytes(b) for b in stored)
    assert r.memory.item("weights").bytes == est.item("weights").bytes


def test_int8_keeps_stacked_experts_and_router_in_16_bit(shared_dir, write_model):
    # Mixtral: bitsandbytes replaces nn.Linear only; transformers v5's stacked experts and the
    # router (block_sparse_moe.gate) stay bf16, as estimate's engine rule (bnb_quantized_roles) counts them
    path, facts = _two_layers(shared_dir, write_model, "mistralai--Mixtral-8x22B-v0.1")
    sheet = parse_sheet({"model": {"path": str(path)}, "task": "inference", "weights": "int8",
                         "inference": {"prompt_tokens": 32, "new_tokens": 2}})
    r = simulate_memory(sheet, facts)
    est = estimate_memory(sheet, facts)
    for item in ("weights", "quantization_metadata"):
        assert r.memory.item(item).bytes == est.item(item).bytes
    # SCB per output row of q (6144), k, v (1024 each), o (6144), two layers
    assert r.memory.item("quantization_metadata").bytes == 2 * 4 * (6144 + 1024 + 1024 + 6144)
