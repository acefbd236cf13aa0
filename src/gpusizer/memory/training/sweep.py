"""The backward sweep: what is live at each instant of backward, and the instant it peaks.

Backward starts with the logits gradient, then runs the decoder layers from the last to the
first: each releases its saved activations (with gradient checkpointing, after recomputing
them) as the gradients of its trained parameters appear, then ends with every gradient made. A
phase peak is the largest live total at one instant; a sum of each item's own maximum would
only be a conservative envelope.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["SweepPeak", "backward_sweep"]


@dataclass(frozen=True)
class SweepPeak:
    """What is live at one instant of the backward sweep (bytes).

    Attributes:
        at: the instant: ``start (logits gradient)``, ``layer i of L`` or
            ``end (all gradients)``.
        activations_bytes: saved activations (and checkpointed inputs) still held.
        logits_bytes: the loss's fp32 tensors (only at the start).
        gradients_bytes: parameter gradients made so far.
        working_bytes: the running layer's backward transients.
    """

    at: str
    activations_bytes: int
    logits_bytes: int
    gradients_bytes: int
    working_bytes: int

    @property
    def total_bytes(self) -> int:
        """Everything live at this instant."""
        return (self.activations_bytes + self.logits_bytes + self.gradients_bytes
                + self.working_bytes)


def backward_sweep(*, saved_bytes: Sequence[int], kept_bytes: Sequence[int],
                   checkpointing: bool, final_norm_bytes: int, logits_bytes: int,
                   prior_gradients_bytes: int, head_gradients_bytes: int,
                   layer_gradients_bytes: int, all_gradients_bytes: int,
                   working_bytes: int, recomputed_bytes: Sequence[int] | None = None,
                   offloaded: bool = False, forward_gpu_bytes: int | None = None,
                   prefetch: bool = False) -> SweepPeak:
    """The instant of backward with the largest live total (the first such, from the start).

    Args:
        saved_bytes: per layer, what autograd saves in it (recomputed under checkpointing).
        kept_bytes: per layer, what the forward left for backward (the saved activations, or
            the layer input under gradient checkpointing).
        checkpointing: gradient checkpointing (layer ``i`` holds its input and its
            recomputed activations while it runs).
        final_norm_bytes: what the final norm and lm_head keep (released at the start).
        logits_bytes: the loss's tensors while the logits gradient is made.
        prior_gradients_bytes: gradients held from earlier microbatches (accumulation), else 0.
        head_gradients_bytes: the lm_head gradient, made before the last layer runs.
        layer_gradients_bytes: the gradients one layer adds.
        all_gradients_bytes: every gradient, at the end.
        working_bytes: one layer's backward transients.
        recomputed_bytes: per layer, what backward recomputes while it runs (selective or
            every-k checkpointing); None: ``saved`` under ``checkpointing``, else nothing.
        offloaded: the kept bytes wait in host memory; layer ``i`` holds only its own (and
            layer ``i − 1``'s with ``prefetch``), the start ``forward_gpu_bytes``.
        forward_gpu_bytes: with ``offloaded``, the kept bytes still on the GPU at the start.
        prefetch: with ``offloaded``, the next layer's kept bytes come back ahead.

    Layer ``i`` (counted from 0) holds ``Σ kept[:i]`` plus its own ``saved[i]`` (+ ``kept[i]``
    under checkpointing) and ``max(prior, head + layer × (L − i))`` gradients. The lm_head weight
    gradient comes after log_softmax's backward has released its fp32 tensors (the cast to the
    compute dtype comes first), so it is not live at the start.
    """
    layers = len(saved_bytes)
    if recomputed_bytes is None:
        recomputed_bytes = saved_bytes if checkpointing else [0] * layers
    # a layer holds what it kept (its saved activations, or its checkpointed input) and what
    # it recomputes
    own_bytes = [k + r for k, r in zip(kept_bytes, recomputed_bytes)] if checkpointing or any(
        recomputed_bytes) else list(saved_bytes)
    start = forward_gpu_bytes if offloaded and forward_gpu_bytes is not None else sum(kept_bytes)
    instants = [SweepPeak("start (logits gradient)", start + final_norm_bytes,
                          logits_bytes, prior_gradients_bytes, 0)]
    for i in range(layers - 1, -1, -1):
        own = own_bytes[i]
        below = ((kept_bytes[i - 1] if i and prefetch else 0) if offloaded
                 else sum(kept_bytes[:i]))
        gradients = max(prior_gradients_bytes,
                        head_gradients_bytes + layer_gradients_bytes * (layers - i))
        instants.append(SweepPeak(f"layer {i + 1} of {layers}", below + own, 0,
                                  gradients, working_bytes))
    instants.append(SweepPeak("end (all gradients)", 0, 0, all_gradients_bytes, 0))
    return max(instants, key=lambda instant: instant.total_bytes)
