"""gpusizer as a Python library: one function per command, values in, typed results out.

    >>> import datetime as dt
    >>> from pathlib import Path
    >>> import gpusizer
    >>> report = gpusizer.plan(Path("examples/seed-7b-fp16.yaml"), today=dt.date(2026, 12, 1))
    >>> [(o["id"], o["verdict"]) for o in report.to_json()["offers"]]  # doctest: +SKIP

Each function reads its inputs first (``pipeline.read_sheet``, ``load_sheet_inputs``,
``load_plan_inputs``), then computes without reading a file (``pipeline.estimate``, ``plan``,
``alternatives``); the CLI runs the same functions. Inputs are told apart by their type:

- **sheet**: a mapping of sheet keys (what the YAML file holds), YAML text (a ``str`` is always
  text, never a path), a path (``os.PathLike``, e.g. ``pathlib.Path``) or a validated ``Sheet``.
  A relative ``model.path`` in it is read from ``base_dir``: by default the folder of a path
  sheet, and the working directory for the others.
- **card**: a canonical card name or alias (``"H100 SXM"``, ``"NVIDIA H100 80GB HBM3"``), or a
  ``Card``.
- **catalogs**: None (the bundled seed catalog); a sequence of mappings (the rows of one
  catalog, each in the YAML catalog's row shape: ``{"id", "provider", "card", "cards", …}``); or
  a sequence of catalogs, each a path (``.yaml``, ``.yml``, ``.csv`` or a SkyPilot ``vms.csv``),
  a text (YAML when its first line that is neither blank nor a ``#`` comment starts with ``-``
  or ``[``, CSV otherwise) or a sequence of rows. One path or one text alone is one catalog.
  A catalog given as text or rows is named ``catalogs[i]`` (rows alone: ``catalogs``).
- **evidence**: None, a folder path (``os.PathLike``) of ``*.json`` files, or a sequence of
  documents (mappings in the evidence file's shape, named ``evidence[i]``).
- **today**: the date schedules and deadlines are judged from (default: today).

Every result has ``to_json()``: the very document ``gpusizer <command> --format json`` prints, as
a ``dict`` of JSON values. Bad input raises the library's named errors (``gpusizer.errors``:
``SheetError``, ``CatalogError``, ``EvidenceError``, ``UnknownCardError`` …), each naming the
field; the CLI alone turns them into exit statuses.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from . import pipeline
from .catalog.card_table import CardTable
from .catalog.types import Card
from .decision.alternatives import AlternativesResult
from .decision.card_choice import CardsResult
from .errors import ArgumentError
from .pipeline import EstimateResult, FitAnswer, PlanResult, SheetSource

if TYPE_CHECKING:
    from .catalog.offers import CatalogSource
    from .evidence import EvidenceSource
    from .simulate.engine import SimulationResult

__all__ = ["estimate", "plan", "fit", "simulate", "alternatives", "cards", "EstimateReport",
           "PlanReport", "SimulationReport", "AlternativesReport", "CardsReport", "FitAnswer"]

CardLike = Union[str, Card]
"""A card: its canonical name or an alias, or the ``Card`` itself."""
Folder = Union[str, "os.PathLike[str]"]
"""A folder (``base_dir``): a path, given as ``str`` or ``os.PathLike``."""


@dataclass(frozen=True)
class EstimateReport:
    """What :func:`estimate` returns.

    Attributes:
        result: the sheet, the model's facts, the memory estimate (``result.estimate``: items,
            phases and peaks per GPU, bytes), the card and, with a card, the memory criterion
            on it (``result.fit``).
    """

    result: EstimateResult

    def to_json(self) -> dict[str, Any]:
        """``gpusizer estimate --format json``."""
        from .report.json_report import estimate_document
        return estimate_document(self.result)


@dataclass(frozen=True)
class PlanReport:
    """What :func:`plan` returns.

    Attributes:
        result: the memory estimate, every offer's decision (``result.decisions``: six
            criteria, verdict, rank), the catalogs and evidence used, what could invalidate it.
    """

    result: PlanResult

    def to_json(self) -> dict[str, Any]:
        """``gpusizer plan --format json`` (CONTRACT.md "JSON output")."""
        from .report.json_report import plan_document
        return plan_document(self.result)


@dataclass(frozen=True)
class SimulationReport:
    """What :func:`simulate` returns.

    Attributes:
        result: the simulated memory (``result.memory``, items ``simulated``), the estimate it
            is compared with and the difference (``result.comparison``).
    """

    result: SimulationResult

    def to_json(self) -> dict[str, Any]:
        """``gpusizer simulate --format json``."""
        from .report.simulation import simulate_document
        return simulate_document(self.result)


@dataclass(frozen=True)
class AlternativesReport:
    """What :func:`alternatives` returns.

    Attributes:
        result: the plan it starts from (``result.plan``) and, per offer that does not fit,
            the single changes that would make it fit (``result.offers``); none is applied.
    """

    result: AlternativesResult

    def to_json(self) -> dict[str, Any]:
        """``gpusizer alternatives --format json``."""
        from .report.alternatives_report import alternatives_document
        return alternatives_document(self.result)


@dataclass(frozen=True)
class CardsReport:
    """What :func:`cards` returns.

    Attributes:
        table: the card table the cards come from (``table.cards``: every card, in file order).
        result: with a sheet, every card's fit at 1, 2, 4 and 8 GPUs (``result.cards``: per card
            ``fewest_gpus`` and ``counts``, each with ``estimated_fit`` and ``headroom_bytes``
            per GPU, bytes; ``result.answer``: the fewest GPUs that fit), else None.
    """

    table: CardTable
    result: CardsResult | None

    def to_json(self) -> dict[str, Any]:
        """``gpusizer cards [SHEET] --format json`` (docs/contract-extensions.md)."""
        from .report.cards_report import card_table_document, cards_document
        if self.result is None:
            return card_table_document(self.table)
        return cards_document(self.result)


def _card(card: CardLike | None, *, required: bool = False) -> Card | None:
    """``card`` as a :class:`Card`.

    Raises:
        ArgumentError: neither a card name (str) nor a ``Card`` (None only where optional).
        UnknownCardError: a name that names no card.
    """
    if card is None and not required:
        return None
    if isinstance(card, Card):
        return card
    if not isinstance(card, str):
        raise ArgumentError(f"expected a card name (str) or a gpusizer Card, got "
                            f"{type(card).__name__}", field="card", value=card)
    from .catalog.cards import require_card
    return require_card(card)


def _today(today: dt.date | None) -> dt.date | None:
    """``today`` as a date (a ``datetime`` counts as its date).

    Raises:
        ArgumentError: anything else than None, a ``date`` or a ``datetime``.
    """
    if today is None:
        return None
    if isinstance(today, dt.datetime):
        return today.date()
    if isinstance(today, dt.date):
        return today
    raise ArgumentError(f"expected a datetime.date, got {type(today).__name__}", field="today",
                        value=today)


def _catalogs(catalogs):
    """``catalogs`` as given, checked for its kind: None (the bundled seed catalog), one row
    (a mapping), text, a path, or a non-empty sequence of those.

    Raises:
        ArgumentError: another kind, or an empty sequence (no offer to classify).
    """
    if catalogs is None or isinstance(catalogs, (str, os.PathLike, Mapping)):
        return catalogs
    if not isinstance(catalogs, Sequence) or isinstance(catalogs, (bytes, bytearray)):
        raise ArgumentError("expected catalog rows (mappings), catalog text (str) or paths, or a "
                            f"sequence of those; got {type(catalogs).__name__}",
                            field="catalogs", value=catalogs)
    if not catalogs:
        raise ArgumentError("an empty sequence gives no offer to classify; pass None for the "
                            "bundled seed catalog", field="catalogs", value=[])
    return catalogs


def _folder(base_dir: Folder | None) -> Path | None:
    return None if base_dir is None else Path(base_dir)


def estimate(sheet: SheetSource, *, card: CardLike | None = None,
             base_dir: Folder | None = None) -> EstimateReport:
    """Memory only: items, phases and peaks per GPU; with ``card``, the card's rules (kernels,
    dtypes) and the memory criterion on it (``gpusizer estimate``).

    Raises:
        SheetError: an invalid sheet, or one the model or card cannot run.
        UnknownCardError: ``card`` names no card (close matches listed).
        ModelError, UnknownArchitectureError, HubError: the model's facts.
    """
    s, folder = pipeline.read_sheet(sheet, base_dir=_folder(base_dir))
    c = _card(card)
    return EstimateReport(pipeline.estimate(pipeline.load_sheet_inputs(s, base_dir=folder),
                                            card=c))


def plan(sheet: SheetSource, *, catalogs: Sequence[CatalogSource] | CatalogSource | None = None,
         evidence: EvidenceSource | None = None, today: dt.date | None = None,
         base_dir: Folder | None = None, simulate: bool = False) -> PlanReport:
    """The main job: memory items and phases, every offer classified on six criteria, ranked
    (``gpusizer plan``). With ``simulate``, each known card's memory is also simulated (the
    simulate extra) and the memory criterion quotes both figures.

    Raises:
        SheetError, ModelError, UnknownArchitectureError, HubError: as :func:`estimate`.
        CatalogError: a bad catalog or row (its name, row and field), or no offer at all.
        EvidenceError: a malformed evidence document (its name and field).
        SimulateExtraMissing: ``simulate`` without torch, transformers and peft.
    """
    day = _today(today)
    s, folder = pipeline.read_sheet(sheet, base_dir=_folder(base_dir))
    inputs = pipeline.load_plan_inputs(s, catalogs=_catalogs(catalogs), evidence=evidence,
                                       base_dir=folder)
    return PlanReport(pipeline.plan(inputs, today=day, simulate=simulate))


def fit(sheet: SheetSource, *, card: CardLike, base_dir: Folder | None = None) -> FitAnswer:
    """The largest concurrency and context (inference), or microbatch and sequence length
    (training), that fit ``card`` with the sheet's margin (``gpusizer fit``).

    Raises:
        SheetError: an invalid sheet, a bare parameter count, or no inference/training block.
        UnknownCardError, ModelError, UnknownArchitectureError, HubError: as :func:`estimate`.
    """
    s, folder = pipeline.read_sheet(sheet, base_dir=_folder(base_dir))
    return pipeline.fit(pipeline.load_sheet_inputs(s, base_dir=folder),
                        _card(card, required=True))


def simulate(sheet: SheetSource, *, card: CardLike | None = None,
             base_dir: Folder | None = None) -> SimulationReport:
    """Run the model's transformers (and PEFT) code on fake tensors at the sheet's dimensions
    (``gpusizer simulate``; needs ``pip install "gpusizer[simulate]"``).

    Raises:
        SimulateExtraMissing: torch, transformers or peft is not installed.
        SimulationError, UnsupportedBySimulation: what the simulation cannot run (field named).
        SheetError, UnknownCardError, ModelError, HubError: as :func:`estimate`.
    """
    from .simulate import require_extra
    require_extra()
    s, folder = pipeline.read_sheet(sheet, base_dir=_folder(base_dir))
    c = _card(card)
    return SimulationReport(pipeline.simulate(pipeline.load_sheet_inputs(s, base_dir=folder),
                                              card=c))


def alternatives(sheet: SheetSource, *,
                 catalogs: Sequence[CatalogSource] | CatalogSource | None = None,
                 evidence: EvidenceSource | None = None, today: dt.date | None = None,
                 base_dir: Folder | None = None) -> AlternativesReport:
    """For each offer excluded on memory (or estimated not to fit), the single changes that
    would make it fit, each with its new peak and what it puts at risk; nothing is applied
    (``gpusizer alternatives``).

    Raises:
        As :func:`plan`.
    """
    day = _today(today)
    s, folder = pipeline.read_sheet(sheet, base_dir=_folder(base_dir))
    inputs = pipeline.load_plan_inputs(s, catalogs=_catalogs(catalogs), evidence=evidence,
                                       base_dir=folder)
    return AlternativesReport(pipeline.alternatives(inputs, today=day))


def cards(sheet: SheetSource | None = None, *, base_dir: Folder | None = None) -> CardsReport:
    """Every card of the card table with its estimated fit and headroom at 1, 2, 4 and 8 GPUs
    and the fewest GPUs of each that fit, under the sheet's multi-GPU strategy (else
    tensor-parallel for inference, fsdp for training); without a sheet, the card table alone
    (``gpusizer cards [SHEET]``). No catalog is read.

    Raises:
        ArgumentError: a sheet or ``base_dir`` of another kind, or ``base_dir`` without a sheet.
        SheetError, ModelError, UnknownArchitectureError, HubError: as :func:`estimate`.
    """
    from .sheet import Sheet
    if base_dir is not None and not isinstance(base_dir, (str, os.PathLike)):
        raise ArgumentError(f"expected a folder (str or os.PathLike), got "
                            f"{type(base_dir).__name__}", field="base_dir", value=base_dir)
    if sheet is not None and not isinstance(sheet, (Sheet, Mapping, str, os.PathLike)):
        raise ArgumentError("expected a sheet (a mapping, YAML text, a path or a Sheet) or None "
                            f"for the card table, got {type(sheet).__name__}", field="sheet",
                            value=sheet)
    table = pipeline.card_table()
    if sheet is None:
        if base_dir is not None:
            raise ArgumentError("base_dir is read only with a sheet", field="base_dir",
                                value=base_dir)
        return CardsReport(table, None)
    s, folder = pipeline.read_sheet(sheet, base_dir=_folder(base_dir))
    return CardsReport(table, pipeline.cards(pipeline.load_sheet_inputs(s, base_dir=folder),
                                             table=table))
