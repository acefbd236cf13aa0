"""transformers ``generate`` on one process: dynamic or static cache, no pool taken at start.

- KV cache: ``cache_utils.DynamicLayer`` (grown with ``torch.cat`` each step) or ``StaticLayer``
  (allocated whole before prefill); MLA caches the up-projected per-head K and V
  (``modeling_deepseek_v3.py``). At the end of prefill, sliding layers still hold the whole
  prompt (``DynamicSlidingWindowLayer.update`` keeps a view; ``kv_cache.prefill_kv_bytes``).
- Working memory: the prefill forward of the whole prompt (``working_memory``), the embedding
  output kept by ``inputs_embeds``, routed experts run one after the other.
- Placement: ``base_model_tp_plan`` has no entry for ``embed_tokens``, so tensor parallelism
  replicates the embedding; accelerate's ``device_map`` places whole layers.
- bitsandbytes replaces ``nn.Linear`` only: v5's stacked expert tensors stay in the compute dtype
  (bitsandbytes-foundation/bitsandbytes#1849). fp8 below CC 8.9 is dequantized at load
  (the ``gpusizer.formats`` records, applied by ``card_rules``).
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from ...sheet import ENGINE_SHEET_RULES
from ...model.facts import ModelFacts
from ..items import Item
from ..kv_cache import KvLayout, kv_layout, prefill_kv_bytes
from ..placement import PlacementRule
from ..working_memory import WORKING_SOURCE, forward_working_bytes
from .base import EngineBase, PoolCondition, PoolSplit

if TYPE_CHECKING:
    from ...catalog.types import Card
    from ...sheet import Inference
    from ..placement import Share

__all__ = ["TRANSFORMERS", "TransformersEngine"]


class TransformersEngine(EngineBase):
    """transformers' own generation loop (the default engine, and the one training runs on)."""

    name = "transformers"
    label = "transformers"
    KEYS = ENGINE_SHEET_RULES["transformers"].keys
    placement = PlacementRule(tp_replicated_embedding=True)
    fused_moe = False
    keeps_inputs_embeds = True
    paged_mamba_state = False
    modeling_library = "transformers"
    budget_rule = ""
    pool_peak_note = ""

    def describe_cache(self, inference: dict[str, Any]) -> str:
        return inference["cache"]

    def describe_attention(self, attention: str, *, mla: bool = False) -> str:
        return attention

    def notes(self, inference: Inference) -> list[str]:
        if inference.kv_cache_dtype.startswith("fp8"):
            return [f"kv_cache_dtype {inference.kv_cache_dtype} with transformers: sized at 1 "
                    "byte per value as asked, "
                    "but transformers ships no fp8 KV cache (its quantized caches are quanto/HQQ "
                    "int2/int4): confirm the cache implementation (compatibility)"]
        return []

    def kv_layout(self, facts: ModelFacts, *, dtype_bytes: int, tp: int) -> KvLayout:
        """MLA caches the up-projected per-head K and V; otherwise K and V per KV head."""
        return kv_layout(facts, dtype_bytes=dtype_bytes, mla_latent=False, tp=tp)

    def kv_block_tokens(self, inference: Inference) -> int:
        return 1

    def prompt_kv_bytes(self, layout: KvLayout, *, tokens: int, sequences: int,
                        block_tokens: int) -> int:
        return prefill_kv_bytes(layout, tokens=tokens, sequences=sequences)

    def kv_static(self, inference: Inference) -> bool:
        return inference.cache == "static"

    def attention_kernel(self, card_kernel: str) -> str:
        return card_kernel

    def prefill_working(self, facts: ModelFacts, *, inference: Inference, share: Share,
                        dtype_bytes: int, kernel: str, weights_format: str,
                        stack: Any = None) -> Item:
        """One forward of the whole prompt of every sequence (``logits: all`` keeps every
        position's logits)."""
        prefill = forward_working_bytes(
            facts, batch=share.sequences, q_tokens=inference.prompt_tokens,
            kv_tokens=inference.prompt_tokens, dtype_bytes=dtype_bytes, kernel=kernel,
            logits_positions=(inference.prompt_tokens if inference.logits == "all" else 1),
            tp=share.tp, fused_moe=self.fused_moe, keeps_inputs_embeds=self.keeps_inputs_embeds,
            weights_format=weights_format)
        return Item("prefill_working", prefill.total_bytes, "estimated", ("prefill",),
                    WORKING_SOURCE, f"kernel {kernel}; " + prefill.formula)

    def decode_transients(self, facts: ModelFacts, *, inference: Inference, kv_bytes: int,
                          layer_fraction: Fraction) -> list[Item]:
        """``DynamicLayer.update`` grows K and V with ``torch.cat``: the old and the new tensor
        of one layer coexist briefly (half of one layer's K + V at full length)."""
        if self.kv_static(inference):
            return []
        lf = layer_fraction
        # the layers that hold keys and values (a hybrid's Mamba / linear-attention layers and
        # MLP-only blocks keep none: the KV bytes are the attention layers' alone)
        kv_layers = facts.architecture.num_layers - facts.architecture.cacheless_layers
        layers_here = max(1, -(-kv_layers * lf.numerator // lf.denominator))
        per_layer = kv_bytes // layers_here
        return [Item("kv_cache_growth_transient", per_layer // 2, "estimated", ("decode",),
                     "transformers DynamicLayer.update grows K and V with torch.cat: the old "
                     "and the new tensor of one layer coexist briefly",
                     f"one layer's K (or V) at full length: {kv_bytes} / {layers_here} "
                     "KV-holding layers on this GPU / 2")]

    def pool(self, *, inference: Inference, facts: ModelFacts, card: Card | None,
             compute_dtype: str, weights_bytes: int, items: list[Item], layout: KvLayout,
             sequences: int, sheet: Any = None, tp: int = 1
             ) -> tuple[PoolSplit | None, list[str]]:
        """No pool: transformers allocates as it goes."""
        return None, []

    def pool_items(self, items: list[Item], pool: PoolSplit, *, facts: ModelFacts,
                   compute_dtype: str, kv_needed: int) -> list[Item]:
        return items

    def pool_condition(self, pool: PoolSplit) -> PoolCondition:
        raise TypeError("transformers takes no pool at start: there is no pool to judge")


TRANSFORMERS = TransformersEngine()
