"""Typed values of the memory stage: an item, a phase, and the whole estimate.

R8: each item says whether it is ``estimated``, ``simulated``, ``measured`` or ``declared``, where
its formula comes from, and in which phases it is live. An item whose size cannot be known has
``bytes = None`` and an ``unknown_reason``; it is never counted as zero. Allocated and reserved
peaks are never added, and the declared reserve is never added to a peak.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from .engines.base import PoolSplit

__all__ = ["Provenance", "Item", "Phase", "MemoryEstimate", "phase_peaks",
           "INFERENCE_PHASES", "TRAINING_PHASES"]

Provenance = Literal["estimated", "simulated", "measured", "declared"]

INFERENCE_PHASES = ("load", "prefill", "decode")
TRAINING_PHASES = ("load", "forward", "backward", "optimizer_step", "validation", "export")


@dataclass(frozen=True)
class Item:
    """One memory item, per GPU.

    Attributes:
        name: ``weights``, ``kv_cache``, ``cuda_context``…
        bytes: largest size over the phases it is live in (int bytes), or None when unknown.
        provenance: estimated | simulated | measured | declared.
        phases: phases in which the item is live (empty: not live, e.g. NCCL on one GPU).
        source: the formula's source (paper §, repository path, doc page).
        formula: the formula with this sheet's numbers, for the reader to re-check.
        unknown_reason: why ``bytes`` is None.
        non_torch: True for memory the PyTorch caching allocator does not hold (counted in
            ``device_peak_bytes``, not in ``peak_bytes``).
        phase_bytes: size in each phase where it differs from ``bytes`` (e.g. the KV cache holds
            the prompt at prefill and prompt + new tokens at decode).
    """

    name: str
    bytes: int | None
    provenance: Provenance
    phases: tuple[str, ...]
    source: str
    formula: str = ""
    unknown_reason: str | None = None
    non_torch: bool = False
    phase_bytes: dict[str, int] = field(default_factory=dict, hash=False, compare=False)

    def bytes_in(self, phase: str) -> int | None:
        """Size in ``phase`` (0 when not live there; None when unknown)."""
        if phase not in self.phases:
            return 0
        if self.bytes is None:
            return None
        return self.phase_bytes.get(phase, self.bytes)


@dataclass(frozen=True)
class Phase:
    """What is live at once in one phase, per GPU.

    Attributes:
        name: phase name.
        peak_bytes: sum of the PyTorch items live in the phase (predicts
            ``torch.cuda.max_memory_allocated`` for the phase), None if one of them is unknown.
        device_peak_bytes: ``peak_bytes`` plus the live non-PyTorch items (predicts nvidia-smi
            used memory), None if any live item is unknown.
        known_bytes: sum of the known live items (a lower bound when some are unknown).
        items: names of the live items.
        unknown_items: names of live items of unknown size.
    """

    name: str
    peak_bytes: int | None
    device_peak_bytes: int | None
    known_bytes: int
    items: tuple[str, ...]
    unknown_items: tuple[str, ...] = ()


@dataclass(frozen=True)
class MemoryEstimate:
    """Everything the memory stage says about one sheet (and optionally one card), per GPU.

    Attributes:
        weights_bytes: "weights only" per GPU (R5, R7).
        reserve_bytes: the user's declared reserve (R16: the user's choice, never derived).
        envelope_bytes: the seed's "indicative envelope" = weights_bytes + reserve_bytes.
        peak_bytes: largest phase peak of PyTorch items (predicts max_memory_allocated), or None.
        device_peak_bytes: peak phase plus live non-PyTorch items (predicts nvidia-smi), or None.
        conservative_envelope_bytes: sum of every item's maximum — a conservative envelope,
            never a peak (R8); None if an item is unknown.
        lower_bound_bytes: a certain lower bound per GPU: weights + KV cache of the required
            tokens (used to exclude a card), or weights alone without an inference block.
        items, phases: the item table and the phase peaks.
        pool: the pool a serving engine takes at start (``engines.PoolSplit``, with a card),
            else None.
        notes: rules applied and what lies outside the calculation (R5).
        card: the card's canonical name the GPU rules came from, or None.
        gpus: GPUs of the placement; every figure is per GPU.
        weights_format: the format the weights really have on the GPU (after card rules).
        stored_format: the checkpoint's stored format (None for a bare count).
        training: what a training estimate rests on (``memory.training.TrainingSummary``), or
            None for inference.
    """

    weights_bytes: int
    reserve_bytes: int
    envelope_bytes: int
    peak_bytes: int | None
    device_peak_bytes: int | None
    conservative_envelope_bytes: int | None
    lower_bound_bytes: int
    items: tuple[Item, ...]
    phases: tuple[Phase, ...]
    pool: PoolSplit | None = None
    notes: tuple[str, ...] = ()
    card: str | None = None
    gpus: int = 1
    weights_format: str = ""
    stored_format: str | None = None
    training: object | None = None

    @property
    def lower_bound_covers(self) -> str:
        """What ``lower_bound_bytes`` sums."""
        if self.training is not None:
            if getattr(self.training, "lora_targets", ()):
                return "weights, LoRA adapters, their gradients and optimizer states"
            return "weights, gradients and optimizer states"
        return "weights and KV cache"

    def item(self, name: str) -> Item:
        """The item called ``name`` (KeyError when absent)."""
        for it in self.items:
            if it.name == name:
                return it
        raise KeyError(name)

    @property
    def peak_phase(self) -> Phase | None:
        """The phase with the largest known device peak."""
        known = [p for p in self.phases if p.device_peak_bytes is not None]
        pool = known or list(self.phases)
        return max(pool, key=lambda p: (p.device_peak_bytes or p.known_bytes), default=None)


def phase_peaks(items: tuple[Item, ...], phase_names: tuple[str, ...]) -> tuple[Phase, ...]:
    """Sum what is live in each phase: PyTorch items → ``peak_bytes``; all → ``device_peak_bytes``.

    A phase with a live item of unknown size has a None peak (and a known lower bound).
    """
    out = []
    for name in phase_names:
        live = [it for it in items if name in it.phases]
        if not live:
            continue
        torch_sizes = [it.bytes_in(name) for it in live if not it.non_torch]
        all_sizes = [it.bytes_in(name) for it in live]
        unknown = tuple(it.name for it in live if it.bytes is None)
        peak = None if any(s is None for s in torch_sizes) else sum(torch_sizes)
        device = None if any(s is None for s in all_sizes) else sum(all_sizes)
        known = sum(s for s in all_sizes if s is not None)
        out.append(Phase(name, peak, device, known, tuple(it.name for it in live), unknown))
    return tuple(out)
