"""Optimizer states and the step's temporaries as items (formulas: ``memory/optimizer_states``)."""

from __future__ import annotations

from ...sheet import Training
from ..items import Item
from ..optimizer_states import optimizer_memory
from .sharding import Sharding, divided_text
from .trainable import Trainable

__all__ = ["STEADY_PHASES", "optimizer_items"]

STEADY_PHASES = ("forward", "backward", "optimizer_step", "validation", "export")
"""Phases after the first update, when the optimizer states exist."""

_SOURCE = "gpusizer/memory/optimizer_states.py (torch.optim, bitsandbytes, transformers)"


def optimizer_items(training: Training, trained: Trainable, state_bytes: int,
                    shards: Sharding) -> tuple[list[Item], list[str], int]:
    """``optimizer_states`` (allocator-held), ``optimizer_states_paged`` (CUDA managed memory,
    non-torch) and ``optimizer_step_temporary``, each ÷ the state shard; a note for paged states.
    ``state_bytes``: the states' dtype width (fp32 under amp and master).

    With the optimizer offloaded (ZeRO-Offload: ``DeepSpeedCPUAdam`` steps on the CPU; FSDP
    ``CPUOffload`` steps where the parameters are) the states and the step's temporaries leave
    the GPU: the states item keeps its formula with 0 B on the device.

    Returns:
        ``(items, notes, bytes per GPU in host RAM)``.
    """
    memory = optimizer_memory(training.optimizer, training.optimizer_impl, list(trained.tensors),
                              state_bytes)
    shard = shards.states
    states, paged = memory.state_bytes // shard, memory.paged_bytes // shard
    items, notes = [], []
    if shards.optimizer_offloaded:
        items.append(Item("optimizer_states", 0, "estimated", (), _SOURCE,
                          memory.formula + divided_text(shard) + f" = {states} B per GPU in "
                          f"host RAM (offload {shards.offload}; the step runs on the CPU)"))
        return items, notes, states
    if states or not paged:
        items.append(Item("optimizer_states", states, "estimated",
                          STEADY_PHASES if states else (), _SOURCE,
                          memory.formula + (f" ÷ {shard} (sharded)" if shard > 1 else "")))
    if paged:
        items.append(Item("optimizer_states_paged", paged, "estimated", STEADY_PHASES, _SOURCE,
                          "bitsandbytes paged states in CUDA managed memory: on the device "
                          "until memory runs short, then moved to host RAM by the driver; not "
                          "seen by max_memory_allocated" + divided_text(shard), non_torch=True))
        notes.append(f"paged optimizer: {paged} B of states sit in CUDA managed memory — the "
                     "figure that moves to host RAM under memory pressure (device_peak_bytes "
                     "counts them on the device)")
    if memory.step_temporary_bytes:
        items.append(Item("optimizer_step_temporary", memory.step_temporary_bytes // shard,
                          "estimated", ("optimizer_step",), _SOURCE,
                          memory.step_formula + divided_text(shard)))
    return items, notes, 0
