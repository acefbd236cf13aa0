"""What a training placement adds or divides per GPU: single, ddp, zero2, fsdp.

- ``ddp``: a full copy per GPU, plus DDP's gradient buckets (``DistributedDataParallel`` copies
  every gradient into its buckets unless ``gradient_as_bucket_view=True``, "saved memory equal to
  the total gradients size", PyTorch docs);
- ``zero2``: DeepSpeed ZeRO stage 2, gradients and optimizer states ÷ N (Rajbhandari et al. 2020
  §5.2), plus the reduce bucket (``reduce_bucket_size`` 5e8 elements by default);
- ``fsdp`` full shard: parameters, gradients and states ÷ N, plus the unsharded parameters of
  the layers in flight — the current and the prefetched one (``BackwardPrefetch.BACKWARD_PRE``)
  — and one layer's unsharded gradients before its reduce-scatter (PyTorch FSDP docs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...formats import weight_format
from ...model.facts import ModelFacts
from ...sheet import Placement
from ..items import Item
from .dtypes import TrainingDtypes

if TYPE_CHECKING:  # trainable.py imports Sharding from here
    from .trainable import Trainable

__all__ = ["Sharding", "sharding", "divided_text", "resharded_weights", "placement_items"]

_ZERO_BUCKET_ELEMENTS = 500_000_000   # DeepSpeed reduce_bucket_size default (5e8 elements)


@dataclass(frozen=True)
class Sharding:
    """How a placement divides the training state.

    Attributes:
        strategy: ``single`` | ``ddp`` | ``zero2`` | ``fsdp``.
        gpus: GPUs in the placement.
        parameters: divisor of parameters (FSDP: the GPU count, else 1).
        states: divisor of gradients and optimizer states (ZeRO-2 and FSDP: the GPU count).
        data_parallel: microbatches processed at once (1 on a single GPU, else the GPU count).
    """

    strategy: str
    gpus: int
    parameters: int
    states: int
    data_parallel: int


def divided_text(divisor: int) -> str:
    """``" ÷ N"`` for a formula divided by ``divisor`` GPUs, or "" when it is 1."""
    return f" ÷ {divisor}" if divisor > 1 else ""


def sharding(placement: Placement) -> Sharding:
    """The divisors of ``placement`` (see the module docstring)."""
    gpus, strategy = placement.gpus, placement.strategy
    return Sharding(strategy=strategy, gpus=gpus,
                    parameters=gpus if strategy == "fsdp" else 1,
                    states=gpus if strategy in ("zero2", "fsdp") else 1,
                    data_parallel=gpus if strategy != "single" else 1)


def resharded_weights(weight_items: list[Item], trained: Trainable, dtypes: TrainingDtypes,
                      shards: Sharding, phases: tuple[str, ...]) -> list[Item]:
    """The base weight items per GPU: full fine-tuning under amp holds the trained model in fp32
    (trainable × 4 B); FSDP divides the weights and their quantization metadata."""
    shard, trainable_parameters = shards.parameters, trained.parameters
    items = []
    for item in weight_items:
        if item.name == "weights" and trained.full and dtypes.amp:
            items.append(Item("weights", trainable_parameters * 4 // shard, "estimated", phases,
                              "torch.amp: the trained model is held in fp32; autocast computes "
                              f"in {dtypes.compute_dtype} (PyTorch docs, Automatic Mixed "
                              "Precision)", f"{trainable_parameters} parameters × 4 B"
                              + (f" ÷ {shard} (FSDP shard)" if shard > 1 else "")))
        elif item.name in ("weights", "quantization_metadata") and shard > 1 and item.bytes:
            items.append(Item(item.name, item.bytes // shard, item.provenance, item.phases,
                              item.source, f"{item.formula} ÷ {shard} (FSDP full shard)"))
        else:
            items.append(item)
    return items


def placement_items(facts: ModelFacts, *, runs: str, full: bool, dtypes: TrainingDtypes,
                    shards: Sharding, gradients_bytes: int) -> tuple[list[Item], list[str]]:
    """DDP gradient buckets, the ZeRO-2 reduce bucket or FSDP's gathered layers, with notes.

    FSDP layer = (total − V·h × (1 if tied else 2)) / L parameters; gathered = 2 layers ×
    their bytes (fp32 under full amp, else the running format's), + one layer's gradients when
    every parameter trains.
    """
    trainable_bytes = dtypes.trainable_bytes
    if shards.gpus == 1 or shards.strategy == "single":
        return [], []
    if shards.strategy == "ddp":
        return [Item("ddp_gradient_buckets", gradients_bytes, "estimated",
                     ("backward", "optimizer_step"),
                     "torch DistributedDataParallel: gradients are copied into communication "
                     "buckets unless gradient_as_bucket_view=True (PyTorch docs: 'saved memory "
                     "size equal to the total gradients size')",
                     f"= gradients {gradients_bytes} B")], []
    if shards.strategy == "zero2":
        return [Item("zero_reduce_bucket", _ZERO_BUCKET_ELEMENTS * trainable_bytes, "declared",
                     ("backward",),
                     "DeepSpeed ZeRO config docs: reduce_bucket_size default 5e8 elements",
                     f"5e8 × {trainable_bytes} B")], []
    arch = facts.architecture
    embeddings = arch.vocab_size * arch.hidden_size * (1 if arch.tie_word_embeddings else 2)
    layer_parameters = (arch.total_parameters - embeddings) // max(1, arch.num_layers)
    gathered_width = 4 if (full and dtypes.amp) else (weight_format(runs).byte_width
                                                       or dtypes.compute_bytes)
    gathered = 2 * layer_parameters * gathered_width
    layer_gradients = layer_parameters * trainable_bytes if full else 0
    item = Item("fsdp_gathered_layers", gathered + layer_gradients, "estimated",
                ("forward", "backward", "validation"),
                "PyTorch FSDP full shard: the unsharded parameters of the current and the "
                "prefetched layer (BackwardPrefetch.BACKWARD_PRE), and one layer's unsharded "
                "gradients before reduce-scatter",
                f"2 × {layer_parameters} × {gathered_width} B"
                + (f" + {layer_parameters} × {trainable_bytes} B" if layer_gradients else ""),
                phase_bytes={"forward": gathered, "validation": gathered})
    if weight_format(runs).family != "bitsandbytes":
        return [item], []
    return [item], ["FSDP: a quantized (bitsandbytes) base needs bnb_4bit_quant_storage to "
                    "shard; sized as if it shards like the other parameters"]
