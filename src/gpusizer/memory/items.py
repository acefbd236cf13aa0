"""Typed values of the memory stage: an item, a phase, a note, and the whole estimate.

R8: each item says whether it is ``estimated``, ``simulated``, ``measured`` or ``declared``, where
its formula comes from, and in which phases it is live. An item whose size cannot be known has
``bytes = None`` and an ``unknown_reason``; it is never counted as zero. Allocated and reserved
peaks are never added, and the declared reserve is never added to a peak.

Item names come from one table (:data:`ITEM_KINDS`), notes carry a code from one table
(:data:`NOTE_CODES`), and a :class:`MemoryEstimate` derives its totals when it is made, so
estimate, simulate and measure cannot build one inconsistently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .intervals import SHARDED_ITEMS, SpreadClass, figure_interval

if TYPE_CHECKING:
    from ..sheet import Sheet
    from .engines.base import PoolSplit
    from .training import TrainingSummary

__all__ = ["Provenance", "ItemName", "ItemKind", "ITEM_KINDS", "NoteCode", "NOTE_CODES", "Note",
           "Item", "Phase", "MemoryEstimate", "phase_peaks", "INFERENCE_PHASES",
           "TRAINING_PHASES", "ONE_SHOT_PHASES", "required_phases"]

Provenance = Literal["estimated", "simulated", "measured", "declared"]

INFERENCE_PHASES = ("load", "prefill", "decode")
TRAINING_PHASES = ("load", "forward", "backward", "optimizer_step", "validation", "export")
ONE_SHOT_PHASES = frozenset(INFERENCE_PHASES + TRAINING_PHASES) - {"forward", "backward"}
"""Phases a run records once per GPU; forward and backward repeat once per microbatch
(gradient accumulation)."""


def required_phases(sheet: Sheet) -> tuple[str, ...]:
    """The phases of one full cycle of the sheet's task, in order.

    ``INFERENCE_PHASES`` for inference; ``TRAINING_PHASES`` for lora / qlora / full, without
    ``export`` when ``training.export`` is ``none`` (nothing is written).
    """
    if sheet.task == "inference":
        return INFERENCE_PHASES
    if sheet.training is not None and sheet.training.export == "none":
        return TRAINING_PHASES[:-1]
    return TRAINING_PHASES


ItemName = Literal[
    "weights", "quantization_metadata", "lora_adapters", "prepare_kbit_upcast", "rotary_cache",
    "buffers", "kv_cache", "gradients", "optimizer_states", "optimizer_states_paged",
    "ddp_gradient_buckets", "cuda_context", "cublas_workspace", "nccl_buffers",
    "allocator_slack", "load_conversion_transient", "prefill_working", "decode_working",
    "kv_cache_growth_transient", "activations", "logits", "autocast_weight_copies",
    "backward_working", "optimizer_step_temporary", "validation_working", "export_transient",
    "zero_reduce_bucket", "fsdp_gathered_layers", "temporaries", "master_weights",
    "master_gradients", "zero3_gathered_parameters",
    "int4_kernel_scratch", "int4_dequant_transient",
    "recurrent_state",
    "modules_to_save", "adapter_buffers", "adapter_state", "adapter_activations",
    "allocator_fragmentation",
]
"""Every item name estimate, simulate and measure write (the JSON ``memory.items[].name``)."""


@dataclass(frozen=True, slots=True)
class ItemKind:
    """What an item name stands for.

    Attributes:
        holder: ``torch`` when tensors hold it through PyTorch's caching allocator (counted in
            ``peak_bytes``); ``allocator`` when the caching allocator reserves it without
            handing it to a tensor (rounding, segment tails, blocks it cannot reuse: counted in
            ``reserved_peak_bytes`` and ``device_peak_bytes``, not in ``peak_bytes``);
            ``non_torch`` when it lies outside the allocator (``device_peak_bytes`` only).
        role: ``parameter`` (model or adapter tensors and their fixed companions), ``state``
            (held across steps or requests: KV cache, gradients, optimizer states, buffers,
            driver and library memory) or ``working`` (made and freed within a phase).
        lower_bound: the words ``lower_bound_covers`` uses when the item may count in a
            certain lower bound (held, once made, through the phase the bound is taken at, with
            the other such items), or None when it may not.
    """

    holder: Literal["torch", "allocator", "non_torch"]
    role: Literal["parameter", "state", "working"]
    lower_bound: str | None = None
    spread: SpreadClass | None = None

    def spread_class(self, *, training: bool) -> SpreadClass:
        """The item's spread class (``memory.intervals``): ``spread`` when set; else made and
        freed within a phase (``working`` role, PyTorch) → ``activations`` in training and
        ``working`` in inference; reserved by the caching allocator beyond its tensors →
        ``fragmentation``; outside PyTorch → ``non_torch``; the rest is shapes × dtype bytes →
        ``exact``."""
        if self.spread is not None:
            return self.spread
        if self.holder == "allocator":
            return "fragmentation"
        if self.holder == "non_torch":
            return "non_torch"
        if self.role == "working":
            return "activations" if training else "working"
        return "exact"


_T, _A, _N = "torch", "allocator", "non_torch"
ITEM_KINDS: dict[ItemName, ItemKind] = {
    "weights": ItemKind(_T, "parameter", "weights"),
    "quantization_metadata": ItemKind(_T, "parameter", "weights"),
    "lora_adapters": ItemKind(_T, "parameter", "LoRA adapters"),
    "prepare_kbit_upcast": ItemKind(_T, "parameter"),
    "rotary_cache": ItemKind(_T, "state"),
    "buffers": ItemKind(_T, "state"),
    "kv_cache": ItemKind(_T, "state", "KV cache"),
    "recurrent_state": ItemKind(_T, "state", "recurrent state"),
    "gradients": ItemKind(_T, "state", "gradients"),
    "optimizer_states": ItemKind(_T, "state", "optimizer states"),
    "optimizer_states_paged": ItemKind(_N, "state", spread="exact"),
    "ddp_gradient_buckets": ItemKind(_T, "state"),
    "cuda_context": ItemKind(_N, "state"),
    "cublas_workspace": ItemKind(_T, "state"),
    "nccl_buffers": ItemKind(_N, "state"),
    "allocator_slack": ItemKind(_A, "state"),
    "allocator_fragmentation": ItemKind(_A, "working"),
    "load_conversion_transient": ItemKind(_T, "working"),
    "prefill_working": ItemKind(_T, "working"),
    "decode_working": ItemKind(_T, "working"),
    "kv_cache_growth_transient": ItemKind(_T, "working"),
    "activations": ItemKind(_T, "working"),
    "logits": ItemKind(_T, "working"),
    "autocast_weight_copies": ItemKind(_T, "working"),
    "backward_working": ItemKind(_T, "working"),
    "optimizer_step_temporary": ItemKind(_T, "working"),
    "validation_working": ItemKind(_T, "working"),
    "export_transient": ItemKind(_T, "working"),
    "zero_reduce_bucket": ItemKind(_T, "working"),
    "fsdp_gathered_layers": ItemKind(_T, "working"),
    "temporaries": ItemKind(_T, "working"),
    "master_weights": ItemKind(_T, "state", "master weights"),
    "master_gradients": ItemKind(_T, "working"),
    "zero3_gathered_parameters": ItemKind(_T, "working"),
    "int4_kernel_scratch": ItemKind(_T, "state"),
    "int4_dequant_transient": ItemKind(_T, "working"),
    # PEFT methods (memory/training/peft_methods.py)
    "modules_to_save": ItemKind(_T, "parameter", "trained module copies"),
    "adapter_buffers": ItemKind(_T, "parameter", "adapter buffers"),
    "adapter_state": ItemKind(_T, "state", "adapter state"),
    "adapter_activations": ItemKind(_T, "working"),
}
"""Item name → kind. Reserved by the caching allocator but held by no tensor (reserved minus
allocated): the allocator slack of the resident tensors and the fragmentation that shapes
changing between steps leave (``memory.allocator``). Outside PyTorch's allocator: the CUDA
context and NCCL buffers (driver and library memory) and bitsandbytes' paged states (CUDA
managed memory). ``quantization_metadata`` counts as weights in ``lower_bound_covers``."""

NoteCode = Literal[
    "card", "card_rule", "no_card", "bare_count", "theoretical_format", "format_kept_dense",
    "format_exclusions", "load_conversion", "no_inference_block", "engine", "training", "pool",
    "pool_peak_is_budget", "simulation", "not_simulated", "no_arithmetic", "stack_rule",
]

NOTE_CODES: dict[NoteCode, str] = {
    "card_rule": "a GPU rule of the card changed what runs (kernel, dtype) from the sheet's choice",
    "card": "the card whose rules were applied, and what they made run",
    "no_card": "no card given: no card-specific rule was applied",
    "bare_count": "a bare parameter count: what the weights-only figure leaves out",
    "theoretical_format": "a theoretical format row (no metadata, nothing kept in 16 bit)",
    "format_kept_dense": "a format's kernels leave some tensors in the compute dtype",
    "format_exclusions": "modules a checkpoint's exclusion list names that the sizing could not "
                         "match (counted in the format)",
    "load_conversion": "the weights are converted from the stored format while loading",
    "no_inference_block": "an inference sheet without an inference block: weights only",
    "engine": "what the inference engine does with the sheet's asks (e.g. a KV cache format "
              "it does not ship)",
    "training": "what a training estimate rests on or leaves out (memory.training)",
    "pool": "how a serving engine's pool split was made and what it leaves out",
    "pool_peak_is_budget": "a serving engine's peaks are its budget (total × "
                           "gpu_memory_utilization)",
    "simulation": "a decision the simulation took (kernel, LoRA targets, layouts, steps)",
    "not_simulated": "what the simulation does not run or cannot see",
    "no_arithmetic": "no family counts this model_type: the items come from the simulation "
                     "(transformers' own model code on fake tensors), not from arithmetic",
    "stack_rule": "a rule of the sheet's library versions (stack block) other than the pinned "
                  "versions' changed what is sized (gpusizer.stack)",
}
"""Note code → what notes of that code say. Code branches on the code, never on the text."""


@dataclass(frozen=True, slots=True)
class Note:
    """A note on an estimate: a rule applied or what lies outside the calculation (R5).

    Attributes:
        code: its kind, from :data:`NOTE_CODES` (what code may test).
        text: the sentence the reports print (the JSON ``notes`` list holds these texts).

    Raises:
        ValueError: a code outside :data:`NOTE_CODES`.
    """

    code: NoteCode
    text: str

    def __post_init__(self) -> None:
        if self.code not in NOTE_CODES:
            raise ValueError(f"note code {self.code!r} is not in NOTE_CODES")

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Item:
    """One memory item, per GPU.

    Attributes:
        name: one of :data:`ITEM_KINDS` (``weights``, ``kv_cache``, ``cuda_context``…).
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

    Raises:
        ValueError: a name outside :data:`ITEM_KINDS`, or ``non_torch`` not what its kind says.
    """

    name: ItemName
    bytes: int | None
    provenance: Provenance
    phases: tuple[str, ...]
    source: str
    formula: str = ""
    unknown_reason: str | None = None
    non_torch: bool = False
    phase_bytes: dict[str, int] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        kind = ITEM_KINDS.get(self.name)
        if kind is None:
            raise ValueError(f"item name {self.name!r} is not in ITEM_KINDS")
        if self.non_torch != (kind.holder == "non_torch"):
            raise ValueError(f"item {self.name!r} is held by {kind.holder}; got non_torch="
                             f"{self.non_torch}")

    @property
    def holder(self) -> str:
        """Who holds it: ``torch`` (tensors), ``allocator`` (reserved, held by no tensor) or
        ``non_torch`` (:class:`ItemKind`)."""
        return ITEM_KINDS[self.name].holder

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
        device_peak_bytes: ``reserved_peak_bytes`` plus the live non-PyTorch items (predicts
            nvidia-smi used memory), None if any live item is unknown.
        known_bytes: sum of the known live items (a lower bound when some are unknown).
        items: names of the live items.
        unknown_items: names of live items of unknown size.
        reserved_peak_bytes: ``peak_bytes`` plus the live allocator items (predicts
            ``torch.cuda.max_memory_reserved`` for the phase), None if one of them is unknown.
        class_bytes: bytes live in the phase per spread class (``memory.intervals``).
        peak_interval_bytes: ``[low, high]`` of ``peak_bytes`` (the nominal 90 % range given
            the measured spread of its items' classes), or None (unknown or uncalibrated).
        reserved_peak_interval_bytes, device_peak_interval_bytes: the same for
            ``reserved_peak_bytes`` and ``device_peak_bytes``.
    """

    name: str
    peak_bytes: int | None
    device_peak_bytes: int | None
    known_bytes: int
    items: tuple[str, ...]
    unknown_items: tuple[str, ...] = ()
    reserved_peak_bytes: int | None = None
    class_bytes: dict[str, int] = field(default_factory=dict, compare=False)
    peak_interval_bytes: tuple[int, int] | None = None
    reserved_peak_interval_bytes: tuple[int, int] | None = None
    device_peak_interval_bytes: tuple[int, int] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class MemoryEstimate:
    """Everything the memory stage says about one sheet (and optionally one card), per GPU.

    Made by estimate, simulate and measure alike from the items and phase names; the phase
    peaks and every total are derived when it is made (never passed in), so two producers cannot
    reduce them differently.

    Attributes (given):
        weights_bytes: "weights only" per GPU (R5, R7).
        reserve_bytes: the user's declared reserve (R16: the user's choice, never derived).
        items: the item table.
        phase_names: the phases to sum, in order (a phase where nothing is live is left out).
        lower_bound_items: the items the certain lower bound sums, each of a kind that may count
            (``ITEM_KINDS[name].lower_bound``): parameters, and the KV cache of the required
            tokens (inference) or gradients and optimizer states (training). Usually taken from
            ``items``; with a preallocated pool (vLLM), the workload's own KV cache, not the pool.
        lower_bound_phase: the phase the lower bound is read at (``Item.bytes_in``): where all
            of ``lower_bound_items`` are live (``decode``; ``optimizer_step``).
        pool: the pool a serving engine takes at start (``engines.PoolSplit``, with a card),
            else None.
        notes: rules applied and what lies outside the calculation (R5).
        card: the card's canonical name the GPU rules came from, or None.
        gpus: GPUs of the placement; every figure is per GPU.
        weights_format: the format the weights really have on the GPU (after card rules).
        stored_format: the checkpoint's stored format (None for a bare count).
        training: what a training estimate rests on, or None for inference.
        host_ram_bytes: host RAM per node the run needs (loading, offload, paged states:
            ``memory.training.host_ram``), or None when unknown or not computed.
        host_ram_formula: how ``host_ram_bytes`` was made, with its numbers.

    Attributes (derived):
        phases: :func:`phase_peaks` of ``items`` over ``phase_names``.
        envelope_bytes: the seed's "indicative envelope" = weights_bytes + reserve_bytes.
        peak_bytes: largest phase peak of PyTorch items (predicts max_memory_allocated), or None
            when a phase peak is unknown; with a vLLM pool, vLLM's budget (CONTRACT.md: vLLM
            takes its whole pool at start).
        reserved_peak_bytes: largest phase peak of tensors and allocator items (predicts
            max_memory_reserved; between peak_bytes and device_peak_bytes, never added to
            either), or None; with a vLLM pool, its budget.
        device_peak_bytes: largest phase peak of reserved and live non-PyTorch items
            (predicts nvidia-smi), or None; with a vLLM pool, its budget.
        conservative_envelope_bytes: sum of every live item's maximum — a conservative
            envelope, never a peak (R8); None if a live item is unknown or no phase is summed
            (weights only).
        lower_bound_bytes: Σ ``bytes_in(lower_bound_phase)`` of the known
            ``lower_bound_items``: memory certainly held at once (used to exclude a card).
        lower_bound_covers: what ``lower_bound_bytes`` sums, in words.

    Raises:
        ValueError: a lower-bound item of a kind that may not count.
    """

    weights_bytes: int
    reserve_bytes: int
    items: tuple[Item, ...]
    phase_names: tuple[str, ...]
    lower_bound_items: tuple[Item, ...]
    lower_bound_phase: str
    pool: PoolSplit | None = None
    notes: tuple[Note, ...] = ()
    card: str | None = None
    gpus: int = 1
    weights_format: str = ""
    stored_format: str | None = None
    training: TrainingSummary | None = None
    host_ram_bytes: int | None = None
    host_ram_formula: str = ""
    phases: tuple[Phase, ...] = field(init=False)
    envelope_bytes: int = field(init=False)
    peak_bytes: int | None = field(init=False)
    reserved_peak_bytes: int | None = field(init=False)
    device_peak_bytes: int | None = field(init=False)
    conservative_envelope_bytes: int | None = field(init=False)
    lower_bound_bytes: int = field(init=False)
    lower_bound_covers: str = field(init=False)
    peak_interval_bytes: tuple[int, int] | None = field(init=False)
    reserved_peak_interval_bytes: tuple[int, int] | None = field(init=False)
    device_peak_interval_bytes: tuple[int, int] | None = field(init=False)

    def __post_init__(self) -> None:
        placed = getattr(self.training, "placement", None)
        phases = phase_peaks(self.items, self.phase_names, training=self.training is not None,
                             sharded=placed is not None and placed.states > 1)
        peaks = [p.peak_bytes for p in phases]
        reserveds = [p.reserved_peak_bytes for p in phases]
        devices = [p.device_peak_bytes for p in phases]
        if self.pool is not None:
            peak = reserved = device = self.pool.budget_bytes
            # the engine takes exactly its budget at start: no estimate error on it
            peak_iv = reserved_iv = device_iv = (peak, peak)
        else:
            peak = None if None in peaks else max(peaks, default=None)
            reserved = None if None in reserveds else max(reserveds, default=None)
            device = None if None in devices else max(devices, default=None)
            peak_iv = _peak_interval([p.peak_interval_bytes for p in phases], peak)
            reserved_iv = _peak_interval([p.reserved_peak_interval_bytes for p in phases],
                                         reserved)
            device_iv = _peak_interval([p.device_peak_interval_bytes for p in phases], device)
        live = [it.bytes for it in self.items if it.phases]
        counted: list[tuple[int, str]] = []
        for it in self.lower_bound_items:
            words = ITEM_KINDS[it.name].lower_bound
            if words is None:
                raise ValueError(f"item {it.name!r} may not count in a lower bound (ITEM_KINDS)")
            size = it.bytes_in(self.lower_bound_phase)
            if size:
                counted.append((size, words))
        derived = {
            "phases": phases, "envelope_bytes": self.weights_bytes + self.reserve_bytes,
            "peak_bytes": peak, "reserved_peak_bytes": reserved, "device_peak_bytes": device,
            "peak_interval_bytes": peak_iv, "reserved_peak_interval_bytes": reserved_iv,
            "device_peak_interval_bytes": device_iv,
            "conservative_envelope_bytes": None if not phases or None in live else sum(live),
            "lower_bound_bytes": sum(size for size, _ in counted),
            "lower_bound_covers": _in_words([words for _, words in counted]),
        }
        for name, value in derived.items():   # frozen: set once, here
            object.__setattr__(self, name, value)

    @property
    def note_texts(self) -> tuple[str, ...]:
        """The notes' texts, in order (the JSON ``notes`` list)."""
        return tuple(n.text for n in self.notes)

    def item(self, name: ItemName) -> Item:
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


def _in_words(words: list[str]) -> str:
    """``["weights", "weights", "KV cache"]`` → "weights and KV cache" (each once, in order)."""
    once = list(dict.fromkeys(words)) or ["nothing known"]
    return once[0] if len(once) == 1 else ", ".join(once[:-1]) + " and " + once[-1]


def _peak_interval(intervals: list[tuple[int, int] | None],
                   peak: int | None) -> tuple[int, int] | None:
    """The interval of a peak over phases (the largest phase figure): [max of the lows, max of
    the highs]; None when the peak or a phase's interval is unknown."""
    if peak is None or not intervals or None in intervals:
        return None
    return max(iv[0] for iv in intervals), max(iv[1] for iv in intervals)


def _spread_class(it: Item, training: bool, sharded: bool = False) -> SpreadClass:
    """A measured or declared size carries no estimate error (``exact``); an item a sharded
    placement divides is ``sharded``; else its kind's class."""
    if it.provenance in ("measured", "declared"):
        return "exact"
    if sharded and it.name in SHARDED_ITEMS:
        return "sharded"
    return ITEM_KINDS[it.name].spread_class(training=training)


def phase_peaks(items: tuple[Item, ...], phase_names: tuple[str, ...], *,
                training: bool = False, sharded: bool = False) -> tuple[Phase, ...]:
    """Sum what is live in each phase: tensors → ``peak_bytes``; with the allocator's items →
    ``reserved_peak_bytes``; all → ``device_peak_bytes`` (reserved + non-PyTorch); each with its
    interval (``memory.intervals``; ``training`` picks the working items' class).

    A phase with a live item of unknown size has a None peak (and a known lower bound).
    """
    out = []
    task = "training" if training else "inference"
    for name in phase_names:
        live = [it for it in items if name in it.phases]
        if not live:
            continue
        torch_sizes = [it.bytes_in(name) for it in live if it.holder == "torch"]
        reserved_sizes = [it.bytes_in(name) for it in live if not it.non_torch]
        all_sizes = [it.bytes_in(name) for it in live]
        unknown = tuple(it.name for it in live if it.bytes is None)
        peak = None if any(s is None for s in torch_sizes) else sum(torch_sizes)
        reserved = None if any(s is None for s in reserved_sizes) else sum(reserved_sizes)
        device = None if any(s is None for s in all_sizes) else sum(all_sizes)
        known = sum(s for s in all_sizes if s is not None)
        classes: dict[str, int] = {}
        for it in live:
            cls = _spread_class(it, training, sharded)
            classes[cls] = classes.get(cls, 0) + (it.bytes_in(name) or 0)
        out.append(Phase(name, peak, device, known, tuple(it.name for it in live), unknown,
                         reserved, classes, figure_interval(peak, classes, "allocated", task=task),
                         figure_interval(reserved, classes, "reserved", task=task),
                         figure_interval(device, classes, "device", task=task)))
    return tuple(out)
