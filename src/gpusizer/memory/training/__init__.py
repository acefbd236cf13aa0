"""Training memory per GPU: LoRA, QLoRA and full fine-tuning, phase by phase (R8, R12).

Phases (``TRAINING_PHASES``): ``load``; ``forward`` and ``backward`` of a step after the first
(optimizer states exist from the first update on, so the steady step is the larger);
``optimizer_step`` (the first update allocates the states); ``validation`` (forward without
gradients at the validation microbatch); ``export`` (adapter, merged or full save).

:func:`training_items` assembles the items, one module per idea:

- :mod:`.dtypes`: the byte widths of the run, decided once (:class:`~.dtypes.TrainingDtypes`);
- :mod:`.placement`: single, ddp, zero2, fsdp — what each divides and adds per GPU;
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
from ..items import Item
from .backward import backward_items
from .casts import cast_items
from .dtypes import TrainingDtypes, training_dtypes
from .export import export_items
from .optimizer import optimizer_items
from .placement import placement_items, resharded_weights, sharding
from .trainable import adapter_items, method_items, trainable, trained_parts
from .validation import validation_item

__all__ = ["TrainingSummary", "training_items", "trained_parts", "TRAINING_STRATEGIES"]

@dataclass(frozen=True)
class TrainingSummary:
    """What a training estimate rests on (for the report and for comparisons between sheets).

    Attributes:
        trainable_parameters: parameters the optimizer updates (whole model).
        trainable_dtype: dtype of trained parameters, their gradients and optimizer states.
        lora_targets: resolved LoRA targets (empty for full fine-tuning).
        tokens_per_microbatch: microbatch × sequence_length.
        tokens_per_update: × gradient_accumulation × data-parallel GPUs (R12: keeps updates
            comparable when the microbatch changes).
        backward_peak_at: where in the backward sweep the total is largest.
        export_bytes: bytes the export writes (adapter, merged or full weights), or 0 for none.
        kernel: attention kernel assumed (flash / sdpa keep no s × s matrix; eager does).
    """

    trainable_parameters: int
    trainable_dtype: str
    lora_targets: tuple[str, ...]
    tokens_per_microbatch: int
    tokens_per_update: int
    backward_peak_at: str
    export_bytes: int
    kernel: str


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
    gradients_bytes = trained.parameters * dtypes.trainable_bytes // shards.states
    adapters, adapter_notes = adapter_items(training, trained, dtypes, shards, phases)
    added, added_notes = method_items(training, facts, trained, dtypes, shards, phases,
                                      quantized_base=not weight_format(runs).dense)
    optimizer, optimizer_notes = optimizer_items(training, trained, dtypes.trainable_bytes, shards)
    backward, peak = backward_items(training, facts, trained, dtypes, shards, runs=runs,
                                    kernel=kernel, gradients_bytes=gradients_bytes)
    export_bytes, export = export_items(training.export, facts, trained.adapters, dtypes, runs=runs)
    placed, placement_notes = placement_items(facts, runs=runs, full=trained.full, dtypes=dtypes,
                                              shards=shards, gradients_bytes=gradients_bytes)
    items = [*resharded_weights(weight_items, trained, dtypes, shards, phases), *adapters,
             *added,
             *cast_items(facts, trained.full, training.gradient_checkpointing, dtypes, shards,
                         phases), *optimizer, *backward,
             validation_item(training, facts, dtypes, runs=runs, kernel=kernel,
                             virtual_tokens=trained.virtual_tokens), *export, *placed]
    tokens = training.microbatch * training.sequence_length
    summary = TrainingSummary(trained.parameters, dtypes.trainable_dtype,
                              trained.adapters.targets if trained.adapters else (), tokens,
                              tokens * training.gradient_accumulation * shards.data_parallel,
                              peak.at, export_bytes, kernel)
    notes = [*adapter_notes, *added_notes, *optimizer_notes, *placement_notes,
             *_closing_notes(sheet, dtypes, summary)]
    return items, notes, summary


def _closing_notes(sheet: Sheet, dtypes: TrainingDtypes, summary: TrainingSummary) -> list[str]:
    notes = [f"gradient accumulation {sheet.training.gradient_accumulation}: "
             f"{summary.tokens_per_microbatch} tokens per microbatch, "
             f"{summary.tokens_per_update} tokens per update (R12)"]
    if sheet.task == "qlora" and not dtypes.prepare_kbit:
        notes.append("prepare_kbit_training false: the modules kept beside the 4-bit base "
                     "(norms, embeddings, lm_head) stay in the compute dtype")
    if summary.kernel == "eager":
        notes.append("eager attention keeps microbatch × heads × s² softmax matrices per layer")
    return notes
