"""What a training placement adds or divides per GPU: single, ddp, zero1/2/3, fsdp.

The divisors live in :mod:`.sharding` (ZeRO paper §5 and FSDP's strategies); this module sizes
the weights under them and the buffers each framework keeps:

- ``ddp``: a full copy per GPU, plus DDP's gradient buckets (``DistributedDataParallel`` copies
  every gradient into its buckets unless ``gradient_as_bucket_view=True``, "saved memory equal to
  the total gradients size", PyTorch docs);
- ``zero1`` / ``zero2``: the reduce bucket DeepSpeed allocates with ``contiguous_gradients``
  (default true): ``reduce_bucket_size`` elements in the 16-bit parameter dtype, a second one
  with ``overlap_comm`` (default false below stage 3) — ``stage_1_and_2.py`` ``setup_buckets``
  ("Buffer's dtype is the same as the dtype of optimizer"), whatever the GPU count. The
  updated partitions are all-gathered straight into the 16-bit flat groups
  (``runtime/utils.py`` ``all_gather_into_tensor_dp_groups``), so ``allgather_bucket_size``
  adds no buffer when ``torch.distributed`` has ``all_gather_into_tensor`` (torch >= 1.13);
- ``zero3``: the reduce bucket made at init (``stage3.py``: one ``torch.empty(reduce_bucket_size)``
  per gradient dtype); the gathered parameters: the module running (its largest weight) plus the
  prefetch bucket (``stage3_prefetch_bucket_size``), capped by ``stage3_max_live_parameters``, in
  the 16-bit dtype, and in backward the module's 16-bit gradient before it joins the bucket
  (DeepSpeed docs ``memory.rst``: "2 bytes fp16 params are gathered and 2 bytes fp16 grads are
  computed"); parameters below ``stage3_param_persistence_threshold`` elements are never
  partitioned (one copy per GPU);
- ``fsdp`` full / hybrid: parameters, gradients and states ÷ the shard group, plus the
  unsharded parameters of the units in flight — the current and the prefetched one
  (``BackwardPrefetch.BACKWARD_PRE``, FSDP's default) — and one unit's unsharded gradients
  before its reduce-scatter (``torch/distributed/fsdp/api.py``: FULL_SHARD "unshards before the
  forward, reshards after the forward, unshards before the backward computation"); ``grad-op``
  (SHARD_GRAD_OP) keeps every unit gathered from its forward to the end of backward.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...formats import weight_format
from ...model.facts import ModelFacts
from ..items import Item
from .dtypes import TrainingDtypes
from .sharding import (DEEPSPEED_CONFIG_SOURCE, MAX_LIVE_PARAMETERS, PERSISTENCE_THRESHOLD,
                       PREFETCH_BUCKET_ELEMENTS, REDUCE_BUCKET_ELEMENTS, Sharding, divided_text,
                       sharding)

if TYPE_CHECKING:  # trainable.py imports Sharding from here
    from .trainable import Trainable

__all__ = ["Sharding", "sharding", "divided_text", "resharded_weights", "placement_items",
           "persistent_parameters", "layer_parameters", "reduce_bucket_item",
           "gradient_shares"]


def gradient_shares(parameters: int, dtypes: TrainingDtypes, shards: Sharding
                    ) -> tuple[int, int]:
    """``(on the GPU, in host RAM)`` gradient bytes per GPU: trained × their width ÷ the
    gradient shard; offloaded, zero2 / zero3 move the partition to host RAM as fp32 (counted
    with the master copy, ``master.py``) and FSDP keeps its sharded fp32 gradients there; zero1
    keeps them whole on the GPU."""
    size = parameters * dtypes.trainable_bytes // shards.gradients
    if not shards.optimizer_offloaded or shards.strategy == "zero1":
        return size, 0
    return 0, size if shards.strategy == "fsdp" else 0


def persistent_parameters(facts: ModelFacts) -> int:
    """Parameters ZeRO-3 never partitions: tensors below ``stage3_param_persistence_threshold``
    (1e5) elements — norms, biases, and any matrix that small (``stage3.py``
    ``persistent_parameters``)."""
    out = 0
    for group in facts.architecture.params:
        in_matrices = sum(n * rows * cols for n, rows, cols in group.shapes)
        vectors = group.count - in_matrices if group.shapes else group.count
        out += max(0, vectors) + sum(n * rows * cols for n, rows, cols in group.shapes
                                     if rows * cols < PERSISTENCE_THRESHOLD)
    return out


def layer_parameters(facts: ModelFacts) -> int:
    """Parameters of one decoder layer: (total − V·h × (1 if tied else 2)) / L."""
    arch = facts.architecture
    embeddings = arch.vocab_size * arch.hidden_size * (1 if arch.tie_word_embeddings else 2)
    return (arch.total_parameters - embeddings) // max(1, arch.num_layers)


def resharded_weights(weight_items: list[Item], trained: Trainable, dtypes: TrainingDtypes,
                      shards: Sharding, phases: tuple[str, ...], facts: ModelFacts | None = None
                      ) -> tuple[list[Item], int]:
    """The base weight items per GPU and the bytes per GPU they leave in host RAM.

    Full fine-tuning with fp32 trained parameters (amp; master under FSDP, whose fp32 shard is
    the master copy) holds the model in fp32 (trainable × 4 B); zero3 and FSDP divide the
    weights and their quantization metadata by the shard group (zero3 keeps the persistent
    parameters whole: :func:`persistent_parameters` × the weights' bytes per value); with the
    parameters offloaded (zero3 ``offload_param``, FSDP ``CPUOffload``) the shard lives in host
    RAM and the GPU keeps only the persistent parameters."""
    shard, trainable_parameters = shards.parameters, trained.parameters
    offloaded = shards.parameters_offloaded
    items, host = [], 0
    for item in weight_items:
        if item.name == "weights" and trained.full and dtypes.trainable_bytes == 4 \
                and dtypes.compute_bytes < 4:
            size = trainable_parameters * 4 // shard
            what = ("torch.amp: the trained model is held in fp32; autocast computes in "
                    f"{dtypes.compute_dtype} (PyTorch docs, Automatic Mixed Precision)")
            if dtypes.master:
                what = ("FSDP MixedPrecision: the sharded flat parameters stay fp32 (the master "
                        f"copy) and are gathered in {dtypes.compute_dtype} (PyTorch FSDP docs, "
                        "MixedPrecision)")
            host += size if offloaded else 0
            items.append(Item("weights", 0 if offloaded else size, "estimated", phases, what,
                              f"{trainable_parameters} parameters × 4 B"
                              + (f" ÷ {shard} (FSDP shard)" if shard > 1 else "")
                              + (f" = {size} B in host RAM (CPUOffload)" if offloaded else "")))
        elif item.name in ("weights", "quantization_metadata") and shard > 1 and item.bytes:
            kept = 0
            if shards.strategy == "zero3" and item.name == "weights" and facts is not None:
                total = facts.architecture.total_parameters
                kept = item.bytes * persistent_parameters(facts) // max(1, total)
            size = (item.bytes - kept) // shard
            host += size if offloaded else 0
            mode = ("ZeRO-3 partition" if shards.strategy == "zero3"
                    else f"FSDP {shards.fsdp_sharding} shard")
            formula = (f"{item.formula} ÷ {shard} ({mode})" if not kept else
                       f"({item.formula} − persistent {kept} B) ÷ {shard} ({mode}) + {kept} B "
                       "persistent (below stage3_param_persistence_threshold 1e5 elements)")
            if offloaded:
                formula += f"; the {size} B shard in host RAM (parameter offload)"
            items.append(Item(item.name, kept + (0 if offloaded else size), item.provenance,
                              item.phases, item.source, formula))
        elif item.name == "weights" and trained.full and dtypes.master_bytes and shard == 1:
            items.append(Item("weights", item.bytes, item.provenance, item.phases, item.source,
                              f"{item.formula} (16-bit parameters; the fp32 master copy is "
                              "master_weights)"))
        else:
            items.append(item)
    return items, host


def placement_items(facts: ModelFacts, *, runs: str, full: bool, dtypes: TrainingDtypes,
                    shards: Sharding, gradients_bytes: int) -> tuple[list[Item], list[str]]:
    """DDP gradient buckets, DeepSpeed's reduce bucket and ZeRO-3's gathered parameters, or
    FSDP's gathered units, with notes (module docstring: what each framework keeps).

    ZeRO reduce bucket = 5e8 × the 16-bit width (× 2 with overlap_comm); ZeRO-3 gathered =
    (largest weight + min(5e7, 1e9 − largest)) × w + largest × c in backward when it trains.
    FSDP unit = :func:`layer_parameters`; gathered = 2 units × w (grad-op: every unit), + one
    unit's gradients when every parameter trains; w = the gathered width (fp32 under full amp,
    the compute dtype under master, else the running format's).
    """
    if shards.deepspeed:
        return _deepspeed_items(facts, runs=runs, full=full, dtypes=dtypes, shards=shards)
    if shards.gpus == 1 or shards.strategy == "single":
        return [], []
    if shards.strategy == "ddp":
        return [Item("ddp_gradient_buckets", gradients_bytes, "estimated",
                     ("backward", "optimizer_step"),
                     "torch DistributedDataParallel: gradients are copied into communication "
                     "buckets unless gradient_as_bucket_view=True (PyTorch docs: 'saved memory "
                     "size equal to the total gradients size')",
                     f"= gradients {gradients_bytes} B")], []
    return _fsdp_items(facts, runs=runs, full=full, dtypes=dtypes, shards=shards)


def _gathered_width(runs: str, full: bool, dtypes: TrainingDtypes) -> int:
    """Bytes per value of gathered parameters: fp32 for full amp (autocast over fp32
    parameters), the compute dtype under master, else the running format's."""
    if dtypes.master:
        return dtypes.compute_bytes
    if full and dtypes.amp:
        return 4
    return weight_format(runs).byte_width or dtypes.compute_bytes


def reduce_bucket_item(shards: Sharding, width: int) -> Item:
    """DeepSpeed's reduce bucket: ``reduce_bucket_size`` 5e8 elements × ``width`` B (the 16-bit
    parameter dtype), made at init by stage 3 and in backward by stages 1 and 2 (one buffer:
    ``overlap_comm``'s second is off by default below stage 3)."""
    stage3 = shards.strategy == "zero3"
    return Item("zero_reduce_bucket", REDUCE_BUCKET_ELEMENTS * width, "declared",
                ("forward", "backward", "optimizer_step", "validation", "export") if stage3
                else ("backward",),
                DEEPSPEED_CONFIG_SOURCE + "; " + ("stage3.py: the ipg bucket is allocated at "
                                                  "init" if stage3 else "stage_1_and_2.py "
                                                  "setup_buckets (contiguous_gradients)"),
                f"reduce_bucket_size 5e8 elements × {width} B")


def _deepspeed_items(facts: ModelFacts, *, runs: str, full: bool, dtypes: TrainingDtypes,
                     shards: Sharding) -> tuple[list[Item], list[str]]:
    stage3 = shards.strategy == "zero3"
    bucket = reduce_bucket_item(shards, dtypes.trainable_bytes)
    if not stage3:
        return [bucket], []
    params = facts.architecture.params
    largest = max((g.largest_matrix for g in params), default=0)
    prefetch = min(PREFETCH_BUCKET_ELEMENTS, max(0, MAX_LIVE_PARAMETERS - largest))
    gathered_width = _gathered_width(runs, full, dtypes)
    gathered = (largest + prefetch) * gathered_width
    grads = largest * dtypes.compute_bytes if full else 0
    item = Item("zero3_gathered_parameters", gathered + grads, "estimated",
                ("forward", "backward", "validation"),
                DEEPSPEED_CONFIG_SOURCE + "; stage3 partitioned_param_coordinator: the running "
                "module's parameters plus the prefetch bucket are gathered; DeepSpeed docs "
                "memory.rst (largest layer: 16-bit parameters gathered, 16-bit gradients made)",
                f"(largest weight {largest} + prefetch {prefetch}) × {gathered_width} B"
                + (f" + its gradient {largest} × {dtypes.compute_bytes} B in backward"
                   if grads else ""),
                phase_bytes={"forward": gathered, "validation": gathered})
    return [bucket, item], []


def _fsdp_items(facts: ModelFacts, *, runs: str, full: bool, dtypes: TrainingDtypes,
                shards: Sharding) -> tuple[list[Item], list[str]]:
    layer = layer_parameters(facts)
    width = _gathered_width(runs, full, dtypes)
    grad_op = shards.fsdp_sharding == "grad-op"
    units = facts.architecture.num_layers if grad_op else 2
    gathered = units * layer * width
    grad_width = dtypes.compute_bytes if dtypes.master else dtypes.trainable_bytes
    layer_gradients = layer * grad_width if full else 0
    what = ("SHARD_GRAD_OP: every unit stays unsharded from its forward to the end of backward"
            if grad_op else "the unsharded parameters of the current and the prefetched unit "
            "(BackwardPrefetch.BACKWARD_PRE)")
    item = Item("fsdp_gathered_layers", gathered + layer_gradients, "estimated",
                ("forward", "backward", "validation"),
                f"PyTorch FSDP {shards.fsdp_sharding} shard: {what}, and one unit's unsharded "
                "gradients before reduce-scatter",
                f"{units} × {layer} × {width} B"
                + (f" + {layer} × {grad_width} B" if layer_gradients else ""),
                phase_bytes={"forward": gathered,
                             "validation": 2 * layer * width if grad_op else gathered})
    if weight_format(runs).family != "bitsandbytes":
        return [item], []
    return [item], ["FSDP: a quantized (bitsandbytes) base needs bnb_4bit_quant_storage to "
                    "shard; sized as if it shards like the other parameters"]
