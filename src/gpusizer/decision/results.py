"""What the entry points return (``pipeline``), typed: one sheet's memory (``estimate``) and the
whole plan (``plan``). The report stage renders these; they live below it so that ``report``
never imports ``pipeline``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import __version__
from ..catalog.catalog_file import CatalogDiscrepancy, CatalogFile
from ..catalog.types import Card
from ..evidence import EvidenceSet
from ..memory.fit_rule import FitJudgement
from ..memory.items import MemoryEstimate
from ..model.facts import ModelFacts
from ..sheet import Sheet
from .campaign import Campaign
from .criteria import Criterion
from .invalidators import Invalidator
from .verdict import OfferDecision

if TYPE_CHECKING:
    from ..simulate.engine import SimulationResult

__all__ = ["EstimateResult", "PlanResult"]


@dataclass
class EstimateResult:
    """``gpusizer estimate``: the memory of one sheet, optionally against one card (``fit``
    is the memory criterion without evidence, ``judgement`` the fit rule's answer)."""

    sheet: Sheet
    facts: ModelFacts | None
    estimate: MemoryEstimate
    card: Card | None
    fit: Criterion | None = None
    judgement: FitJudgement | None = None


@dataclass
class PlanResult:
    """``gpusizer plan``: memory, every offer classified, and what could invalidate it."""

    sheet: Sheet
    sheet_sha256: str
    facts: ModelFacts | None
    estimate: MemoryEstimate
    decisions: list[OfferDecision]
    catalogs: list[CatalogFile]
    evidence: EvidenceSet
    checkpoint_bytes: int | None
    checkpoint_source: str
    invalidators: list[str] = field(default_factory=list)
    discrepancies: list[CatalogDiscrepancy] = field(default_factory=list)
    version: str = __version__
    simulations: dict[str, SimulationResult] = field(default_factory=dict)
    """``plan --simulate``: per canonical card name, the simulation under its rules."""
    invalidator_details: list[Invalidator] = field(default_factory=list)
    """``invalidators`` as records (what changes, by how much, its effect on the peak)."""
    campaign: Campaign | None = None
    """A sheet with variants: which variants each offer covers (``pipeline.campaign``)."""
