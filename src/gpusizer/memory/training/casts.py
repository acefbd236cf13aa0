"""Copies of parameters in another dtype: QLoRA's fp32 upcast and autocast's weight casts."""

from __future__ import annotations

from ...model.facts import QUANTIZABLE_ROLES, ModelFacts
from ..items import Item
from .dtypes import TrainingDtypes
from .sharding import Sharding

__all__ = ["cast_items"]


def cast_items(facts: ModelFacts, full: bool, checkpointing: bool, dtypes: TrainingDtypes,
               shards: Sharding, phases: tuple[str, ...]) -> list[Item]:
    """``prepare_kbit_upcast`` (QLoRA) and ``autocast_weight_copies`` (full fine-tuning, amp),
    when the compute dtype is narrower than fp32.

    Upcast: kept (non-quantized) parameters × (4 − c) B, + the largest embedding or lm_head
    matrix × c B at load, while it and its fp32 copy coexist. Autocast: every linear weight
    (a tied lm_head included) × c B ÷ the FSDP shard; with gradient checkpointing, one layer's in
    backward.
    """
    width = dtypes.compute_bytes
    items = []
    if dtypes.prepare_kbit and width < 4:
        items.append(_prepare_kbit_upcast(facts, width, phases))
    if full and dtypes.amp and not dtypes.master and width < 4:
        items.append(_autocast_copies(facts, width, shards.parameters, checkpointing))
    return items


def _prepare_kbit_upcast(facts: ModelFacts, width: int, phases: tuple[str, ...]) -> Item:
    params = facts.architecture.params
    kept = sum(g.count for g in params if g.role not in QUANTIZABLE_ROLES)
    largest_kept = max((g.largest_matrix for g in params if g.role in ("embedding", "lm_head")),
                       default=0)
    # the cast runs right after loading, one parameter at a time: the largest 16-bit tensor and
    # its fp32 copy coexist once
    return Item("prepare_kbit_upcast", kept * (4 - width) + largest_kept * width, "estimated",
                phases,
                "peft prepare_model_for_kbit_training (peft/utils/other.py) casts every "
                "non-quantized fp16/bf16 parameter to fp32; TRL's SFTTrainer calls it for "
                "quantized models (training.prepare_kbit_training: false when not)",
                f"{kept} kept parameters (embeddings, lm_head, norms) × (4 − {width}) B, "
                f"+ {largest_kept} × {width} B while the largest is cast (load); the fp32 "
                "embeddings and norms also make the residual stream fp32, and "
                "bitsandbytes linears return fp32 outputs",
                phase_bytes={p: kept * (4 - width) for p in phases if p != "load"})


def _autocast_copies(facts: ModelFacts, width: int, shard: int, checkpointing: bool) -> Item:
    arch = facts.architecture
    tied_head = arch.vocab_size * arch.hidden_size if arch.tie_word_embeddings else 0
    linear_params = tied_head + sum(g.count for g in arch.params
                                    if g.role in (*QUANTIZABLE_ROLES, "lm_head"))
    per_layer_linear = sum(g.count for g in arch.params if g.role in QUANTIZABLE_ROLES) \
        // max(1, arch.num_layers)
    return Item("autocast_weight_copies", linear_params * width // shard, "estimated",
                ("forward", "backward", "validation"),
                "torch autocast caches the low-precision cast of each fp32 weight inside the "
                "autocast region (torch/amp/autocast_mode.py, clear_autocast_cache on exit); "
                "backward keeps the casts it saved",
                f"{linear_params} linear weights × {width} B" + (
                    f"; one layer {per_layer_linear} × {width} B in backward with gradient "
                    "checkpointing" if checkpointing else ""),
                phase_bytes={"backward": per_layer_linear * width} if checkpointing else {})
