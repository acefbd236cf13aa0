"""Bytes of the checkpoint on disk (R7: what must be downloaded and loaded), with how they were
obtained: exact from safetensors headers or the index when read, else the stored format's
arithmetic (``weights.weight_breakdown``), else the dense volume of a bare parameter count."""

from __future__ import annotations

from fractions import Fraction

from ..formats import quant_params
from ..model.config_only import ConfigOnlyFacts
from ..model.facts import ModelFacts
from ..sheet import Sheet
from .weights import dense_bytes, weight_breakdown

__all__ = ["checkpoint_bytes"]


def checkpoint_bytes(sheet: Sheet, facts: ModelFacts | ConfigOnlyFacts | None
                     ) -> tuple[int | None, str]:
    """Bytes of the weights on disk, with how they were obtained.

    Exact from safetensors headers / index when read; otherwise the stored format's arithmetic
    (``weights.weight_breakdown``); for a bare count, the dense volume in the sheet's format.
    """
    if facts is None:
        p = sheet.model.parameters
        return (dense_bytes(p, sheet.weights), f"dense volume {p} × {sheet.weights}") if p else \
            (None, "unknown")
    if facts.stored_bytes is not None:
        return facts.stored_bytes, facts.stored_bytes_source or "safetensors headers"
    if facts.architecture is None:  # model.config_only: no family counts its parameters
        return None, (f"no safetensors header read ({facts.stored_bytes_source}) and no "
                      f"arithmetic for model_type {facts.model_type!r}")
    fmt = facts.stored_format
    if fmt is None:
        return None, "the stored format is unknown"
    bd = weight_breakdown(facts, fmt, compute_dtype="bf16",
                          quant=quant_params(sheet.quantization, facts.quant, fmt,
                                             stored_format=facts.stored_format))
    total, how = bd.total_bytes, f"stored format {fmt} arithmetic (no safetensors header read)"
    arch = facts.architecture
    extra = arch.unloaded_checkpoint_layers
    if extra:
        # one more decoder layer per unloaded layer: the routed experts of an average MoE layer
        # plus the average rest of a layer, at the stored format's bytes per parameter
        per_param = Fraction(total, arch.total_parameters)
        experts = arch.parameters_by_role("expert_linear")
        body = arch.total_parameters - experts - arch.parameters_by_role("embedding", "lm_head")
        moe_layers = arch.moe.moe_layers if arch.moe and arch.moe.moe_layers else 1
        layer = Fraction(experts, moe_layers) + Fraction(body, arch.num_layers)
        total += int(extra * layer * per_param)
        how += (f" + {extra} layer(s) the checkpoint stores but transformers does not load "
                "(≈ one average MoE decoder layer each; a lower bound)")
    return total, how
