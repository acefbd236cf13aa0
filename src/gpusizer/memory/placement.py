"""Per-GPU shares under the sheet's placement (every memory figure is per GPU).

- ``single``: one GPU holds everything.
- ``tensor-parallel``: weights split N ways (Megatron-LM, Shoeybi et al. 2019 §3: column/row
  parallel linears, vocab-parallel embedding in vLLM; transformers' ``base_model_tp_plan``
  replicates the embedding); KV heads split, replicated when N > kv_heads; residual-stream
  activations are replicated.
- ``device-map`` (accelerate ``infer_auto_device_map``, layer-wise): each GPU holds a contiguous
  run of ceil(L/N) decoder layers; the heaviest GPU also holds the larger of the embedding and
  lm_head. Two cards are not one memory space: this is a software placement to verify (R9).
- ``ddp`` (inference replicas): a full copy per GPU serving ceil(concurrency / N) sequences.
- ``zero2`` / ``fsdp`` shard training state and are refused for inference.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..errors import SheetError
from ..model.facts import ModelFacts

__all__ = ["Share", "PlacementRule", "inference_share"]


@dataclass(frozen=True)
class PlacementRule:
    """What differs between engines when one model is split over several GPUs.

    Attributes:
        tp_replicated_embedding: tensor parallelism keeps the whole embedding on every rank
            (transformers' ``base_model_tp_plan`` has no entry for ``embed_tokens``); False: a
            vocab-parallel embedding split like the linears (vLLM ``VocabParallelEmbedding``).
            (An engine that cannot use accelerate's ``device-map`` is refused by the sheet:
            ``sheet.ENGINE_SHEET_RULES``.)
    """

    tp_replicated_embedding: bool


@dataclass(frozen=True)
class Share:
    """What one GPU (the heaviest) holds.

    Attributes:
        gpus: GPUs of the placement.
        strategy: placement strategy.
        tp: tensor-parallel ranks (1 otherwise): divides heads and MLP widths.
        weight_fraction: fraction of the model's weight bytes on the heaviest GPU.
        layer_fraction: fraction of decoder layers (and their KV cache) on it.
        sequences: sequences whose KV cache and activations live on it.
        note: how the share was derived.
    """

    gpus: int
    strategy: str
    tp: int
    weight_fraction: Fraction
    layer_fraction: Fraction
    sequences: int
    note: str


def _check_tp_split(facts: ModelFacts, tp: int) -> None:
    """Megatron-style tensor parallelism splits whole heads: query heads must divide by the rank
    count, and KV heads must divide by it (or it by them, when each KV head is replicated) —
    vLLM refuses other splits (``ModelConfig.verify_with_parallel_config``)."""
    arch = facts.architecture
    heads, kv = arch.num_attention_heads, arch.num_key_value_heads
    if heads % tp:
        raise SheetError(f"tensor parallelism over {tp} GPUs cannot split {heads} attention heads "
                         f"evenly; choose a GPU count that divides {heads}",
                         field="placement.gpus", value=tp)
    if arch.mla is None and ((tp <= kv and kv % tp) or (tp > kv and tp % kv)):
        raise SheetError(f"tensor parallelism over {tp} GPUs cannot split or replicate {kv} KV "
                         "heads evenly", field="placement.gpus", value=tp)


def inference_share(facts: ModelFacts | None, *, strategy: str, gpus: int,
                    concurrency: int, rule: PlacementRule) -> Share:
    """The heaviest GPU's share for inference, under the engine's placement ``rule``.

    Raises:
        SheetError: device-map with more GPUs than decoder layers; a tensor-parallel split of
            the heads that is not even. (The sheet refuses training-only strategies for
            inference and device-map under an engine that does not use accelerate's placement.)
    """
    one = Fraction(1)
    if strategy == "single" or gpus == 1:
        return Share(1, strategy, 1, one, one, concurrency, "one GPU holds everything")
    if strategy == "ddp":
        seqs = -(-concurrency // gpus)
        return Share(gpus, strategy, 1, one, one, seqs,
                     f"a full replica per GPU serving ceil({concurrency}/{gpus}) = {seqs} sequences")
    if strategy == "tensor-parallel":
        if facts is not None:
            _check_tp_split(facts, gpus)
        if rule.tp_replicated_embedding and facts is not None:
            # transformers' base_model_tp_plan shards the decoder linears and lm_head but has no
            # entry for embed_tokens: every rank keeps the whole embedding.
            embed = facts.architecture.parameters_by_role("embedding")
            total = facts.architecture.total_parameters
            frac = (Fraction(total - embed, gpus) + embed) / total
            return Share(gpus, strategy, gpus, frac, one, concurrency,
                         f"linears and KV heads split {gpus} ways; the embedding ({embed} "
                         "parameters) is replicated on every rank (transformers tp_plan)")
        return Share(gpus, strategy, gpus, Fraction(1, gpus), one, concurrency,
                     f"weights and KV heads split {gpus} ways (vocab-parallel embedding; norms "
                     "replicated, negligible)")
    # device-map: contiguous layer runs
    arch = facts.architecture if facts is not None else None
    if arch is not None and gpus > arch.num_layers:
        raise SheetError(f"device-map places whole decoder layers: {gpus} GPUs for "
                         f"{arch.num_layers} layers would leave GPUs empty; use at most "
                         f"{arch.num_layers}", field="placement.gpus", value=gpus)
    if arch is None:
        return Share(gpus, strategy, 1, Fraction(1, gpus), Fraction(1, gpus), concurrency,
                     f"1/{gpus} of the weights per GPU (bare count: no layer structure)")
    layers_here = -(-arch.num_layers // gpus)
    layer_frac = Fraction(layers_here, arch.num_layers)
    embed = arch.parameters_by_role("embedding")
    head = arch.parameters_by_role("lm_head")
    total = arch.total_parameters
    body = total - embed - head
    heaviest = layer_frac * body + max(embed, head)
    return Share(gpus, strategy, 1, Fraction(heaviest) / total, layer_frac, concurrency,
                 f"ceil({arch.num_layers}/{gpus}) = {layers_here} layers + the larger of "
                 "embedding / lm_head on the heaviest GPU")
