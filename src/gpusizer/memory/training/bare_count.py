"""The seed's calculator for training: a bare ``model.parameters`` count, no architecture.

What a count alone fixes (R5, R8): with ``task: full`` every parameter trains, so the weights,
their gradients, the optimizer states and the fp32 master copy are Ψ × their bytes per value,
under the placement's sharding (:mod:`.sharding`), as for a model whose layers are known. What
it cannot fix is an ``unknown`` item with its reason, never a zero: LoRA adapters (their size is
r × (in + out) per adapted matrix, Hu et al. 2021 §4.1: it needs the layer shapes), the
activations, logits and backward working memory (layers, hidden size, heads, vocabulary),
validation and export transients, gathered layers. The peak of a phase holding one of them is
unknown, so the fit stays unknown and memory ``to_confirm`` (``memory.fit_rule``).
"""

from __future__ import annotations

from ...sheet import Sheet
from ..activations import TrainedParts
from ..items import Item
from ..optimizer_states import optimizer_memory
from .dtypes import TrainingDtypes, training_dtypes
from .master import master_items
from .optimizer import STEADY_PHASES, optimizer_items
from .placement import gradient_shares, reduce_bucket_item
from .sharding import Sharding, divided_text, sharding
from .trainable import Trainable

__all__ = ["bare_count_training_items", "SHAPELESS_OPTIMIZERS"]

SHAPELESS_OPTIMIZERS = frozenset({("adamw", "foreach"), ("sgd", "foreach"), ("sgd", "fused"),
                                  ("sgd", "for-loop"), ("sgd-momentum", "foreach"),
                                  ("sgd-momentum", "fused"), ("sgd-momentum", "for-loop")})
"""(optimizer, optimizer_impl) whose states and step temporaries depend only on the count:
the others keep per-tensor terms (8-bit and paged states per tensor size, Adafactor's factored
moments, fused AdamW's step counter per tensor, the per-tensor loop's largest tensor)."""

_NO_SHAPES = ("a bare parameter count has no architecture (layers, hidden size, heads, "
              "vocabulary): give model.id or model.path to size it")
_NO_ADAPTERS = ("the adapters' size needs the layer shapes: LoRA trains r × (in + out) per "
                "adapted matrix (Hu et al. 2021 §4.1), which a bare parameter count does not "
                "give; give model.id or model.path")


def _unknown(name: str, phases: tuple[str, ...], reason: str, source: str = "R8") -> Item:
    return Item(name, None, "estimated", phases, source, unknown_reason=reason)


def bare_count_training_items(sheet: Sheet, weight_items: list[Item], *, runs: str,
                              compute_dtype: str, phases: tuple[str, ...]
                              ) -> tuple[list[Item], list[str], Sharding, TrainingDtypes, int,
                                         int | None]:
    """Items per GPU of a training sheet on ``model.parameters`` (module docstring).

    ``weight_items``: the dense ``weights`` item of the count in the running format.

    Returns:
        ``(items, notes, sharding, dtypes, host bytes per GPU, trainable parameters or None
        when they are not known — lora and qlora)``.
    """
    training = sheet.training
    parameters = sheet.model.parameters
    dtypes = training_dtypes(sheet, runs=runs, compute_dtype=compute_dtype)
    shards = sharding(sheet.placement)
    notes = ["bare parameter count for training: weights, gradients and optimizer states "
             "follow from the count; activations, logits and working memory need the "
             "architecture and are unknown, so the peak is unknown (R8)"]
    working = [_unknown("activations", ("forward", "backward"), _NO_SHAPES),
               _unknown("logits", ("forward", "backward"), _NO_SHAPES),
               _unknown("backward_working", ("backward",), _NO_SHAPES),
               _unknown("validation_working", ("validation",), _NO_SHAPES)]
    if sheet.task != "full":
        items = [*weight_items,
                 _unknown("lora_adapters", phases, _NO_ADAPTERS),
                 _unknown("optimizer_states", STEADY_PHASES, _NO_ADAPTERS),
                 *working[:3], _unknown("gradients", ("backward", "optimizer_step"),
                                        _NO_ADAPTERS),
                 working[3]]
        if training.export == "merged":
            items.append(_unknown("export_transient", ("export",), _NO_ADAPTERS))
        return items, notes, shards, dtypes, 0, None
    trained = Trainable(True, parameters, ((1, parameters, 1),), None,
                        TrainedParts(full=True, qkv=True, o=True, gate_up=True, down=True,
                                     experts=True))
    weights, host_params = _weights(weight_items[0], parameters, dtypes, shards, phases)
    if (training.optimizer, training.optimizer_impl) in SHAPELESS_OPTIMIZERS:
        optimizer, optimizer_notes, host_states = optimizer_items(training, trained,
                                                                  dtypes.state_bytes, shards)
        notes += optimizer_notes
    else:
        reason = (f"{training.optimizer} ({training.optimizer_impl}) keeps per-tensor terms "
                  "(8-bit or paged states by tensor size, factored moments, per-tensor step "
                  "counters or the largest tensor's temporaries): it needs the tensors' shapes")
        optimizer, host_states = [_unknown("optimizer_states", STEADY_PHASES, reason)], 0
        memory = optimizer_memory("adamw", "foreach", [(1, parameters, 1)], dtypes.state_bytes)
        notes.append(f"for scale: AdamW would keep {memory.state_bytes // shards.states} B of "
                     "states per GPU")
    gradients, host_gradients = gradient_shares(parameters, dtypes, shards)
    master, host_master = master_items(trained, dtypes, shards, phases)
    items = [*weights, *optimizer, *working[:3],
             Item("gradients", gradients, "estimated", ("backward", "optimizer_step"),
                  "one gradient per trained parameter, in its dtype (torch autograd "
                  "AccumulateGrad)",
                  f"{parameters} × {dtypes.trainable_bytes} B ({dtypes.trainable_dtype})"
                  + divided_text(shards.gradients)
                  + (" (offloaded to host RAM)" if shards.optimizer_offloaded
                     and not gradients else "")),
             working[3], *_buffers(shards, dtypes, gradients), *master]
    if training.export == "merged":
        items.append(_unknown("export_transient", ("export",), _NO_ADAPTERS))
    return items, notes, shards, dtypes, host_params + host_gradients + host_master + \
        host_states, parameters


def _weights(item: Item, parameters: int, dtypes: TrainingDtypes, shards: Sharding,
             phases: tuple[str, ...]) -> tuple[list[Item], int]:
    """The count's weights per GPU: fp32 when the trained parameters are (amp; master under
    FSDP), ÷ the parameter shard (zero3, fsdp), in host RAM when the parameters are offloaded.
    """
    shard = shards.parameters
    fp32 = dtypes.trainable_bytes == 4 and dtypes.compute_bytes < 4
    full = parameters * 4 if fp32 else item.bytes
    size = full // shard
    formula = (f"{parameters} parameters × 4 B (fp32 trained parameters)" if fp32
               else item.formula) + divided_text(shard)
    if shards.parameters_offloaded:
        return [Item("weights", 0, "estimated", phases, item.source,
                     formula + f" = {size} B in host RAM (parameter offload)")], size
    return [Item("weights", size, "estimated", phases, item.source, formula)], 0


def _buffers(shards: Sharding, dtypes: TrainingDtypes, gradients: int) -> list[Item]:
    """The placement's buffers that a count fixes (DDP buckets, DeepSpeed's reduce bucket) and
    those it cannot (gathered layers)."""
    if shards.strategy == "ddp" and shards.gpus > 1:
        return [Item("ddp_gradient_buckets", gradients, "estimated", ("backward",
                                                                       "optimizer_step"),
                     "torch DistributedDataParallel gradient buckets (PyTorch docs)",
                     f"= gradients {gradients} B")]
    out = []
    if shards.deepspeed:
        stage3 = shards.strategy == "zero3"
        out.append(reduce_bucket_item(shards, dtypes.trainable_bytes))
        if stage3:
            out.append(_unknown("zero3_gathered_parameters", ("forward", "backward",
                                                              "validation"), _NO_SHAPES))
    if shards.strategy == "fsdp" and shards.gpus > 1:
        out.append(_unknown("fsdp_gathered_layers", ("forward", "backward", "validation"),
                            _NO_SHAPES))
    return out
