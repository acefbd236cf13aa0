"""The items the caching allocator reserves without handing them to a tensor (reserved minus
allocated): what ``torch.cuda.max_memory_reserved`` holds beyond ``max_memory_allocated``.

Both come from replaying the workload's allocations under the allocator's rules
(:mod:`.allocator`), never from a percentage:

- ``allocator_slack``: the resident tensors (weights; for single-GPU and DDP training also the
  gradients and optimizer states, one tensor per trainable tensor) allocated one after another
  and kept: 512 B rounding, 2 MiB rounding of the large ones' segments, the tails of the 2 MiB
  and 20 MiB segments the small and middle ones share;
- ``allocator_fragmentation``: shapes that change between steps. transformers' dynamic cache
  grows every full-attention layer's K and V by one token per decode step with ``torch.cat``
  (``cache_utils.DynamicLayer.update``), so the freed, shorter tensors leave blocks the next,
  longer request does not fit in. The item is the replay's peak held reservation minus its
  peak requested bytes; whole free segments, which an out-of-memory retry gives back to the
  driver, are not counted (the item formula says how large that cache can grow when the card
  has room).
"""

from __future__ import annotations

from ..units import MiB
from .allocator import (
    ALLOCATOR_SOURCE,
    cat_growth_reserved_bytes,
    resident_reserved_bytes,
)
from .items import Item

__all__ = ["allocator_slack_item", "kv_growth_fragmentation_item", "REPLAY_TENSOR_STEPS"]

REPLAY_TENSOR_STEPS = 100_000
"""Most tensor-steps (growing tensors × decode steps) a decode replay runs: about 0.2 s of
Python. Past it, each replayed step appends ``k`` tokens at once (``k`` the smallest that fits),
and the item's formula says so; this bounds the time, not the figure."""


def allocator_slack_item(tensor_sizes: list[tuple[int, int | tuple[int, ...]]],
                         phases: tuple[str, ...], *,
                         what: str = "weight tensors") -> Item:
    """Reserved minus requested bytes of the resident tensors, allocated in order and kept
    (:func:`.allocator.resident_reserved_bytes`).

    Args:
        tensor_sizes: ``(count, bytes)`` pairs of the resident tensors on this GPU (``bytes``
            a tuple: tensors allocated in turn, e.g. a packed weight and its scales).
        phases: phases the item is live in.
        what: the tensors, in words (for the formula).

    Returns:
        An ``allocator_slack`` item (holder ``allocator``).
    """
    reserved, requested = resident_reserved_bytes(tensor_sizes)
    tensors = sum(count * (len(size) if isinstance(size, tuple) else 1)
                  for count, size in tensor_sizes)
    return Item("allocator_slack", reserved - requested, "estimated", phases,
                ALLOCATOR_SOURCE + "; reserved vs allocated: docs 'CUDA semantics: memory "
                "management'",
                f"{tensors} {what} ({requested} B) replayed under the caching allocator's "
                f"rules: {reserved} B reserved - {requested} B requested "
                f"= {reserved - requested} B")


def kv_growth_fragmentation_item(*, tensors: int, bytes_per_token: int, prompt_tokens: int,
                                 new_tokens: int, whole_cache: bool = False) -> Item:
    """What the decode's ``torch.cat`` growth of the KV cache leaves reserved beyond its
    tensors: the replay's peak held reservation minus its peak requested bytes.

    Args:
        tensors: growing tensors on this GPU (K and V of each full-attention layer).
        bytes_per_token: bytes one token adds to one of them (sequences × KV heads × head_dim
            × dtype bytes).
        prompt_tokens: tokens each holds after prefill.
        new_tokens: decode steps.
        whole_cache: transformers' legacy tuple cache (before 4.36): every layer's longer
            copy is made before the shorter ones are freed.

    Returns:
        An ``allocator_fragmentation`` item (holder ``allocator``), live in ``decode``.
    """
    per_step = max(1, -(-tensors * new_tokens // REPLAY_TENSOR_STEPS))
    steps = -(-new_tokens // per_step)
    if per_step == 1:
        replay = cat_growth_reserved_bytes(tensors=tensors, bytes_per_token=bytes_per_token,
                                           start_tokens=prompt_tokens, steps=new_tokens,
                                           whole_cache=whole_cache)
        how = f"{new_tokens} decode steps of one token"
    else:
        # tokens are counted in units of per_step: the prompt rounded up to whole units
        replay = cat_growth_reserved_bytes(tensors=tensors,
                                           bytes_per_token=bytes_per_token * per_step,
                                           start_tokens=-(-prompt_tokens // per_step),
                                           steps=steps, whole_cache=whole_cache)
        how = (f"{steps} replayed steps of {per_step} tokens each (the replay is bounded to "
               f"{REPLAY_TENSOR_STEPS} tensor-steps; the prompt rounded up to whole steps)")
    frag = max(0, replay.max_held_bytes - replay.max_requested_bytes)
    cached = replay.max_reserved_bytes - replay.max_held_bytes
    return Item("allocator_fragmentation", frag, "estimated", ("decode",),
                ALLOCATOR_SOURCE + "; transformers cache_utils.DynamicLayer.update "
                "(torch.cat: the longer tensor is allocated, then the shorter freed)",
                f"{tensors} K/V tensors of {bytes_per_token} B per token growing from "
                f"{prompt_tokens} tokens over {how}, replayed under the caching allocator's "
                f"rules: peak held {replay.max_held_bytes} B - peak requested "
                f"{replay.max_requested_bytes} B = {frag} B (other allocations between the "
                f"layers are not replayed); whole free segments add up to "
                f"{cached / MiB:.0f} MiB more to max_memory_reserved when the card has room, "
                "given back on an out-of-memory retry (release_cached_blocks)")
