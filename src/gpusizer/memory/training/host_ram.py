"""Host RAM per node: what loading passes through it and what offload and paging keep there.

CONTRACT.md ``memory.host_ram_bytes``: the peak host memory per node the run needs, compared
with an offer's ``host_ram`` (per node). Two moments, never added:

- loading: the checkpoint's bytes (``memory.checkpoint``): safetensors are memory-mapped and
  every page passes through the page cache once, which the node's ranks share (a CPU copy per
  rank, as transformers makes when it loads without ``device_map``, is not counted);
- the steps: per GPU, what the placement keeps in host RAM (ZeRO-Offload's fp32 master copy,
  fp32 gradients and optimizer states, ZeRO-3 / FSDP parameter shards: ``memory.training``),
  plus bitsandbytes paged optimizer states (CUDA managed memory the driver may move to host
  RAM under pressure), × the GPUs of one node.

``host_ram_bytes`` = max(loading, steps); None when the checkpoint's size is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...model.facts import ModelFacts
from ...sheet import Sheet
from ..checkpoint import checkpoint_bytes
from ..items import Item

__all__ = ["HostRam", "host_ram"]


@dataclass(frozen=True)
class HostRam:
    """Host RAM one node needs.

    Attributes:
        bytes: max(loading, steps) per node, or None when the checkpoint's size is unknown.
        loading_bytes: the checkpoint's bytes, or None.
        steps_bytes: offloaded and paged bytes per node during the steps.
        formula: both terms with their numbers.
    """

    bytes: int | None
    loading_bytes: int | None
    steps_bytes: int
    formula: str


def host_ram(sheet: Sheet, facts: ModelFacts | None, items: list[Item],
             offloaded_per_gpu: int = 0, offloaded_text: str = "") -> HostRam:
    """Host RAM per node for ``sheet`` (module docstring).

    Args:
        items: the per-GPU items (their ``optimizer_states_paged`` may page to host RAM).
        offloaded_per_gpu: bytes each GPU's process keeps in host RAM (offload).
        offloaded_text: those terms in words.
    """
    per_node = sheet.placement.gpus // sheet.placement.nodes if sheet.task != "inference" else 1
    loading, how = checkpoint_bytes(sheet, facts)
    paged = sum(it.bytes or 0 for it in items if it.name == "optimizer_states_paged")
    steps = (offloaded_per_gpu + paged) * per_node
    terms = []
    if offloaded_per_gpu:
        terms.append(f"offloaded {offloaded_text or offloaded_per_gpu}")
    if paged:
        terms.append(f"paged optimizer states {paged} B")
    steps_text = (f"({' + '.join(terms)}) × {per_node} GPU(s) per node = {steps} B" if terms
                  else "nothing offloaded nor paged: 0 B")
    load_text = (f"checkpoint {loading} B ({how}), memory-mapped once per node" if loading
                 is not None else f"checkpoint size unknown ({how})")
    total = None if loading is None else max(loading, steps)
    return HostRam(total, loading, steps, f"max(loading: {load_text}; steps: {steps_text})")
