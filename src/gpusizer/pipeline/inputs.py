"""The input stage of every entry point: read the sheet, resolve its model's facts, read the
catalogs and the evidence. Everything after this stage computes from values (no file of the
user's is read)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from ..catalog.catalog_file import CatalogFile
from ..catalog.types import Offer
from ..errors import CatalogError, SheetError, UnknownArchitectureError
from ..evidence import EvidenceDoc, EvidenceSource, read_evidence
from ..model.config_only import ConfigOnlyFacts, config_only_for_sheet
from ..model.facts import ModelFacts
from ..model.resolve import facts_for_sheet
from ..sheet import Sheet, load_sheet, parse_sheet, parse_sheet_text

if TYPE_CHECKING:
    from ..catalog.offers import CatalogSource

__all__ = ["SheetSource", "read_sheet", "SheetInputs", "load_sheet_inputs", "PlanInputs",
           "load_plan_inputs"]


SheetSource = Union[Sheet, Mapping[str, Any], str, "os.PathLike[str]"]
"""A sheet as given: validated, a mapping of sheet keys, YAML text (a ``str`` is always text,
never a path) or a file (``os.PathLike``)."""


def read_sheet(source: SheetSource, *, base_dir: Path | None = None
               ) -> tuple[Sheet, Path | None]:
    """The validated sheet, and the folder a relative ``model.path`` in it is read from.

    Args:
        source: a :class:`Sheet` (as is), a mapping (``parse_sheet``), YAML text
            (``parse_sheet_text``) or a path (``load_sheet``).
        base_dir: the folder for relative paths in the sheet; for a path, default its folder;
            otherwise None (the working directory).

    Raises:
        SheetError: unreadable file, invalid YAML or field, or a source of another kind (field
            ``sheet``).
    """
    if isinstance(source, Sheet):
        return source, base_dir
    if isinstance(source, os.PathLike):
        path = Path(source)
        return load_sheet(path), (base_dir if base_dir is not None else path.parent)
    if isinstance(source, str):
        return parse_sheet_text(source), base_dir
    if isinstance(source, Mapping):
        return parse_sheet(dict(source)), base_dir
    raise SheetError("expected a sheet: a mapping of sheet keys, YAML text (str) or a file "
                     f"(os.PathLike, e.g. pathlib.Path), got {type(source).__name__}",
                     field="sheet")


@dataclass(frozen=True)
class SheetInputs:
    """A sheet with its model's facts: what :func:`estimate` and :func:`simulate` compute from.

    Attributes:
        sheet: the validated workload.
        facts: the model's facts (None for a bare ``model.parameters`` count).
        base_dir: the folder a relative ``model.path`` is read from (None: the working
            directory); only the simulation reads there again (the model's own code).
    """

    sheet: Sheet
    facts: ModelFacts | None
    base_dir: Path | None = None
    config_only: ConfigOnlyFacts | None = None


def load_sheet_inputs(sheet: Sheet, *, base_dir: Path | None = None) -> SheetInputs:
    """The input stage of estimate and simulate: resolve the model's facts (``fit`` still
    resolves its own, inside ``gpusizer.fit``); for a model_type no family knows, its
    config.json's storage facts instead (``config_only``: estimate simulates it).

    Raises:
        ModelError, HubError: see ``model.resolve.facts_for_sheet``.
    """
    facts, config_only = resolve_or_config_only(sheet, base_dir=base_dir)
    return SheetInputs(sheet, facts, base_dir, config_only)


def resolve_or_config_only(sheet: Sheet, *, base_dir: Path | None = None
                           ) -> tuple[ModelFacts | None, ConfigOnlyFacts | None]:
    """``(facts, None)`` for a model a family counts (or ``(None, None)`` for a bare count);
    ``(None, config-only facts)`` for a ``model_type`` no family knows, whose config.json is
    read again (``simulate.build.load_config_dict``: the folder, or the Hub cache the failed
    resolution just filled), with the safetensors headers where there are some.

    Raises:
        ModelError, HubError: see ``model.resolve.facts_for_sheet``.
    """
    try:
        return facts_for_sheet(sheet, base_dir=base_dir), None
    except UnknownArchitectureError:
        from ..simulate.build import load_config_dict  # no torch: it reads JSON
        cfg, where = load_config_dict(sheet, base_dir=base_dir)
    return None, config_only_for_sheet(sheet, cfg, where, base_dir)


@dataclass(frozen=True)
class PlanInputs:
    """Everything :func:`plan` computes from, already read and validated.

    Attributes:
        sheet, facts, base_dir: as :class:`SheetInputs`.
        offers: every offer of the catalogs (catalog order, then row order).
        catalogs: one record per catalog (name, SHA-256, kind, skipped rows, discrepancies).
        evidence: the evidence documents as given; :func:`plan` keeps those that match the
            sheet (``evidence.select_evidence``).
        skipped_evidence: ``(file, why)`` of the evidence folder's files that are not evidence
            (a quality lock), reported with the documents set aside.
        config_only: as :class:`SheetInputs` (a model_type no family knows: plan simulates it).
    """

    sheet: Sheet
    facts: ModelFacts | None
    offers: tuple[Offer, ...]
    catalogs: tuple[CatalogFile, ...]
    evidence: tuple[EvidenceDoc, ...] = ()
    base_dir: Path | None = None
    skipped_evidence: tuple[tuple[str, str], ...] = ()
    config_only: ConfigOnlyFacts | None = None


def load_plan_inputs(sheet: Sheet, *,
                     catalogs: Sequence[CatalogSource] | CatalogSource | None = None,
                     evidence: EvidenceSource | None = None,
                     base_dir: Path | None = None) -> PlanInputs:
    """The input stage of plan and alternatives: model facts, catalogs and evidence.

    Args:
        sheet: the validated sheet.
        catalogs: paths, texts or rows (``catalog.offers.load_catalogs``); None or empty → the
            bundled seed catalog. SkyPilot hourly prices are totalled over ``budget.days``.
        evidence: a folder path or documents (``evidence.read_evidence``); None → none.
        base_dir: the folder a relative ``model.path`` is read from.

    Raises:
        ModelError, HubError: the model's facts.
        CatalogError: a bad catalog, or catalogs that give no offer at all.
        EvidenceError: a malformed evidence document.
    """
    from ..catalog.offers import load_catalogs, load_default_catalog
    facts, config_only = resolve_or_config_only(sheet, base_dir=base_dir)
    days = sheet.budget.days if sheet.budget else None
    if catalogs:
        offers, files = load_catalogs(catalogs, days=days)
    else:
        offers, files = load_default_catalog()
    if not offers:
        raise CatalogError("the catalog(s) gave no offer to classify: expected at least one row",
                           field="--catalog", value=[f.path for f in files])
    skipped: list[tuple[str, str]] = []
    docs = read_evidence(evidence, skipped=skipped)
    return PlanInputs(sheet, facts, tuple(offers), tuple(files), docs, base_dir, tuple(skipped),
                      config_only)
