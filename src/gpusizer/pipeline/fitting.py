"""Inverse questions (``gpusizer fit``): the largest dimension whose estimated peak fits a card.

A dimension fits unless the fit rule (``memory.fit_rule.judge_fit``) says ``does_not_fit``:
device_peak_bytes + margin ≤ device_bytes (CONTRACT.md ``margin``), or for a serving engine its
pool holds the required sequences. An ``unknown`` judgement (an item of unknown size) counts as
fitting on its known part, so the answer is then an upper bound, and the notes say so. Peaks
grow monotonically with concurrency and length, so a binary search over the estimate finds the
boundary exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import SCHEMA_VERSION

from ..catalog.types import Card
from ..decision.search import largest_fitting
from ..errors import SheetError
from ..memory.estimate import estimate_memory
from ..memory.fit_rule import judge_on_card
from ..model.facts import ModelFacts
from ..sheet import Sheet
from .inputs import SheetInputs, load_sheet_inputs

__all__ = ["FitAnswer", "FitLimit", "fit_inference", "fit_training", "fit", "run_fit"]


@dataclass(frozen=True)
class FitLimit:
    """One inverse question under a machine key (``limits.<dimension>`` in the JSON).

    Attributes:
        question: the sentence that keys the same answer in :attr:`FitAnswer.answers`.
        largest: the largest value that fits, or None when not even the smallest does.
        required: the sheet's own value.
        unit: ``sequences`` or ``tokens``.
        device_peak_bytes: the estimated device peak per GPU at ``largest`` (bytes), or None.
        headroom_bytes: the fit rule's headroom at ``largest`` (bytes), or None.
        required_peak_bytes: the estimated device peak per GPU at ``required`` (bytes), or None.
    """

    question: str
    largest: int | None
    required: int
    unit: str
    device_peak_bytes: int | None = None
    headroom_bytes: int | None = None
    required_peak_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        """``{question, largest, required, unit, change, device_peak_bytes, headroom_bytes,
        peak_change_bytes}``: change = largest − required; peak_change_bytes = the device peak at
        largest − at required (null when either is unknown)."""
        peak, before = self.device_peak_bytes, self.required_peak_bytes
        return {"question": self.question, "largest": self.largest, "required": self.required,
                "unit": self.unit,
                "change": None if self.largest is None else self.largest - self.required,
                "device_peak_bytes": peak, "headroom_bytes": self.headroom_bytes,
                "peak_change_bytes": (peak - before if peak is not None and before is not None
                                      else None)}


@dataclass(frozen=True)
class FitAnswer:
    """The inverse questions answered for one sheet on one card (``gpusizer fit``).

    Attributes:
        card: the card's canonical name.
        device_bytes: the card's device memory (nvidia-smi total), bytes.
        margin: the sheet's margin as written (``"5%"``).
        answers: question → the largest value that fits (tokens, sequences or a microbatch), or
            None when not even the smallest does; in the order asked.
        notes: how the answers were searched and what they assume.
        limits: the same answers under machine keys (``concurrency``, ``prompt_tokens``,
            ``context_tokens``; ``microbatch``, ``sequence_length``, ``tokens_per_update``).
    """

    card: str
    device_bytes: int
    margin: str
    answers: dict[str, int | None]
    notes: tuple[str, ...]
    limits: dict[str, FitLimit] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """``gpusizer fit --format json``: ``{"schema_version", "card", "device_bytes",
        "margin", "answers", "limits", "notes"}`` (docs/json-output.md); ``answers`` keeps its
        sentence keys (schema_version 2), ``limits`` carries them under machine keys."""
        return {"schema_version": SCHEMA_VERSION, "card": self.card,
                "device_bytes": self.device_bytes, "margin": self.margin,
                "answers": dict(self.answers),
                "limits": {k: v.to_json() for k, v in self.limits.items()},
                "notes": list(self.notes)}


def fit_inference(sheet: Sheet, facts: ModelFacts | None, card: Card) -> FitAnswer:
    """Largest concurrency at the sheet's length, and largest length (prompt + new, with the
    sheet's new_tokens) at the sheet's concurrency, that fit ``card``.

    Raises:
        SheetError: the sheet has no inference block, or is a training sheet.
    """
    if sheet.task != "inference":
        raise SheetError("fit_inference needs task inference; use fit_training", field="task",
                         value=sheet.task)
    inf = sheet.inference
    if inf is None:
        raise SheetError("fit needs an inference block (prompt_tokens, new_tokens)",
                         field="inference")
    device, fits, unknown = _setup(facts, card)

    def with_inf(**kw) -> Sheet:
        return sheet.model_copy(update={"inference": inf.model_copy(update=kw)})

    conc = largest_fitting(1, 1 << 16, lambda c: fits(with_inf(concurrency=c)))
    window = facts.architecture.context_window_tokens or (1 << 22)
    max_prompt = window - inf.new_tokens
    prompt = None if max_prompt < 1 else largest_fitting(1, max_prompt,
                                                   lambda p: fits(with_inf(prompt_tokens=p)))
    context = prompt + inf.new_tokens if prompt is not None else None
    at_conc = with_inf(concurrency=conc) if conc is not None else None
    at_prompt = with_inf(prompt_tokens=prompt) if prompt is not None else None
    limits = {
        "concurrency": _limit("largest concurrency at the required length", conc,
                              inf.concurrency, "sequences", at_conc, sheet, facts, card),
        "prompt_tokens": _limit("largest prompt_tokens at the required concurrency and "
                                "new_tokens", prompt, inf.prompt_tokens, "tokens", at_prompt,
                                sheet, facts, card),
        "context_tokens": _limit("largest context (prompt + new tokens)", context,
                                 inf.tokens_per_sequence, "tokens", at_prompt, sheet, facts,
                                 card),
    }
    notes = [f"search bounded by the context window {window} tokens and 65536 sequences"]
    if conc is None:
        notes.append("not even one sequence of the required length fits; "
                     + _why(with_inf(concurrency=1), facts, card, device, "concurrency 1"))
    elif prompt is None:
        notes.append("not even a one-token prompt fits at this concurrency; "
                     + _why(with_inf(prompt_tokens=1), facts, card, device, "a 1-token prompt"))
    return _answer(sheet, card, device, notes, unknown, limits)


def fit_training(sheet: Sheet, facts: ModelFacts | None, card: Card) -> FitAnswer:
    """Largest microbatch at the sheet's sequence length, and longest sequence length at the
    sheet's microbatch, that fit ``card`` (gradient accumulation, which does not change the
    per-microbatch activations, is left as the sheet says; R12).

    Raises:
        SheetError: the sheet is not a training sheet, or has no architecture.
    """
    tr = sheet.training
    if tr is None:
        raise SheetError("fit_training needs a training block", field="training")
    device, fits, unknown = _setup(facts, card)

    def with_tr(**kw) -> Sheet:
        return sheet.model_copy(update={"training": tr.model_copy(update=kw)})

    mb = largest_fitting(1, 1 << 14, lambda m: fits(with_tr(microbatch=m)))
    window = facts.architecture.context_window_tokens or (1 << 22)
    seq = largest_fitting(1, window, lambda s: fits(with_tr(sequence_length=s)))
    at_mb = with_tr(microbatch=mb) if mb is not None else None
    limits = {
        "microbatch": _limit("largest microbatch at the required sequence_length", mb,
                             tr.microbatch, "sequences", at_mb, sheet, facts, card),
        "sequence_length": _limit("longest sequence_length at the required microbatch", seq,
                                  tr.sequence_length, "tokens",
                                  with_tr(sequence_length=seq) if seq is not None else None,
                                  sheet, facts, card),
        "tokens_per_update": _limit(
            "tokens per update at the largest microbatch",
            mb * tr.sequence_length * tr.gradient_accumulation if mb else None,
            tr.microbatch * tr.sequence_length * tr.gradient_accumulation, "tokens", at_mb,
            sheet, facts, card),
    }
    notes = [f"search bounded by the context window {window} tokens and 16384 sequences per "
             "microbatch",
             "to keep tokens per update when the microbatch shrinks, raise "
             "gradient_accumulation by the same factor (R12)"]
    if mb is None:
        notes.append("not even a microbatch of one sequence of the required length fits; "
                     + _why(with_tr(microbatch=1), facts, card, device, "microbatch 1"))
    elif seq is None:
        notes.append("not even one token per sequence fits at this microbatch; "
                     + _why(with_tr(sequence_length=1), facts, card, device, "1 token"))
    return _answer(sheet, card, device, notes, unknown, limits)


def run_fit(sheet: Sheet, card: Card, *, base_dir: Path | None = None) -> FitAnswer:
    """``load_sheet_inputs``, then :func:`fit` (``gpusizer fit``).

    Raises:
        ModelError, UnknownArchitectureError, HubError: the model's facts; SheetError: as
        :func:`fit`.
    """
    return fit(load_sheet_inputs(sheet, base_dir=base_dir), card)


def fit(inputs: SheetInputs, card: Card) -> FitAnswer:
    """The inverse questions for the sheet's task (inference or training); reads no file.

    Raises:
        SheetError: a bare parameter count (no architecture to search over), or a sheet
            without the block its task needs.
    """
    from .sizing import refuse_without_arithmetic
    refuse_without_arithmetic(inputs.config_only, "fit")
    if inputs.sheet.task == "inference":
        return fit_inference(inputs.sheet, inputs.facts, card)
    return fit_training(inputs.sheet, inputs.facts, card)


def _peak_on(s: Sheet | None, facts: ModelFacts, card: Card) -> tuple[int | None, int | None]:
    """(device peak, headroom) of ``s`` on ``card`` by the fit rule, or (None, None)."""
    if s is None:
        return None, None
    try:
        est = estimate_memory(s, facts, card=card)
    except SheetError:
        return None, None
    return est.device_peak_bytes, judge_on_card(est, card, s.margin).headroom_bytes


def _limit(question: str, largest: int | None, required: int, unit: str, at: Sheet | None,
           sheet: Sheet, facts: ModelFacts, card: Card) -> FitLimit:
    """A :class:`FitLimit`, with the device peak at ``largest`` (sheet ``at``) and at the
    sheet's own value."""
    peak, headroom = _peak_on(at, facts, card)
    return FitLimit(question, largest, required, unit, peak, headroom,
                    _peak_on(sheet, facts, card)[0])


def _answer(sheet: Sheet, card: Card, device: int, notes: list[str], unknown: set[str],
            limits: dict[str, FitLimit]) -> FitAnswer:
    """The answer: the sentence-keyed ``answers`` (schema_version 2) derived from ``limits``."""
    answers = {v.question: v.largest for v in limits.values()}
    notes = ["estimated peaks (arithmetic), not measured: confirm the boundary with "
             "`gpusizer measure`", *notes]
    if unknown:
        notes.append("upper bounds: items of unknown size (" + ", ".join(sorted(unknown))
                     + ") were left out of the peaks")
    return FitAnswer(card.name, device, str(sheet.margin), answers, tuple(notes), limits)


def _why(smallest: Sheet, facts, card: Card, device: int, what: str) -> str:
    """Why the smallest dimension does not fit, in figures: for a serving engine that takes
    its pool at start, the engine's own reason (budget vs weights + activation + non-torch, or
    KV tokens vs one sequence); else the device peak + margin vs the device."""
    from ..units import fmt_bytes
    try:
        est = estimate_memory(smallest, facts, card=card)
    except SheetError as exc:
        return f"at {what}: {exc.reason}"
    if est.pool is not None:  # a serving engine's own start-up rule decides (memory.engines)
        return f"at {what}: " + judge_on_card(est, card, smallest.margin).reason
    peak = est.device_peak_bytes
    shown = (f"the estimated device peak is {fmt_bytes(peak)}" if peak is not None else
             f"the known part of the peak is {fmt_bytes(max(p.known_bytes for p in est.phases))}")
    return (f"at {what} {shown} + margin {fmt_bytes(smallest.margin.of(device))} vs the device's "
            f"{fmt_bytes(device)}; the certain lower bound alone ({est.lower_bound_covers}) is "
            f"{fmt_bytes(est.lower_bound_bytes)}")


def _setup(facts: ModelFacts | None, card: Card):
    """The card's device bytes and the fits predicate for one model.

    Raises:
        SheetError: a bare parameter count (no architecture).
    """
    if facts is None:
        raise SheetError("fit needs the architecture (model.id or model.path), not a bare count",
                         field="model.parameters")
    device = int(card.device_bytes.value)
    fits, unknown = _fits_card(facts, card)
    return device, fits, unknown


def _fits_card(facts, card: Card):
    """A predicate "the fit rule does not say does_not_fit on ``card``", and the set of
    unknown items it met (an ``unknown`` judgement fits on its known part: an upper bound; a
    ``borderline`` one fits when its point figure does, and the answer stays an estimate)."""
    unknown: set[str] = set()

    def fits(s: Sheet) -> bool:
        try:
            est = estimate_memory(s, facts, card=card)
        except SheetError:
            return False
        judgement = judge_on_card(est, card, s.margin)
        unknown.update(judgement.unknown_items)
        if judgement.state == "borderline":   # its range straddles the card: the point decides
            return judgement.headroom_bytes is not None and judgement.headroom_bytes >= 0
        return judgement.state != "does_not_fit"

    return fits, unknown
