"""``gpusizer simulate``: the sheet's phases run on fake tensors, as a ``MemoryEstimate``.

Items are the tracker's categories at each phase's peak (provenance ``simulated``); what the
simulation cannot see is carried over from ``estimate`` with its own provenance (CUDA context,
cuBLAS workspace, NCCL buffers, allocator slack) and listed in ``not_seen``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..catalog.types import Card
from ..formats import FORMATS, weight_format
from ..memory.engines import ENGINES
from ..memory.estimate import (estimate_memory, non_torch_items, plan_weights,
                               sheet_quant_params)
from ..memory.items import INFERENCE_PHASES, TRAINING_PHASES, Item, ItemName, MemoryEstimate, Note
from ..model.config_only import ConfigOnlyFacts, config_only_for_sheet
from ..model.facts import ModelFacts
from ..sheet import Sheet
from .errors import SimulationError, UnsupportedBySimulation
from .losses import check_loss

__all__ = ["NOT_SEEN", "CATEGORY_ITEMS", "CARRIED_ITEMS", "SimulationResult", "simulate_memory",
           "check_supported", "NO_ARITHMETIC", "IMAGES_NOT_SIMULATED"]

NOT_SEEN = (
    "CUDA context (driver and kernel images, outside PyTorch's allocator)",
    "cuBLAS / cuBLASLt / cuDNN workspaces",
    "allocator fragmentation and caching: reserved vs allocated (max_memory_reserved), and blocks "
    "booked larger than the 512-byte rounding",
    "NCCL buffers and communicators",
    "kernels that allocate outside PyTorch (bitsandbytes paged memory, Triton / CUDA-graph pools)",
    "workspaces that fused kernels allocate inside their C++ implementation (e.g. the fp32 dQ "
    "accumulator and expanded dK/dV of FlashAttention's backward)",
)
"""What a fake-tensor run cannot see; listed on every output."""

NO_ARITHMETIC = ("no arithmetic for this architecture: gpusizer has no family module for "
                 "model_type {model_type!r}, so there is no estimate to compare with; the "
                 "non-PyTorch items (CUDA context, cuBLAS workspace, NCCL, allocator slack) are "
                 "estimate's own rules, applied without the family's facts")
"""The comparison's note for a model_type no family knows (``facts`` a ConfigOnlyFacts)."""

IMAGES_NOT_SIMULATED = ("vision-language model ({cls}): prefill runs the text tokens only; "
                        "images (the vision tower's activations, the image tokens a request adds) "
                        "are not simulated yet")
"""The note on an image-text-to-text model: its vision weights count, its images do not."""

CATEGORY_ITEMS: dict[str, ItemName] = {
    "parameters": "weights", "quantization_metadata": "quantization_metadata",
    "lora_adapters": "lora_adapters", "buffers": "buffers",
    "gradients": "gradients", "optimizer_states": "optimizer_states", "kv_cache": "kv_cache",
    "recurrent_state": "recurrent_state",
    "activations": "activations", "temporaries": "temporaries",
}
"""Tracker category → item name in the output."""

_ITEM_SOURCE: dict[ItemName, str] = {
    "weights": "parameters the transformers model class instantiates, in the running dtype",
    "quantization_metadata": "metadata of the quantized layers at their stored sizes: absmax "
                             "(bitsandbytes 4-bit, nested when double quantized), SCB (int8), "
                             "weight_scale_inv (fp8), qzeros / scales / g_idx (GPTQ, AWQ)",
    "lora_adapters": "LoRA A/B matrices PEFT adds (trainable)",
    "buffers": "registered buffers (rotary inv_freq …)",
    "gradients": ".grad of the trainable parameters",
    "optimizer_states": "tensors in optimizer.state after the first step",
    "kv_cache": "keys/values held by the transformers cache",
    "recurrent_state": "conv and SSM / linear-attention states held by the transformers cache "
                       "(LinearAttentionLayer conv_states, recurrent_states)",
    "activations": "tensors outliving the operator that made them (saved for backward, outputs, "
                   "logits) at the phase's peak",
    "temporaries": "tensors made and freed within the phase, live at its peak",
}

CARRIED_ITEMS: tuple[ItemName, ...] = ("cuda_context", "cublas_workspace", "nccl_buffers",
                                       "allocator_slack")
"""estimate items the simulation cannot see, carried over with their own provenance."""

_LOWER_BOUND_ITEMS: tuple[ItemName, ...] = ("weights", "lora_adapters", "kv_cache",
                                            "recurrent_state")
"""What the simulated lower bound sums (at the end of decode, or at the optimizer step)."""

LAID_OUT = ("nf4", "fp4", "int8", "fp8", "gptq-int4", "awq-int4")
"""Quantized formats the simulation lays out at their stored sizes: ``quantized.FORMATS``
(bitsandbytes 4-bit) and ``quantized_layouts.LAYOUT_FORMATS`` (a test checks they agree; kept
here so this module imports no torch). A new format's layout goes in one of those modules."""

SUPPORTED_WEIGHTS = tuple(n for n, r in FORMATS.items() if r.dense or n in LAID_OUT)
"""The registry's dense formats and those with a simulate layout, in the registry's order."""


def _packs_experts(fmt: str) -> bool:
    """The format packs routed experts under transformers (estimate counts them packed); the
    simulation replaces ``nn.Linear`` layers only, not transformers' stacked 3-D expert tensors."""
    rec = weight_format(fmt)
    roles = rec.packs("transformers", None)
    return roles is not None and "expert_linear" in roles


@dataclass
class SimulationResult:
    """The simulated memory, the estimate it is compared with, and how the run went.

    Attributes:
        sheet, facts, card: the inputs (``facts`` a ConfigOnlyFacts for a model_type no
            family knows).
        memory: the simulated ``MemoryEstimate`` (items ``simulated`` + carried items).
        estimate: ``estimate``'s ``MemoryEstimate`` for the same sheet and card; None when no
            family knows the architecture (no arithmetic: the comparison says so).
        comparison: see ``compare.compare_estimates``.
        attention: kernel choices (kernel, reason, calls).
        compute_capability: the (major, minor) the GPU rules used, and where it came from.
        config_source: where config.json was read.
        seconds: wall time of the simulation.
        tracked_peak_bytes: the largest phase peak of the simulated items alone.
        trainable_parameters: elements the optimizer updates.
        versions: torch / transformers / peft versions that ran the model code.
        notes: decisions and rules applied.
        parameters: elements of the model's own parameters as instantiated (LoRA adapters
            excluded; packed elements for a quantized base).
        model_class: the transformers class that ran (``LlamaForCausalLM``).
    """

    sheet: Sheet
    facts: ModelFacts | ConfigOnlyFacts | None
    card: Card | None
    memory: MemoryEstimate
    estimate: MemoryEstimate | None
    comparison: dict
    attention: list[dict]
    compute_capability: dict
    config_source: str
    seconds: float
    tracked_peak_bytes: int
    trainable_parameters: int
    versions: dict[str, str]
    notes: list[str] = field(default_factory=list)
    parameters: int = 0
    model_class: str = ""


def check_supported(sheet: Sheet, running_format: str,
                    facts: ModelFacts | ConfigOnlyFacts | None = None) -> None:
    """Refuse, naming the field, what this version does not simulate.

    Raises:
        UnsupportedBySimulation.
    """
    if running_format not in SUPPORTED_WEIGHTS:
        raise UnsupportedBySimulation(
            f"simulate runs {', '.join(SUPPORTED_WEIGHTS)} weights; {running_format} layouts "
            f"({weight_format(running_format).layout}) are not simulated by this version: use "
            "gpusizer estimate", field="weights", value=sheet.weights)
    arch = facts.architecture if facts is not None else None
    if _packs_experts(running_format) and arch is not None \
            and arch.parameters_by_role("expert_linear") > 0:
        raise UnsupportedBySimulation(
            f"{running_format} packs the routed experts, which transformers keeps as stacked 3-D "
            "tensors the simulation does not lay out; expected a model without routed experts "
            "(use gpusizer estimate)", field="weights", value=sheet.weights)
    engine = ENGINES[sheet.inference.engine] if sheet.inference is not None else None
    if engine is not None and not engine.simulate_supported:
        raise UnsupportedBySimulation(engine.simulate_refusal, field="inference.engine",
                                      value=engine.name)
    if sheet.inference is not None and sheet.inference.kv_cache_dtype not in ("auto",):
        raise UnsupportedBySimulation("the KV cache is simulated in the compute dtype only "
                                      "(expected auto)", field="inference.kv_cache_dtype",
                                      value=sheet.inference.kv_cache_dtype)
    if sheet.placement.gpus != 1:
        raise UnsupportedBySimulation("simulate runs one GPU's model; expected placement.gpus 1",
                                      field="placement.gpus", value=sheet.placement.gpus)
    check_loss(sheet)
    if sheet.task == "inference" and sheet.inference is None:
        raise SimulationError("nothing to run: an inference sheet needs its inference block "
                              "(prompt_tokens, new_tokens)", field="inference", value=None)


def _versions() -> dict[str, str]:
    import peft
    import torch
    import transformers
    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "peft": peft.__version__}


def simulate_memory(sheet: Sheet, facts: ModelFacts | ConfigOnlyFacts | None, *,
                    card: Card | None = None, base_dir: Path | None = None,
                    rules=None) -> SimulationResult:
    """Run the sheet's phases on fake tensors and return items, phases and the comparison.

    Args:
        sheet: the validated sheet.
        facts: the model's facts (for ``estimate``'s side and the weight plan); a
            ``ConfigOnlyFacts`` for a model_type no family knows (the weight plan from its
            stored format; no estimate to compare with: the comparison says so, and the
            non-PyTorch items come from ``memory.estimate.non_torch_items``).
        card: the card whose GPU rules apply (compute capability); None → sm80 assumed, said so.
        base_dir: the sheet's folder (relative ``model.path``).
        rules: ``phases.RuleSwitches`` (all GPU rules on by default).

    Raises:
        SimulationError, UnsupportedBySimulation, ModelError, HubError.
    """
    from .build import load_config_dict
    from .gpu_rules import DEFAULT_COMPUTE_CAPABILITY
    from .phases import RuleSwitches, run_phases

    if sheet.weights != "auto":
        check_supported(sheet, sheet.weights, facts)  # refuse by name before any card rule
    if facts is None and sheet.model.parameters is None:
        # a model_type no family knows, called without the input stage: its storage facts
        cfg, where = load_config_dict(sheet, base_dir=base_dir)
        facts = config_only_for_sheet(sheet, cfg, where, base_dir)
    plan = plan_weights(sheet, facts, card)
    check_supported(sheet, plan.runs, facts)
    cfg, where = load_config_dict(sheet, base_dir=base_dir)
    cc_value = card.compute_capability.value if card is not None else None
    if cc_value:
        cc = tuple(cc_value)
        cc_info = {"value": list(cc), "source": f"card table: {card.name}"}
    else:
        cc = DEFAULT_COMPUTE_CAPABILITY
        cc_info = {"value": list(cc), "source": "no card given: an sm80 (Ampere or later) GPU is "
                                                "assumed for the kernel choice; give --card"}
    quant = None
    if not weight_format(plan.runs).dense:
        from .phases import Quantization
        qp = sheet_quant_params(sheet, facts, plan.runs)
        tr = sheet.training
        quant = Quantization(qp.double_quant, converted=plan.converted,
                             prepare_kbit=sheet.task == "qlora" and tr is not None
                             and tr.prepare_kbit_training is not False,
                             fmt=plan.runs, group_size=qp.group_size, block=qp.block)
    amp = sheet.training is not None and sheet.training.precision == "amp"
    model_dtype = "fp32" if amp and sheet.task == "full" else plan.compute_dtype
    run = run_phases(sheet, cfg, dtype=model_dtype, compute_capability=cc,
                     rules=rules or RuleSwitches(), quantization=quant,
                     autocast=plan.compute_dtype if amp else None)
    known = isinstance(facts, ModelFacts)
    est = estimate_memory(sheet, facts, card=card) if known or facts is None else None
    items: list[Item] = []
    names = [p.name for p in run.phases]
    for cat, item_name in CATEGORY_ITEMS.items():
        per_phase = {p.name: p.by_category.get(cat, 0) for p in run.phases}
        live = tuple(n for n in names if per_phase[n] > 0)
        if not live:
            continue
        items.append(Item(item_name, max(per_phase[n] for n in live), "simulated", live,
                          f"gpusizer simulate (fake tensors, {cat}): {_ITEM_SOURCE[item_name]}",
                          "; ".join(f"{n} {per_phase[n]} B" for n in live),
                          phase_bytes={n: per_phase[n] for n in live}))
    tracked = max((p.peak_bytes for p in run.phases), default=0)
    carried = []
    if est is None:
        phases = INFERENCE_PHASES if sheet.task == "inference" else TRAINING_PHASES
        sources = non_torch_items(sheet, plan, card, phases=phases,
                                  weight_tensor_sizes=run.weight_tensor_sizes)
    else:
        sources = est.items
    for it in sources:
        if it.name in CARRIED_ITEMS:
            ph = tuple(n for n in it.phases if n in names)
            carried.append(Item(it.name, it.bytes, it.provenance, ph,
                                it.source + " (carried from estimate: not visible to simulation)",
                                it.formula, it.unknown_reason, it.non_torch,
                                {k: v for k, v in it.phase_bytes.items() if k in names}))
    all_items = tuple(items + carried)
    weights_bytes = next((p.by_category.get("parameters", 0) + p.by_category.get(
        "lora_adapters", 0) for p in run.phases if p.name == "load"), 0)
    notes = [Note("simulation", n) for n in run.notes]
    if est is None:
        notes.insert(0, Note("no_arithmetic", NO_ARITHMETIC.format(model_type=facts.model_type)))
    if run.vision_language:
        notes.append(Note("not_simulated",
                          IMAGES_NOT_SIMULATED.format(cls=run.model_class)))
    if sheet.task != "inference":
        notes.append(Note("not_simulated", "export is not simulated (it reads weights, which a "
                          "fake run does not have)"))
    notes.append(Note("not_simulated", "not seen by the simulation: " + "; ".join(NOT_SEEN)))
    mem = MemoryEstimate(
        weights_bytes=weights_bytes, reserve_bytes=sheet.reserve, items=all_items,
        phase_names=tuple(names),
        # parameters, LoRA adapters and the KV cache; estimate's bound also counts metadata,
        # gradients and optimizer states
        lower_bound_items=tuple(it for it in items if it.name in _LOWER_BOUND_ITEMS),
        lower_bound_phase="decode" if sheet.task == "inference" else "optimizer_step",
        notes=tuple(notes),
        card=card.name if card else None, gpus=1, weights_format=plan.runs,
        stored_format=plan.stored)
    from .compare import compare_estimates, no_estimate
    comparison = (compare_estimates(mem, est) if est is not None
                  else no_estimate(NO_ARITHMETIC.format(model_type=facts.model_type)))
    return SimulationResult(sheet, facts, card, mem, est, comparison,
                            run.attention, cc_info, where, run.seconds, tracked,
                            run.trainable_parameters, _versions(), list(mem.note_texts),
                            run.parameters, run.model_class)
