"""``gpusizer`` command line: parse, call one library function, render. Exit 0 ok, 2 invalid input,
1 otherwise. Heavy modules are imported inside the commands so ``--help`` and ``estimate`` start
fast; torch is never imported here."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from .errors import (ArgumentError, CatalogError, EvidenceError, GpusizerError,
                     MeasureUnsupportedError, ModelError, ModelNotFoundError, QualityError,
                     SheetError, shown_path)

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Size GPU memory for an LLM workload and classify GPU offers "
                       "(six criteria: acceptable / to confirm / exclude).")


class Fmt(str, Enum):
    md = "md"
    json = "json"
    html = "html"


class MemFmt(str, Enum):
    md = "md"
    json = "json"


EXIT_CODES: dict[type[GpusizerError], int] = {
    MeasureUnsupportedError: 2,  # a MeasureError, but the sheet asks what this machine cannot run
    ModelNotFoundError: 2,  # a HubError, but the id or revision is wrong
    ArgumentError: 2,
    SheetError: 2,  # and simulate's SimulationError, UnsupportedBySimulation
    ModelError: 2,
    CatalogError: 2,
    EvidenceError: 2,
    QualityError: 2,
    GpusizerError: 1,  # the Hub unreachable, a missing extra, a harness failure
}
"""The CLI's exit status per error class: 2 for invalid input (the user fixes the input), 1
otherwise. Subclasses come first: the first class the error is an instance of decides (as
huggingface_hub's ``cli/_errors.py`` maps errors to messages). Another front end keeps its own
table (a web page answers HTTP statuses)."""


def exit_code_for(exc: GpusizerError) -> int:
    """The exit status of ``exc`` from :data:`EXIT_CODES`."""
    return next(code for cls, code in EXIT_CODES.items() if isinstance(exc, cls))


def _fail(exc: GpusizerError, sheet: Path | None = None) -> None:
    """Print one line and exit with the error's status. A sheet problem found after reading
    (against the model, the card or a placement) is prefixed with the sheet's file, as the
    reading errors are."""
    where = f"{shown_path(sheet)}: " if (sheet is not None and isinstance(exc, SheetError)
                                         and exc.file is None) else ""
    typer.echo(f"error: {where}{exc}", err=True)
    raise typer.Exit(exit_code_for(exc))


def _write(text: str, out: Optional[Path]) -> None:
    if out is None:
        sys.stdout.write(text)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        typer.echo(f"error: -o/--out: cannot write {str(out)!r}: {exc.strerror}; expected a file "
                   "path in an existing folder", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote {out}", err=True)


_EXTENSIONS = {".json": "json", ".html": "html", ".htm": "html", ".md": "md"}


class RunInputs:
    """Every input of one run: files (sheet, catalogs, the quality corpus) and folders whose
    files are read (the evidence folder's ``*.json``, the model folder's config.json, side files
    and safetensors), so ``-o`` never overwrites one (issue 11, F13)."""

    def __init__(self, sheet_path: Path, sheet: object = None,
                 catalogs: Optional[list[Path]] = None, evidence: Optional[Path] = None) -> None:
        self.files: list[Path] = [sheet_path, *(catalogs or ())]
        self.folders: list[tuple[str, Path]] = []
        if evidence is not None:
            self.folders.append(("the evidence folder", evidence))
        model = getattr(sheet, "model", None)
        if getattr(model, "path", None):
            from .model.resolve import model_folder
            self.folders.append(("the model folder", model_folder(model.path, sheet_path.parent)))
        quality = getattr(sheet, "quality", None)
        if getattr(quality, "corpus", None):
            from .quality.criteria_lock import corpus_path
            self.files.append(corpus_path(sheet, sheet_path.parent))  # type: ignore[arg-type]

    def refuse(self, out: Optional[Path]) -> None:
        """Exit 2 when ``out`` (symlinks resolved) is an input file or lies in an input folder
        (called before the work: a wrong -o costs nothing)."""
        if out is None:
            return
        def real(p: Path) -> Path:
            try:
                return p.expanduser().resolve()
            except (OSError, RuntimeError):
                return p.expanduser().absolute()

        target = real(out)
        why: Optional[str] = None
        if any(real(p) == target for p in self.files):
            why = "is an input of this command"
        for name, folder in self.folders:
            if why is None and target.parent == real(folder):
                why = f"is in {name}, an input of this command"
        if why is not None:
            typer.echo(f"error: -o/--out: {str(out)!r} {why}; expected a new output file "
                       "elsewhere", err=True)
            raise typer.Exit(2)


def _format(fmt: Optional[Enum], out: Optional[Path], allowed: tuple[str, ...]) -> str:
    """The --format given, else the -o file's extension (.json, .html, .md), else Markdown.

    Refuses an extension that names no format when --format is absent (an -o that is an input
    is refused before the work by :meth:`RunInputs.refuse`)."""
    if fmt is not None:
        return fmt.value
    if out is None:
        return "md"
    ext = _EXTENSIONS.get(out.suffix.lower())
    if ext is None or ext not in allowed:
        typer.echo(f"error: -o/--out: cannot tell the format from {out.suffix or 'no extension'!r}"
                   f"; expected one of {', '.join('.' + a for a in allowed)} or --format",
                   err=True)
        raise typer.Exit(2)
    return ext


def _load(sheet: Path):
    from .sheet import load_sheet
    return load_sheet(sheet)


def _card(name: Optional[str]):
    if name is None:
        return None
    from .catalog.cards import require_card
    return require_card(name)


SheetArg = Annotated[Path, typer.Argument(help="workload sheet (YAML)", show_default=False)]
CardOpt = Annotated[Optional[str], typer.Option("--card", help="canonical card name or alias "
                                                "(NVML or SkyPilot spelling)")]
TodayOpt = Annotated[Optional[str], typer.Option(
    "--today", help="the date schedules and deadlines are judged from, YYYY-MM-DD (default: "
                    "today); makes a plan reproducible")]


def _today(text: Optional[str]):
    """``--today`` as a date, or exit 2 naming the option."""
    if text is None:
        return None
    import datetime as dt
    import re
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            raise ValueError(text)
        return dt.date.fromisoformat(text)
    except ValueError:
        typer.echo(f"error: --today: {text!r} is not a date; expected YYYY-MM-DD", err=True)
        raise typer.Exit(2) from None


@app.command()
def plan(sheet: SheetArg,
         catalog: Annotated[Optional[list[Path]], typer.Option(
             "--catalog", help="offers (YAML, CSV or SkyPilot vms.csv); repeatable; replaces the "
                               "bundled seed catalog")] = None,
         evidence: Annotated[Optional[Path], typer.Option(
             "--evidence", help="folder of evidence *.json")] = None,
         format: Annotated[Optional[Fmt], typer.Option(
             "--format", help="md | json | html (default: from the -o extension, else md)")] = None,
         out: Annotated[Optional[Path], typer.Option("-o", "--out", help="output file")] = None,
         quiet: Annotated[bool, typer.Option("--quiet", help="no terminal table")] = False,
         simulate: Annotated[bool, typer.Option(
             "--simulate", help="also run the model code on fake tensors per card (the simulate "
                                "extra); memory stays to confirm, its reason quotes both")] = False,
         today: TodayOpt = None,
         variant: Annotated[Optional[str], typer.Option(
             "--variant", help="a campaign sheet's variant: its own full plan (base: the "
                               "sheet's own workload)", show_default=False)] = None,
         top: Annotated[Optional[str], typer.Option(
             "--top", help="list only the first N offers on the views (terminal, Markdown, "
                           "HTML; labelled there); default: 5 on page one and in the terminal, "
                           "every offer under Details. The JSON keeps every offer",
             show_default=False)] = None,
         sort: Annotated[Optional[str], typer.Option(
             "--sort", help="order of the offers on the views: order (the contract's: rank, "
                            "then provisional rank, then the others by cost), cost, headroom "
                            "or card. The JSON keeps the contract's order",
             show_default=False)] = None,
         ) -> None:
    """The main job: memory items and phases, every offer classified, the one-page sheet.

    On a terminal it prints a summary (the answer, memory by phase, the offers); piped, or with
    --format, the whole sheet; with -o, the sheet to the file and the summary to the terminal."""
    from .pipeline.campaign import run_campaign
    from .report.json_report import plan_document
    view = _view(top, sort)
    try:
        s = _load(sheet)
        RunInputs(sheet, s, catalog, evidence).refuse(out)
        result = run_campaign(s, catalogs=catalog, evidence_dir=evidence, variant=variant,
                              base_dir=sheet.parent, simulate=simulate, today=_today(today))
    except GpusizerError as exc:
        _fail(exc, sheet)
    _render(plan_document(result), _format(format, out, ("md", "json", "html")), out,
            quiet, view=view, summary_on_tty=format is None)


def _view(top: Optional[str], sort: Optional[str]):
    """``--top`` and ``--sort`` as a report View, or exit 2 with one line naming the option."""
    from .report.offer_words import SORT_KEYS, View
    n = None
    if top is not None:
        if not top.strip().isdigit() or int(top) < 1:
            typer.echo(f"error: --top: expected an integer >= 1, got {top!r}", err=True)
            raise typer.Exit(2)
        n = int(top)
    key = "order" if sort is None else sort.strip().lower()
    if key not in SORT_KEYS:
        typer.echo(f"error: --sort: expected one of {', '.join(SORT_KEYS)}, got {sort!r}",
                   err=True)
        raise typer.Exit(2)
    return View(top=n, sort=key)


def summary_targets(*, out: Optional[Path], quiet: bool, summary_on_tty: bool,
                    stdout_tty: bool, stderr_tty: bool) -> tuple[Optional[str], bool]:
    """Where the rich summary goes (``"stdout"``, ``"stderr"`` or None) and whether the
    document is written (to ``out``, else stdout).

    On a terminal, with no -o and no --format (``summary_on_tty``), the summary replaces the
    document on stdout; piped, the document goes to stdout; with -o, the document goes to the
    file. Then the summary goes to stderr when stderr is a terminal (not with --quiet)."""
    if out is None and stdout_tty and summary_on_tty:
        return "stdout", False
    if not quiet and stderr_tty and (out is not None or not stdout_tty):
        return "stderr", True
    return None, True


def _render(doc: dict, fmt: str, out: Optional[Path], quiet: bool, *, view=None,
            summary_on_tty: bool = False) -> None:
    from .report.json_report import dumps
    from .report.offer_words import View
    view = view or View()
    where, document = summary_targets(out=out, quiet=quiet, summary_on_tty=summary_on_tty,
                                      stdout_tty=sys.stdout.isatty(),
                                      stderr_tty=sys.stderr.isatty())
    if where is not None:
        from .report.terminal import print_terminal
        print_terminal(doc, view=view, stderr=where == "stderr")
    if not document:
        return
    if fmt == "json":
        text = dumps(doc) + "\n"  # every offer, in the contract's order, whatever the view
    elif fmt == "html":
        from .report.html import render_html
        text = render_html(doc, view)
    else:
        from .report.markdown import render_markdown
        text = render_markdown(doc, view)
    _write(text, out)


@app.command()
def estimate(sheet: SheetArg, card: CardOpt = None,
             format: Annotated[Optional[MemFmt], typer.Option(
                 "--format", help="md | json (default: from the -o extension, else md)")] = None,
             out: Annotated[Optional[Path], typer.Option("-o", "--out")] = None) -> None:
    """Memory only: items, phases and peaks per GPU; with --card, the card's rules and the fit."""
    from .pipeline import run_estimate
    from .report.json_report import estimate_document
    try:
        s = _load(sheet)
        RunInputs(sheet, s).refuse(out)
        result = run_estimate(s, card=_card(card), base_dir=sheet.parent)
    except GpusizerError as exc:
        _fail(exc, sheet)
    _render(estimate_document(result), _format(format, out, ("md", "json")), out, False)


@app.command()
def cards(sheet: Annotated[Optional[Path], typer.Argument(
              help="workload sheet (YAML); without it, the card table", show_default=False)
          ] = None,
          format: Annotated[Optional[MemFmt], typer.Option(
              "--format", help="md | json (default: from the -o extension, else md)")] = None,
          out: Annotated[Optional[Path], typer.Option("-o", "--out", help="output file")] = None
          ) -> None:
    """Every card's estimated fit and headroom at 1, 2, 4 and 8 GPUs and the fewest GPUs of each
    card that fit (no catalog needed); without a sheet, the card table."""
    from .report.cards_report import (card_table_document, cards_document,
                                      render_card_table_markdown, render_cards_markdown)
    from .report.json_report import dumps
    fmt = _format(format, out, ("md", "json"))
    if sheet is None:
        from .pipeline import card_table
        doc = card_table_document(card_table())
        _write(dumps(doc) + "\n" if fmt == "json" else render_card_table_markdown(doc), out)
        return
    from .pipeline import run_cards
    try:
        s = _load(sheet)
        RunInputs(sheet, s).refuse(out)
        doc = cards_document(run_cards(s, base_dir=sheet.parent))
    except GpusizerError as exc:
        _fail(exc, sheet)
    _write(dumps(doc) + "\n" if fmt == "json" else render_cards_markdown(doc), out)


@app.command()
def fit(sheet: SheetArg,
        card: Annotated[str, typer.Option("--card", help="canonical card name or alias")],
        format: Annotated[MemFmt, typer.Option("--format")] = MemFmt.md) -> None:
    """Largest concurrency and context (inference), or microbatch and sequence length (training),
    that fit the card with the sheet's margin."""
    from .pipeline import run_fit
    try:
        answer = run_fit(_load(sheet), _card(card), base_dir=sheet.parent)
    except GpusizerError as exc:
        _fail(exc, sheet)
    doc = answer.to_json()
    if format.value == "json":
        from .report.json_report import dumps
        _write(dumps(doc) + "\n", None)
    else:
        from .report.fit_report import render_fit_markdown
        _write(render_fit_markdown(doc), None)


class Output(str, Enum):
    plan = "plan"
    estimate = "estimate"
    simulate = "simulate"
    fit = "fit"
    alternatives = "alternatives"
    cards = "cards"


@app.command()
def schema(output: Annotated[Optional[Output], typer.Option(
        "--output", help="print the JSON Schema of that command's --format json output "
                         "instead of the sheet's")] = None) -> None:
    """Print the workload sheet's JSON Schema; with --output, that command's JSON output's."""
    import json

    if output is not None:
        from .report.output_schema import output_schema
        sys.stdout.write(json.dumps(output_schema(output.value), indent=2) + "\n")
        return
    from .sheet import Sheet
    sys.stdout.write(json.dumps(Sheet.model_json_schema(), indent=2) + "\n")


@app.command()
def simulate(sheet: SheetArg, card: CardOpt = None,
             format: Annotated[Optional[MemFmt], typer.Option(
                 "--format", help="md | json (default: from the -o extension, else md)")] = None,
             out: Annotated[Optional[Path], typer.Option("-o", "--out")] = None) -> None:
    """Run the model code on fake tensors: items with provenance 'simulated', phase peaks and the
    difference to estimate (needs the simulate extra: pip install "gpusizer\\[simulate]")."""
    from .simulate import require_extra
    try:
        require_extra()
        from .pipeline import run_simulate
        from .report.simulation import simulate_document
        s = _load(sheet)
        RunInputs(sheet, s).refuse(out)
        result = run_simulate(s, card=_card(card), base_dir=sheet.parent)
    except GpusizerError as exc:
        _fail(exc, sheet)
    _render(simulate_document(result), _format(format, out, ("md", "json")), out, True)


class Device(str, Enum):
    cuda = "cuda"
    cpu = "cpu"


@app.command()
def measure(sheet: SheetArg,
            out: Annotated[Path, typer.Option("--out", help="folder for raw notes (*.jsonl) and "
                                                           "evidence (*.json)")],
            random_weights: Annotated[bool, typer.Option(
                "--random-weights", help="exact architecture from config.json, random values "
                                         "in the target dtype (no weight download)")] = False,
            provider: Annotated[Optional[str], typer.Option(
                "--provider", help="who rents this machine (evidence scope)")] = None,
            image: Annotated[Optional[str], typer.Option(
                "--image", help="the software image this runs in (evidence scope)")] = None,
            offer_id: Annotated[Optional[str], typer.Option(
                "--offer-id", help="the catalog offer this machine is (evidence scope)")] = None,
            device: Annotated[Optional[Device], typer.Option(
                "--device", help="cuda | cpu (default: cuda when available)")] = None) -> None:
    """Run the ladder (short, typical, limit) for real and write raw notes and evidence
    (needs the measure extra). Exit 0 when every rung passed, 1 when the ladder stopped at a
    violation (recorded in the evidence), 2 on invalid input."""
    from .pipeline import measure as run_measure
    try:
        result = run_measure(_load(sheet), out, random_weights=random_weights,
                             base_dir=sheet.parent, provider=provider, image=image,
                             offer_id=offer_id, device=device.value if device else None)
    except GpusizerError as exc:
        _fail(exc, sheet)
    if result.evidence is None:  # ranks other than 0 write raw notes only
        return
    from .report.measure_summary import render_measure_summary
    typer.echo(render_measure_summary(result.evidence, result.evidence_path), nl=False)
    if result.evidence["stopped_at"] is not None:
        raise typer.Exit(1)


import_app = typer.Typer(no_args_is_help=True, help="An engine's own start-up log as evidence "
                         "for the card it ran on (capacity at start, never executed work).")
app.add_typer(import_app, name="import")
LogArg = Annotated[Path, typer.Argument(help="the engine's start-up log (text)",
                                        show_default=False)]
LogSheetOpt = Annotated[Path, typer.Option("--sheet", help="the workload sheet the log documents")]
LogCardOpt = Annotated[str, typer.Option("--card", help="the card the log ran on (canonical "
                                         "name or alias)")]
LogOutOpt = Annotated[Path, typer.Option("--out", help="folder for the evidence (*.json)")]


def _import_log(kind: str, log: Path, sheet: Path, card: str, out: Path) -> None:
    from .pipeline.importing import import_engine_log
    try:
        doc, path = import_engine_log(kind, log, _load(sheet), card=_card(card), out=out,
                                      base_dir=sheet.parent)
    except GpusizerError as exc:
        _fail(exc, sheet)
    from .report.engine_log_summary import render_engine_log_summary
    typer.echo(render_engine_log_summary(doc, path), nl=False)


@import_app.command("vllm-log")
def import_vllm_log(log: LogArg, sheet: LogSheetOpt, card: LogCardOpt, out: LogOutOpt) -> None:
    """Import a vLLM start-up log (0.4 – 0.11, V0 or V1) as engine_log evidence. Exit 2 when the
    log is foreign, truncated, contradictory or documents another workload."""
    _import_log("vllm-log", log, sheet, card, out)


@import_app.command("sglang-log")
def import_sglang_log(log: LogArg, sheet: LogSheetOpt, card: LogCardOpt, out: LogOutOpt) -> None:
    """Import an SGLang start-up log as engine_log evidence. Exit 2 when the log is foreign,
    truncated, contradictory or documents another workload."""
    _import_log("sglang-log", log, sheet, card, out)


quality_app = typer.Typer(no_args_is_help=True, help="The quality gate: lock the criteria, then "
                          "evaluate a format or import lm-evaluation-harness results.")
app.add_typer(quality_app, name="quality")
LockOpt = Annotated[Optional[Path], typer.Option(
    "--lock", help="lock file (default: SHEET's folder, <stem>.quality-lock.json)")]


def _lock_path(sheet: Path, lock: Optional[Path]) -> Path:
    from .quality.criteria_lock import default_lock_path
    return lock if lock is not None else default_lock_path(sheet)


@quality_app.command("lock")
def quality_lock(sheet: SheetArg, lock: LockOpt = None) -> None:
    """Fix the quality criteria (reference, corpus SHA-256 and size, metric, max_regression)
    before any comparison; an existing lock with other criteria is refused."""
    from .pipeline import lock_quality
    try:
        r = lock_quality(_load(sheet), lock_path=_lock_path(sheet, lock), base_dir=sheet.parent)
    except GpusizerError as exc:
        _fail(exc, sheet)
    from .report.quality_summary import render_lock_summary
    typer.echo(render_lock_summary(r), nl=False)


@quality_app.command("run")
def quality_run(sheet: SheetArg,
                candidate: Annotated[str, typer.Option(
                    "--candidate", help="fp32 | fp16 | bf16 | int8 | nf4 | fp4 (bitsandbytes) | "
                                        "int8-roundtrip | int4-roundtrip (PyTorch simulation)")],
                out: Annotated[Path, typer.Option("--out", help="folder for the per-sample "
                                                  "outputs and the evidence")],
                lock: LockOpt = None,
                device: Annotated[Optional[str], typer.Option(
                    "--device", help="cpu | cuda (default: cuda when available)")] = None) -> None:
    """Evaluate the reference format and --candidate on the frozen corpus; write evidence
    (needs the quality extra). Exit 1 when the regression exceeds max_regression (the evidence
    is written first), 2 on invalid input."""
    from .pipeline import run_quality
    try:
        r = run_quality(_load(sheet), candidate=candidate, lock_path=_lock_path(sheet, lock),
                        out_dir=out, base_dir=sheet.parent, device=device)
    except GpusizerError as exc:
        _fail(exc, sheet)
    from .report.quality_summary import render_quality_run_summary
    typer.echo(render_quality_run_summary(r.evidence, r.evidence_file, r.samples_file), nl=False)
    if not r.evidence["passed"]:  # the evidence is written: it records the failure
        raise typer.Exit(1)


@quality_app.command("import")
def quality_import(sheet: SheetArg,
                   results: Annotated[Path, typer.Argument(help="lm-evaluation-harness results "
                                                           "JSON of the candidate format")],
                   candidate: Annotated[str, typer.Option("--candidate",
                                                          help="the format that was evaluated")],
                   out: Annotated[Path, typer.Option("--out", help="folder for the evidence")],
                   lock: LockOpt = None) -> None:
    """Import lm-evaluation-harness results as quality evidence (task, version, n-shot and
    sample count must match the locked reference). Exit 1 when the regression exceeds
    max_regression (the evidence is written first), 2 on invalid input."""
    from .pipeline import import_quality
    try:
        doc, path = import_quality(_load(sheet), results, candidate=candidate,
                                   lock_path=_lock_path(sheet, lock), out_dir=out,
                                   base_dir=sheet.parent)
    except GpusizerError as exc:
        _fail(exc, sheet)
    from .report.quality_summary import render_lm_eval_import_summary
    typer.echo(render_lm_eval_import_summary(doc, path), nl=False)
    if not doc["passed"]:  # the evidence is written: it records the failure
        raise typer.Exit(1)


@app.command()
def alternatives(sheet: SheetArg,
                 catalog: Annotated[Optional[list[Path]], typer.Option(
                     "--catalog", help="offers; repeatable; replaces the bundled seed "
                                       "catalog")] = None,
                 evidence: Annotated[Optional[Path], typer.Option(
                     "--evidence", help="folder of evidence *.json (quality evidence decides "
                                        "the quality risk of a lower precision)")] = None,
                 format: Annotated[Optional[MemFmt], typer.Option("--format")] = None,
                 out: Annotated[Optional[Path], typer.Option("-o", "--out")] = None,
                 today: TodayOpt = None) -> None:
    """For each offer excluded on memory: the single changes that would make it fit, each with
    its new peak and what it puts at risk. Nothing is applied."""
    from .pipeline import run_alternatives
    from .report.alternatives_report import alternatives_document, render_alternatives_markdown
    try:
        s = _load(sheet)
        RunInputs(sheet, s, catalog, evidence).refuse(out)
        result = run_alternatives(s, catalogs=catalog, evidence_dir=evidence,
                                  base_dir=sheet.parent, today=_today(today))
    except GpusizerError as exc:
        _fail(exc, sheet)
    doc = alternatives_document(result)
    fmt = _format(format, out, ("md", "json"))
    if fmt == "json":
        from .report.json_report import dumps
        text = dumps(doc) + "\n"
    else:
        text = render_alternatives_markdown(doc)
    _write(text, out)


@app.command()
def models(format: Annotated[MemFmt, typer.Option("--format", help="md | json")] = MemFmt.md
           ) -> None:
    """List the bundled registry: the ids resolved offline, with revision, model_type (the
    class, config.json ``architectures[0]``, in --format json), parameters (counted from the
    config) and the public source of each config.json."""
    import json

    from .model.registry import registry_fingerprint, registry_listing
    rows = registry_listing()
    if format.value == "json":
        doc = {"registry": registry_fingerprint(), "models": rows}
        _write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", None)
        return
    lines = [f"# Bundled registry: {len(rows)} models (resolved offline)", "",
             "| id | revision | model_type | parameters | source |", "|---|---|---|---|---|"]
    for r in rows:
        ids = " ".join([r["id"], *(f"(alias {a})" for a in r["aliases"])])
        revision = r["revision"] + (f" (commit {r['commit'][:12]})" if r["commit"] else "")
        params = f"{r['parameters']:,}".replace(",", " ") if r["parameters"] else "unknown"
        partial = "" if r["config_complete"] else " (published keys only)"
        lines.append(f"| {ids} | {revision} | {r['model_type']} | {params} "
                     f"| {r['source']}{partial} |")
    lines += ["", f"Registry {registry_fingerprint()}. `--format json` adds where each "
              "config.json was read (`read_from`) and the stored bytes where a source gave them."]
    _write("\n".join(lines) + "\n", None)


@app.command()
def serve(host: Annotated[str, typer.Option(
              help="Address to listen on; another than the loopback is warned about")]
          = "127.0.0.1",
          port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port")] = 8765) -> None:
    """The local web page: the sheet form, the plan, the offers and the cards in a browser
    (needs the web extra)."""
    import importlib.util
    if any(importlib.util.find_spec(m) is None for m in ("fastapi", "jinja2", "uvicorn",
                                                          "multipart")):
        from .errors import install_line
        typer.echo(f"error: gpusizer serve needs the web extra: {install_line('web')}", err=True)
        raise typer.Exit(1)
    from .web.app import serve as run_server
    run_server(host=host, port=port)


@app.command()
def launch(sheet: SheetArg,
           offer: Annotated[str, typer.Option("--offer", help="the offer's id in the catalogs")],
           out: Annotated[Path, typer.Option("--out", help="folder the evidence comes back to "
                                                           "(the task file is written there)")],
           catalog: Annotated[Optional[list[Path]], typer.Option(
               "--catalog", help="offers (YAML, CSV or SkyPilot vms.csv); repeatable")] = None,
           variant: Annotated[Optional[str], typer.Option(
               "--variant", help="a campaign sheet's variant to measure (default: base)",
               show_default=False)] = None,
           dry_run: Annotated[bool, typer.Option(
               "--dry-run", help="print the task and the commands; launch nothing")] = False,
           ) -> None:
    """Measure the sheet on the offer itself: a SkyPilot task that runs gpusizer measure (and
    quality run) there and brings the evidence back (needs the launch extra)."""
    from .launch import prepare_launch, run_launch
    from .pipeline.campaign import variant_sheet
    try:
        s = _load(sheet)
        if variant is not None or s.variants:
            s = variant_sheet(s, variant or "base")
        plan = prepare_launch(s, sheet, offer, catalogs=catalog, out_dir=out)
        if dry_run:
            typer.echo(f"# SkyPilot task for offer {offer} (cluster {plan.task.cluster})")
            typer.echo(plan.yaml_text, nl=False)
            for note in plan.task.notes:
                typer.echo(f"# note: {note}")
            typer.echo("# would run, in order:")
            for command in plan.commands:
                typer.echo(command)
            return
        run_launch(plan)
    except GpusizerError as exc:
        _fail(exc, sheet)


@app.command()
def version() -> None:
    """Print the version."""
    from . import __version__
    typer.echo(__version__)


def main() -> None:
    """Console-script entry point.

    The cyclic garbage collector's first threshold is raised from 700 to 50 000 allocations:
    a plan builds some 30 dicts and strings per offer, and on a 10 000-offer catalog the default
    runs hundreds of collections over a heap that holds no cycle worth freeing (0.2 s of 1.3 s
    CPU; issue 12, "Speed"). The process is short-lived; memory is released at exit."""
    import gc
    gc.set_threshold(50_000, 20, 100)
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
