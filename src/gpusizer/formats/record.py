"""The record of one weight format: every fact gpusizer's stages need about it, in one value.

A stage asks the record (``fmt.bits``, ``fmt.metadata(...)``, ``fmt.on_card(...)``) instead of
keeping its own list of format names (torchtitan's one-converter-per-format pattern, see
``design-review.md`` d3). Records are built in the family modules (``dense``, ``bnb``, ``gptq``,
``fp8``, ``mxfp4``, ``theoretical``, ``nvfp4``) and listed in ``registry.FORMATS``.

Pure values and pure functions only: no torch, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .quant_config import QuantConfig, QuantParams, QuantSource

__all__ = ["Matrices", "Metadata", "NO_METADATA", "Fallback", "CardStep", "WeightFormat",
           "ceil_div", "ALL_ENGINES"]

ALL_ENGINES = "*"
"""Key of a per-engine mapping that applies to every engine not named in it."""


def ceil_div(a: int, b: int) -> int:
    """⌈a / b⌉ for non-negative integers (exact, no float)."""
    return -(-a // b)


@dataclass(frozen=True)
class Matrices:
    """The 2-D matrices a format packs, whole model (plain numbers, no model types).

    Attributes:
        shapes: ``(n, rows, cols)`` triples (``n`` matrices of ``rows`` = out_features ×
            ``cols`` = in_features), or None when a group's shapes are unknown.
        values: elements packed.
        matrices: number of matrices.
        rows: Σ out_features over the matrices.
        cols: Σ in_features over the matrices.
        largest: elements of the largest single tensor, 0 when unknown.
        hidden: the model's hidden size (a fallback group width when shapes are unknown).
    """

    shapes: tuple[tuple[int, int, int], ...] | None
    values: int
    matrices: int = 0
    rows: int = 0
    cols: int = 0
    largest: int = 0
    hidden: int = 0

    @classmethod
    def of(cls, groups: Iterable, hidden: int = 0) -> "Matrices":
        """The matrices of parameter groups (objects with ``count``, ``shapes``, ``matrices``,
        ``rows``, ``cols``, ``largest_matrix``, as ``model.facts.ParamGroup``)."""
        groups = list(groups)
        known = not any(g.count and not g.shapes for g in groups)
        return cls(tuple(s for g in groups for s in g.shapes) if known else None,
                   sum(g.count for g in groups), sum(g.matrices for g in groups),
                   sum(g.rows for g in groups), sum(g.cols for g in groups),
                   max((g.largest_matrix for g in groups), default=0), hidden)

    def per_matrix(self, fn: Callable[[int, int], int]) -> int | None:
        """Σ over the matrices of ``n × fn(rows, cols)``; None when the shapes are unknown."""
        if self.shapes is None:
            return None
        return sum(n * fn(r, c) for n, r, c in self.shapes)


@dataclass(frozen=True)
class Metadata:
    """Quantization metadata (scales, zero points, absmax, g_idx) of the packed matrices.

    Attributes:
        bytes: total bytes, whole model.
        formula: the formula with this model's numbers.
        elements: scale elements the checkpoint stores (what the Hub's ``safetensors.total``
            adds to the parameters), or None where the layout packs several per element.
    """

    bytes: int
    formula: str
    elements: int | None = None


NO_METADATA = Metadata(0, "none", 0)


@dataclass(frozen=True)
class Fallback:
    """What one engine runs on a card below the format's minimum compute capability.

    Attributes:
        runs: the format that runs instead (the checkpoint dequantized to it at load), or None:
            the same format keeps running through another kernel, with the same bytes.
        note: the sentence recorded on the estimate; ``{cc}`` becomes the card's ``major.minor``.
        floor: below this compute capability not even the fallback runs, or None.
        refusal: the sentence of the refusal below ``floor`` (``{cc}`` as in ``note``).
    """

    runs: str | None
    note: str
    floor: tuple[int, int] | None = None
    refusal: str = ""


@dataclass(frozen=True)
class CardStep:
    """One format on one card, as :meth:`WeightFormat.on_card` decides it.

    Attributes:
        runs: the format that really runs.
        note: what changed and why (empty when nothing changed).
        refusal: why nothing runs on this card, or None.
    """

    runs: str
    note: str = ""
    refusal: str | None = None


def _no_metadata(matrices: Matrices, quant: QuantParams) -> Metadata:
    return NO_METADATA


def _every_parameter(engine: str | None, stored: QuantConfig | None) -> frozenset[str] | None:
    return None


@dataclass(frozen=True)
class WeightFormat:
    """One weight format: its bits, layout, flags, card rules, successors and detector.

    Attributes:
        name: the sheet's spelling (``weights: nf4``).
        family: who defines the layout (``dense``, ``bitsandbytes``, ``gptq``, ``awq``, ``fp8``,
            ``mxfp4``, ``nvfp4``, ``theoretical``).
        bits: bits per packed value (metadata counted apart).
        layout: the stored layout in one line, with its source (quoted by refusals and notes).
        packs: ``packs(engine, stored)`` → the parameter roles the format packs (``linear``,
            ``expert_linear``, …), or None for every parameter (16/32-bit and the theoretical
            row); the other roles stay in the compute dtype. ``engine`` None: the checkpoint
            as stored on disk.
        packs_text: what it packs, in words (formulas and errors).
        metadata: ``metadata(matrices, quant)`` → the metadata bytes and formula.
        dense: a 16/32-bit format: computes in itself, no metadata, full fine-tuning trains it.
        theoretical: not a real format (the seed's 4-bit row); ``estimate_note`` says so.
        torch_dtype: config.json's ``torch_dtype`` spelling of the format, or None.
        packed_at_rest: a checkpoint stores it packed: loading cannot turn it into another
            format except by dequantizing (``dequantizable``).
        produced_at_load: transformers can produce it from a 16/32-bit checkpoint while loading
            (bitsandbytes, FineGrainedFP8); False for formats that need calibration offline.
        dequantizable: transformers dequantizes a checkpoint of it to 16/32 bit at load.
        min_compute_capability: what its kernels need, or None (runs everywhere).
        below_min: per engine (``ALL_ENGINES`` for the rest), what runs below that capability.
        refused_by: engines that run no checkpoint of it at all → why (a sentence).
        matmul_transient: ``transient(linears, t, b, tp)`` → extra bytes while one linear runs
            on ``t`` tokens in a ``b``-byte compute dtype, ``tp`` tensor-parallel ranks, or None
            (fused kernels dequantize tile by tile).
        lower: the formats one step lower in precision that ``alternatives`` tries, highest
            precision first.
        detect: the detector of its family: ``detect(source)`` → a ``QuantConfig`` (possibly
            for a sibling record of the family, or with ``fmt`` None and the reason), or None
            when the config is not this family's.
        side_files: files next to config.json its detector reads (ModelOpt's
            ``hf_quant_config.json``) → a function turning that file into a
            ``quantization_config`` mapping when config.json has none.
        sheet_keys: ``quantization.*`` keys that apply to it (``group_size``, ``double_quant``).
        qlora_base: QLoRA trains adapters on it (bitsandbytes 4-bit).
        outputs_follow_input_dtype: its linears return their input's dtype (bitsandbytes), so a
            fp32 residual stream makes fp32 projections.
        backward_dequant_transient: estimate counts one whole dequantized weight in the
            backward (bitsandbytes ``MatMul4Bit`` input gradient).
        merge_requantizes: a LoRA merge dequantizes, adds and re-quantizes (bitsandbytes).
        quality: how a quality run produces it (``dtype``, ``bitsandbytes``), or None: it needs
            its own pre-quantized checkpoint.
        quality_implementation: one line for quality evidence (what produced the numbers).
        throughput: the throughput risk ``alternatives`` quotes when it proposes this format.
        estimate_note: a note ``estimate`` adds whenever this format runs, or None.
        unpacked_experts_note: the note ``estimate`` adds when the engine leaves a MoE's
            routed experts unpacked though the format packs them as stored (``{dtype}``: the
            compute dtype they are counted in), or None.
    """

    name: str
    family: str
    bits: int
    layout: str
    packs: Callable[[str | None, QuantConfig | None], frozenset[str] | None] = _every_parameter
    packs_text: str = "parameters"
    metadata: Callable[[Matrices, QuantParams], Metadata] = _no_metadata
    dense: bool = False
    theoretical: bool = False
    torch_dtype: str | None = None
    packed_at_rest: bool = False
    produced_at_load: bool = True
    dequantizable: bool = False
    min_compute_capability: tuple[int, int] | None = None
    below_min: Mapping[str, Fallback] = field(default_factory=dict)
    refused_by: Mapping[str, str] = field(default_factory=dict)
    matmul_transient: Callable[[Matrices, int, int, int], int] | None = None
    lower: tuple[str, ...] = ()
    detect: Callable[[QuantSource], QuantConfig | None] | None = None
    side_files: Mapping[str, Callable[[Mapping], dict]] = field(default_factory=dict)
    sheet_keys: frozenset[str] = frozenset()
    qlora_base: bool = False
    outputs_follow_input_dtype: bool = False
    backward_dequant_transient: bool = False
    merge_requantizes: bool = False
    quality: str | None = None
    quality_implementation: str = ""
    throughput: str = ""
    estimate_note: str | None = None
    unpacked_experts_note: str | None = None

    @property
    def byte_width(self) -> int | None:
        """Bytes per value when a value is whole bytes (fp32 4, bf16 2, fp8 1), else None."""
        return self.bits // 8 if self.bits % 8 == 0 else None

    @property
    def value_bytes_text(self) -> str:
        """Bytes per value in words: ``2 B``, ``0.5 B``."""
        return f"{self.bits / 8:g} B"

    def packed_bytes(self, values: int) -> int:
        """⌈values × bits / 8⌉ bytes (exact integer; R7's 7e9 × 16 / 8 = 14e9)."""
        return ceil_div(values * self.bits, 8)

    def runs_natively(self, compute_capability: tuple[int, int] | None) -> bool:
        """True when its kernels run on a card of ``compute_capability`` (None: unknown card,
        assumed to)."""
        need = self.min_compute_capability
        return need is None or compute_capability is None or tuple(compute_capability) >= need

    def on_card(self, engine: str, compute_capability: tuple[int, int]) -> CardStep:
        """What ``engine`` runs for this format on a card of ``compute_capability``.

        Returns:
            A :class:`CardStep`: the same format, the fallback format with the note that says
            why, or a refusal.
        """
        cc = tuple(compute_capability)
        shown = f"{cc[0]}.{cc[1]}"
        if engine in self.refused_by:
            return CardStep(self.name, refusal=self.refused_by[engine])
        if self.runs_natively(cc):
            return CardStep(self.name)
        fb = self.below_min.get(engine) or self.below_min.get(ALL_ENGINES)
        if fb is None:
            return CardStep(self.name, refusal=f"{self.name} kernels need CC >= "
                            f"{self.min_compute_capability[0]}.{self.min_compute_capability[1]}"
                            f" (card {shown}) and {engine} has no fallback")
        if fb.floor is not None and cc < fb.floor:
            return CardStep(self.name, refusal=fb.refusal.format(cc=shown))
        return CardStep(fb.runs or self.name, fb.note.format(cc=shown))

    def engine_refusal(self, engine: str) -> str | None:
        """Why ``engine`` runs no checkpoint of this format, or None."""
        return self.refused_by.get(engine)
