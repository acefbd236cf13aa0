"""How a training placement divides the training state per GPU: the ZeRO paper's accounting and
the frameworks' own defaults.

ZeRO (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
Models", §5.1–5.3, Figure 1): with Ψ trained parameters, mixed-precision Adam holds 2Ψ bytes of
16-bit parameters, 2Ψ of 16-bit gradients and KΨ = 12Ψ of optimizer state (fp32 master copy,
momentum, variance). Over N_d data-parallel GPUs, stage 1 (P_os) divides the KΨ, stage 2
(P_os+g) the gradients too, stage 3 (P_os+g+p) the parameters too:
``(2 + 2 + K)Ψ`` → ``2Ψ + 2Ψ + KΨ/N_d`` → ``2Ψ + (2 + K)Ψ/N_d`` → ``(2 + 2 + K)Ψ/N_d``.

PyTorch FSDP (``torch/distributed/fsdp/api.py``, ``ShardingStrategy``, ``CPUOffload``,
``MixedPrecision``, ``BackwardPrefetch`` docstrings): FULL_SHARD divides parameters,
gradients and states over every GPU; SHARD_GRAD_OP keeps the parameters gathered from forward
to the end of backward (states and gradients stay divided); HYBRID_SHARD is FULL_SHARD inside a
node and a replica per node (the divisor is the GPUs of one node).

DeepSpeed's buffers, from its config defaults (``deepspeed/runtime/zero/config.py``, DeepSpeed
0.19.6): ``reduce_bucket_size`` 5e8 elements, ``allgather_bucket_size`` 5e8,
``stage3_prefetch_bucket_size`` 5e7, ``stage3_max_live_parameters`` 1e9,
``stage3_param_persistence_threshold`` 1e5, ``contiguous_gradients`` true, ``overlap_comm``
true only for stage 3 (``overlap_comm_valid``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...sheet import Placement

__all__ = ["Sharding", "sharding", "divided_text", "DEEPSPEED_STRATEGIES", "SHARDED_STRATEGIES",
           "REDUCE_BUCKET_ELEMENTS", "ALLGATHER_BUCKET_ELEMENTS", "PREFETCH_BUCKET_ELEMENTS",
           "MAX_LIVE_PARAMETERS", "PERSISTENCE_THRESHOLD", "DEEPSPEED_CONFIG_SOURCE"]

DEEPSPEED_STRATEGIES = ("zero1", "zero2", "zero3")
SHARDED_STRATEGIES = (*DEEPSPEED_STRATEGIES, "fsdp")
"""Strategies that shard the optimizer state (and whose mixed precision keeps an fp32 master)."""

REDUCE_BUCKET_ELEMENTS = 500_000_000      # DeepSpeedZeroConfig.reduce_bucket_size = 5e8
ALLGATHER_BUCKET_ELEMENTS = 500_000_000   # DeepSpeedZeroConfig.allgather_bucket_size = 5e8
PREFETCH_BUCKET_ELEMENTS = 50_000_000     # stage3_prefetch_bucket_size = 5e7
MAX_LIVE_PARAMETERS = 1_000_000_000       # stage3_max_live_parameters = 1e9
PERSISTENCE_THRESHOLD = 100_000           # stage3_param_persistence_threshold = 1e5
DEEPSPEED_CONFIG_SOURCE = ("DeepSpeed 0.19.6 deepspeed/runtime/zero/config.py defaults "
                           "(reduce_bucket_size 5e8, allgather_bucket_size 5e8, "
                           "stage3_prefetch_bucket_size 5e7, stage3_max_live_parameters 1e9, "
                           "stage3_param_persistence_threshold 1e5, overlap_comm = stage 3)")


@dataclass(frozen=True)
class Sharding:
    """How a placement divides the training state, per GPU.

    Attributes:
        strategy: ``single`` | ``ddp`` | ``zero1`` | ``zero2`` | ``zero3`` | ``fsdp``.
        gpus: GPUs in the placement, over all nodes.
        parameters: divisor of parameters at rest (zero3 and fsdp: the shard group, else 1).
        states: divisor of optimizer states and the fp32 master copy (zero*, fsdp: the group).
        data_parallel: microbatches processed at once (1 on a single GPU, else the GPU count).
        gradients: divisor of gradients (zero2, zero3, fsdp: the group; zero1, ddp: 1).
        nodes: nodes the GPUs spread over (``gpus ÷ nodes`` per node).
        group: GPUs one shard spans (every GPU; the GPUs of one node for fsdp hybrid).
        fsdp_sharding: ``full`` | ``grad-op`` | ``hybrid`` (fsdp only).
        offload: ``none`` | ``optimizer`` | ``optimizer+params``.
    """

    strategy: str
    gpus: int
    parameters: int
    states: int
    data_parallel: int
    gradients: int = 1
    nodes: int = 1
    group: int = 1
    fsdp_sharding: str = "full"
    offload: str = "none"

    @property
    def gpus_per_node(self) -> int:
        """GPUs on one node."""
        return self.gpus // self.nodes

    @property
    def deepspeed(self) -> bool:
        """A DeepSpeed ZeRO stage."""
        return self.strategy in DEEPSPEED_STRATEGIES

    @property
    def optimizer_offloaded(self) -> bool:
        """Master copy, fp32 gradients and optimizer states live in host RAM."""
        return self.offload != "none"

    @property
    def parameters_offloaded(self) -> bool:
        """The parameter shards live in host RAM (zero3 offload_param, FSDP CPUOffload)."""
        return self.offload == "optimizer+params"


def divided_text(divisor: int) -> str:
    """``" ÷ N"`` for a formula divided by ``divisor`` GPUs, or "" when it is 1."""
    return f" ÷ {divisor}" if divisor > 1 else ""


def sharding(placement: Placement) -> Sharding:
    """The divisors of ``placement`` (module docstring: the ZeRO stages and FSDP strategies)."""
    gpus, strategy = placement.gpus, placement.strategy
    nodes = placement.nodes if gpus % placement.nodes == 0 else 1   # the sheet refuses the rest
    mode = placement.fsdp_sharding if strategy == "fsdp" else "full"
    group = 1
    if strategy in SHARDED_STRATEGIES:
        group = gpus // nodes if (strategy == "fsdp" and mode == "hybrid") else gpus
    params = group if strategy in ("zero3", "fsdp") else 1
    grads = group if strategy in ("zero2", "zero3", "fsdp") else 1
    return Sharding(strategy=strategy, gpus=gpus, parameters=params,
                    states=group if strategy in SHARDED_STRATEGIES else 1,
                    data_parallel=gpus if strategy != "single" else 1, gradients=grads,
                    nodes=nodes, group=group, fsdp_sharding=mode, offload=placement.offload)
