"""The fp32 master copy that mixed precision keeps beside 16-bit parameters, and the fp32
gradients the optimizer step makes from the 16-bit ones.

ZeRO paper (Rajbhandari et al. 2020) §3.1: mixed-precision Adam keeps an fp32 copy of the
parameters (4Ψ of its K = 12), and DeepSpeed's ZeRO optimizers make the fp32 gradient of the
partition at the step: ``stage_1_and_2.py`` (``single_partition_of_fp32_groups``, and in
``step`` ``single_grad_partition = flatten(averaged_gradients).to(fp32)``), ``stage3.py``
(``fp32_partitioned_groups_flat``; ``_prepare_fp32_grad_for_sub_group``). DeepSpeed's own
estimator counts the same terms: "18 = 2_grads_16bit + 4_grads_32bit + 4_params_32bit +
8_optimizer_states_32bit" (``estimate_zero2_model_states_mem_needs``, DeepSpeed 0.19.6). Both
are divided like the optimizer states and live in host RAM with ``offload`` (ZeRO-Offload).
FSDP has no separate copy: its sharded flat parameter is fp32 (``memory.training.dtypes``).
"""

from __future__ import annotations

from ..items import Item
from .dtypes import TrainingDtypes
from .sharding import Sharding, divided_text
from .trainable import Trainable

__all__ = ["master_items"]

_SOURCE = ("ZeRO paper §3.1 (fp32 master copy of mixed-precision Adam); DeepSpeed 0.19.6 "
           "deepspeed/runtime/zero/stage_1_and_2.py and stage3.py (fp32 partitions, fp32 "
           "gradient of the partition at step)")


def master_items(trained: Trainable, dtypes: TrainingDtypes, shards: Sharding,
                 phases: tuple[str, ...]) -> tuple[list[Item], int]:
    """``master_weights`` (Ψ × 4 B ÷ the state shard, from load on) and ``master_gradients``
    (Ψ × 4 B ÷ the state shard, during the optimizer step) on the GPU, or none of them and their
    bytes per GPU in host RAM when the optimizer is offloaded; nothing outside precision master
    or under FSDP.

    Returns:
        ``(items, bytes per GPU in host RAM)``.
    """
    if not dtypes.master_bytes:
        return [], 0
    shard = shards.states
    size = trained.parameters * dtypes.master_bytes // shard
    formula = f"{trained.parameters} × {dtypes.master_bytes} B (fp32){divided_text(shard)}"
    if shards.optimizer_offloaded:
        where = f"; in host RAM (offload {shards.offload}): {size} B per GPU"
        return [Item("master_weights", 0, "estimated", (), _SOURCE, formula + where),
                Item("master_gradients", 0, "estimated", (), _SOURCE, formula + where)], 2 * size
    return [Item("master_weights", size, "estimated", phases, _SOURCE, formula),
            Item("master_gradients", size, "estimated", ("optimizer_step",), _SOURCE,
                 formula + "; made from the 16-bit gradients for the step")], 0

