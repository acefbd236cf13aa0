"""Weights by format: packed data, quantization metadata, and modules kept in 16 bit.

R5: dense volume = parameter count × bits per value / 8. Real quantized formats also store
metadata (scales, zero points, absmax) and keep some modules in another format; both are counted
here as their own items instead of a hidden multiplier.

What each format packs, its bits and its metadata layout (with their sources) are the format's
record in ``gpusizer.formats``; this module applies them to a model's parameter groups. A
pre-quantized checkpoint's exclusion list (``modules_to_not_convert``, ``ignore``,
``exclude_modules``) is honoured module by module: a linear it names in every layer that carries
it is counted in the compute dtype.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, replace

from ..errors import SheetError
from ..formats import (FORMATS, Matrices, QuantConfig, QuantParams, module_excluded,
                       quant_params, weight_format)
from ..model.facts import LinearModule, ModelFacts

__all__ = ["DTYPE_BYTES", "WeightBreakdown", "FormatSplit", "dense_bytes", "weight_breakdown",
           "format_split", "resident_matrices", "checkpoint_quant_params"]

DTYPE_BYTES: dict[str, int] = {n: r.byte_width for n, r in FORMATS.items() if r.byte_width}
"""Bytes per value of the whole-byte formats (fp32 4, fp16 / bf16 2, fp8 / int8 1)."""


def dense_bytes(parameters: int, fmt: str) -> int:
    """R5/R7 dense volume: ``parameters × bits / 8`` bytes (exact integer; R7's 7e9 × 16/8 = 14e9).

    Raises:
        SheetError: unknown format.
    """
    return weight_format(fmt).packed_bytes(parameters)


@dataclass(frozen=True)
class WeightBreakdown:
    """Weight memory of one format, whole model (before any placement split).

    Attributes:
        packed_bytes: the quantized (or dense) values of the converted modules.
        kept_bytes: modules kept in the compute dtype (embeddings, lm_head, norms, biases, routers).
        metadata_bytes: scales / zero points / absmax / g_idx.
        formula: human text with this model's numbers.
        metadata_formula: the metadata formula with numbers.
        notes: what the sizing could not honour (exclusion patterns matching no module).
    """

    packed_bytes: int
    kept_bytes: int
    metadata_bytes: int
    formula: str
    metadata_formula: str
    notes: tuple[str, ...] = ()

    @property
    def total_bytes(self) -> int:
        return self.packed_bytes + self.kept_bytes + self.metadata_bytes


@dataclass(frozen=True)
class FormatSplit:
    """Which of a model's matrices a format packs, and which it keeps in the compute dtype.

    Attributes:
        every_parameter: the format stores every parameter itself (16/32-bit, theoretical).
        packed: the packed matrices (whole model).
        packed_shapes: per packed parameter group, ``(role, (n, rows, cols)…)`` of its packed
            matrices.
        kept_shapes: ``(role, n, rows, cols)`` matrices of packed roles the checkpoint keeps
            unquantized (its exclusion list).
        unmatched: exclusion patterns that name no module gpusizer knows.
    """

    every_parameter: bool
    packed: Matrices
    packed_shapes: tuple[tuple[str, tuple[tuple[int, int, int], ...]], ...]
    kept_shapes: tuple[tuple[str, int, int, int], ...] = ()
    unmatched: tuple[str, ...] = ()


_PARAM_ROLE = {"expert": "expert_linear", "router": "router", "lm_head": "lm_head"}
"""A module's role (``LinearModule.role``) → the role of the parameter group that holds it;
every other module is a decoder ``linear``."""


def _module_role(m: LinearModule) -> str:
    return _PARAM_ROLE.get(m.role, "linear")


def _excluded(facts: ModelFacts, stored: QuantConfig) -> tuple[Counter, tuple[str, ...]]:
    """Matrices the checkpoint keeps unquantized as ``{(role, rows, cols): n}``, and the
    patterns that match no module. A layer module counts when the exclusions name it
    (``model.layers.{i}.{path}``) in at least as many layers as carry it; stacked experts count
    per stored matrix (the ``converted_from`` tensors of each expert)."""
    out: Counter = Counter()
    used: set[str] = set()
    arch = facts.architecture
    for m in arch.modules:
        names = ["lm_head"] if m.path == "lm_head" else [
            f"model.layers.{i}.{m.path}" for i in range(max(1, arch.num_layers))]
        matched = 0
        for name in names:
            hits = [p for p in stored.excluded if module_excluded(name, (p,))]
            used.update(hits)
            matched += bool(hits)
        if matched < (1 if m.path == "lm_head" else m.count):
            continue
        split = max(1, len(m.converted_from))
        out[(_module_role(m), m.rows // split, m.cols)] += m.count * max(1, m.experts) * split
    return out, tuple(p for p in stored.excluded if p not in used)


def format_split(facts: ModelFacts, fmt: str, engine: str | None) -> FormatSplit:
    """What ``fmt`` packs of ``facts`` under ``engine`` (None: the checkpoint as stored).

    Raises:
        SheetError: unknown format.
    """
    # ModelFacts compares without its quantization config: the parsed one is part of the key
    return _format_split(facts, facts.quant, fmt, engine)


@functools.lru_cache(maxsize=64)
def _format_split(facts: ModelFacts, quant: QuantConfig | None, fmt: str,
                  engine: str | None) -> FormatSplit:
    rec = weight_format(fmt)
    stored = facts.quant if facts.stored_format == fmt else None
    roles = rec.packs(engine, stored)
    params = facts.architecture.params
    groups = list(params) if roles is None else [g for g in params if g.role in roles]
    excluded, unmatched = (_excluded(facts, stored) if stored is not None and stored.excluded
                           else (Counter(), ()))
    packed_groups, kept = [], []
    for g in groups:
        shapes, moved = [], []
        for n, r, c in g.shapes:
            take = min(n, excluded[(g.role, r, c)])
            excluded[(g.role, r, c)] -= take
            if n - take:
                shapes.append((n - take, r, c))
            if take:
                moved.append((g.role, take, r, c))
        kept += moved
        packed_groups.append(replace(
            g, shapes=tuple(shapes), count=g.count - sum(n * r * c for _, n, r, c in moved),
            matrices=g.matrices - sum(n for _, n, _, _ in moved),
            rows=g.rows - sum(n * r for _, n, r, _ in moved),
            cols=g.cols - sum(n * c for _, n, _, c in moved)) if moved else g)
    packed = Matrices.of(packed_groups, facts.architecture.hidden_size)
    packed_shapes = [(g.role, g.shapes) for g in packed_groups]
    return FormatSplit(roles is None, packed, tuple(packed_shapes), tuple(kept), unmatched)


def checkpoint_quant_params(facts: ModelFacts, fmt: str) -> QuantParams:
    """The parameters of ``fmt`` from the checkpoint alone (no sheet): its own values when it
    stores ``fmt``, else the defaults of ``gpusizer.formats``."""
    return quant_params(None, facts.quant, fmt, stored_format=facts.stored_format)


def weight_breakdown(facts: ModelFacts, fmt: str, *, compute_dtype: str,
                     quant: QuantParams | None = None,
                     engine: str | None = None) -> WeightBreakdown:
    """Weight memory of ``facts`` stored as ``fmt``.

    Args:
        facts: the model (parameter groups by role).
        fmt: a sheet weight format (not ``auto``).
        compute_dtype: dtype of the modules kept unquantized (``bf16``…).
        quant: group size, double quantization, fp8 block; None: the checkpoint's own values
            or the defaults (:func:`checkpoint_quant_params`).
        engine: the engine that loads it (bitsandbytes under transformers leaves stacked
            experts unquantized), or None for the checkpoint as stored.

    Returns:
        The breakdown in bytes (integers).

    Raises:
        SheetError: an unknown format, or one this model cannot take (mxfp4 on a model
            without routed experts).
    """
    rec = weight_format(fmt)
    quant = quant if quant is not None else checkpoint_quant_params(facts, fmt)
    split = format_split(facts, fmt, engine)
    total = facts.architecture.total_parameters
    if split.every_parameter:
        b = rec.packed_bytes(total)
        why = (" (theoretical: no metadata, no module kept in 16 bit)" if rec.theoretical else "")
        return WeightBreakdown(b, 0, 0, f"{total} parameters × {rec.value_bytes_text}{why}",
                               "none (theoretical)" if rec.theoretical else "none")
    m = split.packed
    if m.values == 0:
        raise SheetError(f"{fmt} quantizes {rec.packs_text} weights only; this model has none",
                         field="weights", value=fmt)
    kb = DTYPE_BYTES[compute_dtype]
    kept_n = total - m.values
    meta = rec.metadata(m, quant)
    notes = ()
    if split.unmatched:
        shown = ", ".join(split.unmatched[:5]) + (" …" if len(split.unmatched) > 5 else "")
        notes = (f"the checkpoint keeps {shown} unquantized ({facts.quant.source}) but they name "
                 f"no module gpusizer counts: any decoder linear among them is counted as "
                 f"{fmt} (an underestimate)",)
    return WeightBreakdown(rec.packed_bytes(m.values), kept_n * kb, meta.bytes,
                           f"{m.values} {rec.packs_text} values × {rec.value_bytes_text} + "
                           f"{kept_n} parameters kept in {compute_dtype} × {kb} B",
                           meta.formula, notes)


def resident_matrices(facts: ModelFacts, fmt: str, *, engine: str | None,
                      compute_dtype: str) -> list[tuple[str, int, int, int, float]]:
    """``(role, n, rows, cols, bytes per value)`` of every weight matrix on the GPU: the packed
    ones at the format's bytes per value (metadata apart), the others in the compute dtype."""
    split = format_split(facts, fmt, engine)
    per_value = weight_format(fmt).bits / 8
    if split.every_parameter:
        return [(g.role, n, r, c, per_value) for g in facts.architecture.params
                for n, r, c in g.shapes]
    kept = DTYPE_BYTES[compute_dtype]
    packed_roles = {role for role, _ in split.packed_shapes}
    out = [(role, n, r, c, per_value) for role, shapes in split.packed_shapes
           for n, r, c in shapes]
    out += [(role, n, r, c, kept) for role, n, r, c in split.kept_shapes]
    out += [(g.role, n, r, c, kept) for g in facts.architecture.params
            if g.role not in packed_roles for n, r, c in g.shapes]
    return out
