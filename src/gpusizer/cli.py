"""``gpusizer`` command line: parse, call one library function, render. Exit 0 ok, 2 invalid input,
1 otherwise. Heavy modules are imported inside the commands so ``--help`` and ``estimate`` start
fast; torch is never imported here."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from .errors import GpusizerError

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


def _fail(exc: GpusizerError) -> None:
    typer.echo(f"error: {exc}", err=True)
    raise typer.Exit(exc.exit_code)


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


def _format(fmt: Optional[Enum], out: Optional[Path], allowed: tuple[str, ...],
            inputs: tuple[Optional[Path], ...] = ()) -> str:
    """The --format given, else the -o file's extension (.json, .html, .md), else Markdown.

    Refuses an -o that is one of the inputs (it would be overwritten) and an extension that
    names no format when --format is absent."""
    if out is not None:
        target = out.expanduser().resolve()
        for p in inputs:
            if p is not None and p.expanduser().resolve() == target:
                typer.echo(f"error: -o/--out: {str(out)!r} is an input of this command; "
                           "expected a new output file", err=True)
                raise typer.Exit(2)
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
         quiet: Annotated[bool, typer.Option("--quiet", help="no terminal table")] = False) -> None:
    """The main job: memory items and phases, every offer classified, the one-page sheet."""
    from .pipeline import run_plan
    from .report.json_report import plan_document
    try:
        result = run_plan(_load(sheet), catalogs=catalog, evidence_dir=evidence,
                          base_dir=sheet.parent)
    except GpusizerError as exc:
        _fail(exc)
    inputs = (sheet, *(catalog or ()))
    _render(plan_document(result), _format(format, out, ("md", "json", "html"), inputs), out,
            quiet)


def _render(doc: dict, fmt: str, out: Optional[Path], quiet: bool) -> None:
    from .report.json_report import dumps
    if fmt == "json":
        text = dumps(doc) + "\n"
    elif fmt == "html":
        from .report.html import render_html
        text = render_html(doc)
    else:
        from .report.markdown import render_markdown
        text = render_markdown(doc)
    # The rich table goes to the terminal (stderr) when the document itself goes elsewhere.
    if not quiet and sys.stderr.isatty() and (out is not None or not sys.stdout.isatty()):
        from .report.terminal import print_terminal
        print_terminal(doc)
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
        result = run_estimate(_load(sheet), card=_card(card), base_dir=sheet.parent)
    except GpusizerError as exc:
        _fail(exc)
    _render(estimate_document(result), _format(format, out, ("md", "json"), (sheet,)), out, False)


@app.command()
def fit(sheet: SheetArg,
        card: Annotated[str, typer.Option("--card", help="canonical card name or alias")],
        format: Annotated[MemFmt, typer.Option("--format")] = MemFmt.md) -> None:
    """Largest concurrency and context (inference), or microbatch and sequence length (training),
    that fit the card with the sheet's margin."""
    from .fit import fit as fit_answer
    try:
        answer = fit_answer(_load(sheet), _card(card), base_dir=sheet.parent)
    except GpusizerError as exc:
        _fail(exc)
    if format.value == "json":
        from .report.json_report import dumps
        _write(dumps(answer) + "\n", None)
    else:
        lines = [f"# gpusizer fit on {answer['card']} (device {answer['device_bytes']} B, margin "
                 f"{answer['margin']})", ""]
        lines += [f"- {k}: {v if v is not None else 'none (not even one sequence fits)'}"
                  for k, v in answer["answers"].items()]
        lines += [f"- note: {n}" for n in answer["notes"]]
        _write("\n".join(lines) + "\n", None)


@app.command()
def schema() -> None:
    """Print the workload sheet's JSON Schema."""
    import json

    from .sheet import Sheet
    sys.stdout.write(json.dumps(Sheet.model_json_schema(), indent=2) + "\n")


@app.command()
def simulate(sheet: SheetArg, card: CardOpt = None) -> None:
    """Same JSON as estimate with provenance 'simulated' (needs the simulate extra)."""
    typer.echo("error: `gpusizer simulate` is not available in this version: the simulate extra "
               "(torch fake tensors) is not built yet; use `gpusizer estimate`", err=True)
    raise typer.Exit(1)


def _measure_module():
    """``gpusizer.measure``, or exit 1 naming the missing package of the measure extra."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
        import peft  # noqa: F401

        from . import measure as module
    except ImportError as exc:
        from .errors import MeasureExtraMissingError
        _fail(MeasureExtraMissingError(f"the measure extra is not installed ({exc.name or exc} "
                                       "is missing): pip install gpusizer[measure]"))
    return module


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
    module = _measure_module()
    try:
        result = module.run_measurement(_load(sheet), out, random_weights=random_weights,
                                        base_dir=sheet.parent, provider=provider, image=image,
                                        offer_id=offer_id,
                                        device=device.value if device else None)
    except GpusizerError as exc:
        _fail(exc)
    if result.evidence is None:  # ranks other than 0 write raw notes only
        return
    from .report.measure_summary import render_measure_summary
    typer.echo(render_measure_summary(result.evidence, result.evidence_path), nl=False)
    if result.evidence["stopped_at"] is not None:
        raise typer.Exit(1)


@app.command()
def version() -> None:
    """Print the version."""
    from . import __version__
    typer.echo(__version__)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
