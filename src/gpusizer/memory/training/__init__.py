"""Training memory per GPU: LoRA, QLoRA and full fine-tuning, phase by phase (R8, R12).

Phases (``TRAINING_PHASES``): ``load``; ``forward`` and ``backward`` of a step after the first
(optimizer states exist from the first update on, so the steady step is the larger);
``optimizer_step`` (the first update allocates the states); ``validation`` (forward without
gradients at the validation microbatch); ``export`` (adapter, merged or full save).

:func:`training_items` assembles the items, one module per idea:

- :mod:`.dtypes`: the byte widths of the run, decided once (:class:`~.dtypes.TrainingDtypes`);
- :mod:`.sharding`: single, ddp, zero1/2/3, fsdp (full, grad-op, hybrid) — what each divides
  (ZeRO paper §5), over how many GPUs and nodes, and what it offloads;
- :mod:`.placement`: the weights under that sharding and the buffers each framework keeps;
- :mod:`.master`: the fp32 master copy and fp32 step gradients of precision master;
- :mod:`.deepspeed_reference`: DeepSpeed's own model-state estimators, beside our figure;
- :mod:`.trainable`: what trains (adapters or every parameter) and the adapters' item;
- :mod:`.casts`: QLoRA's fp32 upcast and autocast's weight copies;
- :mod:`.optimizer`: optimizer states and the step's temporaries;
- :mod:`.backward` and :mod:`.sweep`: activations, logits, gradients and backward transients
  at the instant of backward where their total peaks (a phase peak is what is live at once; a
  sum of each item's maximum would only be a conservative envelope);
- :mod:`.validation` and :mod:`.export`: the last two phases.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import SheetError
from ...formats import FORMATS, weight_format
from ...model.facts import ModelFacts
from ...sheet import TRAINING_STRATEGIES, Sheet
from ...sheet_presets import framework_notes
from ..items import Item
from .backward import backward_items
from .casts import cast_items
from .checkpointing import LayerPlan
from .deepspeed_reference import DeepSpeedReference, deepspeed_reference
from .dtypes import TrainingDtypes, training_dtypes
from .export import export_items
from .loss import loss_rule
from .master import master_items
from .optimizer import optimizer_items
from .placement import gradient_shares, placement_items, resharded_weights
from .sharding import Sharding, sharding
from .trainable import adapter_items, method_items, trainable, trained_parts
from .validation import validation_item

__all__ = ["TrainingSummary", "training_items", "trained_parts", "TRAINING_STRATEGIES",
           "DeepSpeedReference"]

@dataclass(frozen=True)
class TrainingSummary:
    """What a training estimate rests on (for the report and for comparisons between sheets).

    Attributes:
        trainable_parameters: parameters the optimizer updates (whole model); None when a bare
            parameter count cannot tell (LoRA adapters need the layer shapes).
        trainable_dtype: dtype of trained parameters, their gradients and optimizer states.
        lora_targets: resolved LoRA targets (empty for full fine-tuning).
        tokens_per_microbatch: microbatch × sequence_length.
        tokens_per_update: × gradient_accumulation × data-parallel GPUs (R12: keeps updates
            comparable when the microbatch changes).
        backward_peak_at: where in the backward sweep the total is largest.
        export_bytes: bytes the export writes (adapter, merged or full weights), 0 for none,
            None when a bare parameter count cannot tell.
        kernel: attention kernel assumed (flash / sdpa keep no s × s matrix; eager does).
        loss: the loss kernel sized (``memory/training/loss.py`` ``LOSS_RULES``).
        activation_offload_bytes: activations moved to host memory per GPU under
            ``checkpointing.offload`` (0 without); host RAM per node is this × GPUs per node.
        host_bytes_per_gpu: what each GPU's process keeps in host RAM (offloaded master copy,
            gradients, optimizer states, parameter shards), in bytes (0 without offload).
        host_formula: those terms, in words with their bytes.
        deepspeed_reference: DeepSpeed's own estimator for this placement (zero2 / zero3 full
            fine-tuning), or None.
        placement: the sharding the figures follow (strategy, group, nodes, offload).
    """

    trainable_parameters: int | None
    trainable_dtype: str
    lora_targets: tuple[str, ...]
    tokens_per_microbatch: int
    tokens_per_update: int
    backward_peak_at: str
    export_bytes: int | None
    kernel: str
    loss: str = "transformers ForCausalLMLoss"
    activation_offload_bytes: int = 0
    host_bytes_per_gpu: int = 0
    host_formula: str = ""
    deepspeed_reference: DeepSpeedReference | None = None
    placement: Sharding | None = None


def _check(sheet: Sheet, runs: str) -> None:
    """The weight format that runs (read from the checkpoint for ``weights: auto``, after the
    card's rules) against the task; the sheet refuses the rest."""
    if sheet.task == "full" and not weight_format(runs).dense:
        dense = [n for n, r in FORMATS.items() if r.dense]
        raise SheetError(f"full fine-tuning updates every weight: it needs "
                         f"{', '.join(dense[:-1])} or {dense[-1]} weights, not {runs} (use task "
                         "lora or qlora on a quantized base)", field="weights", value=runs)
    if sheet.task == "qlora" and sheet.weights == "auto" and not weight_format(runs).qlora_base:
        raise SheetError(f"qlora trains LoRA adapters on a 4-bit bitsandbytes base; the weights "
                         f"run as {runs}: expected weights "
                         f"{' or '.join(n for n, r in FORMATS.items() if r.qlora_base)}",
                         field="weights", value=runs)
    training = sheet.training
    if training.precision == "master" and weight_format(runs).dense \
            and (weight_format(runs).byte_width or 0) >= 4:
        raise SheetError(f"precision master keeps 16-bit parameters beside an fp32 master copy; "
                         f"the weights run as {runs}: use precision pure (or 16-bit weights)",
                         field="training.precision", value="master")
    if sheet.placement.offload != "none" and training.optimizer not in ("adamw", "sgd",
                                                                        "sgd-momentum"):
        raise SheetError(f"placement.offload steps the optimizer on the CPU (DeepSpeedCPUAdam, "
                         f"torch on CPU); {training.optimizer} keeps its states on the GPU: "
                         "expected adamw, sgd or sgd-momentum", field="training.optimizer",
                         value=training.optimizer)


def training_items(sheet: Sheet, facts: ModelFacts, *, runs: str, compute_dtype: str,
                   kernel: str, weight_items: list[Item],
                   phases: tuple[str, ...]) -> tuple[list[Item], list[str], TrainingSummary]:
    """Training items per GPU for a lora / qlora / full sheet, with notes and a summary.

    ``weight_items``: the base weight items (``weights``, ``quantization_metadata``, transients)
    of one whole copy of the model, returned re-sized for the placement. ``runs``: the weight
    format on the GPU; ``compute_dtype``: the matmul dtype; ``kernel``: the attention kernel
    that runs (``eager`` keeps s × s matrices); ``phases``: ``TRAINING_PHASES``.

    Raises:
        SheetError: a weight format this task cannot train; LoRA targets that match
            nothing.
    """
    training = sheet.training
    assert training is not None
    _check(sheet, runs)
    dtypes = training_dtypes(sheet, runs=runs, compute_dtype=compute_dtype)
    shards = sharding(sheet.placement)
    trained = trainable(sheet, facts)
    gradients_bytes, host_gradients = gradient_shares(trained.parameters, dtypes, shards)
    adapters, adapter_notes, host_adapters = adapter_items(training, trained, dtypes, shards,
                                                           phases)
    added, added_notes = method_items(training, facts, trained, dtypes, shards, phases,
                                      quantized_base=not weight_format(runs).dense)
    optimizer, optimizer_notes, host_states = optimizer_items(training, trained,
                                                              dtypes.state_bytes, shards)
    master, host_master = master_items(trained, dtypes, shards, phases)
    backward, peak, plan = backward_items(training, facts, trained, dtypes, shards, runs=runs,
                                          kernel=kernel, gradients_bytes=gradients_bytes,
                                          framework=sheet.stack.framework)
    export_bytes, export = export_items(training.export, facts, trained.adapters, dtypes, runs=runs)
    placed, placement_notes = placement_items(facts, runs=runs, full=trained.full, dtypes=dtypes,
                                              shards=shards, gradients_bytes=gradients_bytes)
    weights, host_params = resharded_weights(weight_items, trained, dtypes, shards, phases, facts)
    every_layer = plan.mode == "full" and training.checkpointing.every == 1
    items = [*weights, *adapters, *added,
             *cast_items(facts, trained.full, every_layer, dtypes, shards, phases),
             *optimizer, *backward,
             validation_item(training, facts, dtypes, runs=runs, kernel=kernel,
                             framework=sheet.stack.framework,
                             virtual_tokens=trained.virtual_tokens), *export, *placed, *master]
    tokens = training.microbatch * training.sequence_length
    host = [("parameter shards", host_params + host_adapters),
            ("gradient shards", host_gradients),
            ("fp32 master copy and gradients", host_master), ("optimizer states", host_states),
            ("offloaded activations", plan.offloaded_bytes)]
    summary = TrainingSummary(trained.parameters, dtypes.trainable_dtype,
                              trained.adapters.targets if trained.adapters else (), tokens,
                              tokens * training.gradient_accumulation * shards.data_parallel,
                              peak.at, export_bytes, kernel,
                              loss=loss_rule(training.loss, sheet.stack.framework),
                              activation_offload_bytes=plan.offloaded_bytes,
                              host_bytes_per_gpu=sum(b for _, b in host),
                              host_formula=" + ".join(f"{w} {b} B" for w, b in host if b),
                              deepspeed_reference=deepspeed_reference(
                                  sheet, facts.architecture.total_parameters,
                                  max((g.largest_matrix for g in facts.architecture.params),
                                      default=0), items, trained.full),
                              placement=shards)
    notes = [*adapter_notes, *added_notes, *optimizer_notes, *placement_notes, *_closing_notes(sheet, dtypes,
                                                                                summary),
             *_strategy_notes(sheet, summary, plan)]
    return items, notes, summary


def _closing_notes(sheet: Sheet, dtypes: TrainingDtypes, summary: TrainingSummary) -> list[str]:
    notes = [f"gradient accumulation {sheet.training.gradient_accumulation}: "
             f"{summary.tokens_per_microbatch} tokens per microbatch, "
             f"{summary.tokens_per_update} tokens per update (R12)"]
    if sheet.training.precision == "amp" and dtypes.master:
        notes.append(f"precision amp under {sheet.placement.strategy}: sized as the framework's "
                     "mixed precision (16-bit parameters and gradients, fp32 master copy and "
                     "states; DeepSpeed bf16/fp16, FSDP MixedPrecision), not torch.autocast over "
                     "fp32 parameters")
    if sheet.task == "qlora" and not dtypes.prepare_kbit:
        notes.append("prepare_kbit_training false: the modules kept beside the 4-bit base "
                     "(norms, embeddings, lm_head) stay in the compute dtype")
    if summary.kernel == "eager":
        notes.append("eager attention keeps microbatch × heads × s² softmax matrices per layer")
    return notes


def _strategy_notes(sheet: Sheet, summary: TrainingSummary, plan: LayerPlan) -> list[str]:
    """What the loss, packing and checkpointing choices change, in words."""
    t, notes = sheet.training, framework_notes(sheet)
    if t.loss != "standard":
        notes.append(f"loss {t.loss}: sized as {summary.loss} (memory/training/loss.py)")
    if t.packing:
        notes.append("packing: flash-attention varlen (cu_seqlens from the packed position_ids), "
                     "no mask and no padding" if summary.kernel == "flash" else
                     f"packing with {summary.kernel} attention: transformers builds a "
                     "B × 1 × s × s bool mask from the packed position_ids and repeat_kv "
                     "expands k and v (SDPA's flash kernel takes no mask); attention flash "
                     "keeps neither")
    if plan.offloaded_bytes:
        gpus = sheet.placement.gpus
        notes.append(f"activation offload: {plan.offloaded_bytes} B per GPU to pinned host "
                     f"memory, {plan.offloaded_bytes * gpus} B for the {gpus} GPU(s) of the "
                     "node (training.activation_offload_bytes; not yet in a host-RAM figure)")
    return notes
