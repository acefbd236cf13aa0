"""Named errors. Library code raises these; each front end maps them to its own answer (the CLI's
exit status: ``cli.EXIT_CODES``; an input error is one a user fixes by changing the input).

Every error says which field (or file) is wrong, the value it got, and what was expected, so a
user can fix the input without reading the code.

Values and paths taken from input are shown through :func:`shown` and :func:`shown_path` (cut to
80 characters, control characters escaped), and every message is one line of at most
:data:`MAX_MESSAGE` characters: a 10,000-character row or a whole evidence file is never echoed,
and a newline in a value cannot forge a second ``error:`` line (issue 11, F24).
"""

from __future__ import annotations

# the error classes only (tests/test_cli_errors.py maps each to its exit status); the message
# helpers shown, shown_path and one_line are imported by name
__all__ = [
    "GpusizerError",
    "ArgumentError",
    "SheetError",
    "ModelError",
    "UnknownArchitectureError",
    "CatalogError",
    "UnknownCardError",
    "EvidenceError", "EngineLogError",
    "HubError",
    "ModelNotFoundError",
    "QualityError",
    "CriteriaMovedError",
    "CorpusError",
    "SampleTooLongError",
    "LmEvalMismatchError",
    "FormatUnavailableError",
    "MissingExtraError",
    "MeasureError",
    "MeasureExtraMissingError",
    "MeasureUnsupportedError",
]


SHOWN_CHARS = 80
"""The most characters of one value (the first) or one path (the last) an error line shows."""

MAX_MESSAGE = 1000
"""The most characters of one error message (a list of several problems included)."""


LISTED_CHARS = 160
"""The most characters a list of several problems takes in one error line, so the whole line
(``error: ``, the file's last 80 characters, the list) stays within 300 characters."""


def listed(problems: list[str], *, limit: int = LISTED_CHARS, most: int | None = None,
           names: list[str] | None = None) -> str:
    """Several problems in one line: joined by ``"; "`` while they fit in ``limit`` characters
    (the first always, cut to ``limit``) and number at most ``most``, then ``"; and N more"``
    with the fields of the first few of those (``names``, one per problem) — the user sees how
    many to fix and where, and the line stays short."""
    out: list[str] = []
    used = 0
    for problem in problems:
        cost = len(problem) + (2 if out else 0)
        if out and (used + cost > limit or (most is not None and len(out) >= most)):
            break
        out.append(problem if out or len(problem) <= limit else problem[:limit - 1] + "…")
        used += cost
    rest = len(problems) - len(out)
    if not rest:
        return "; ".join(out)
    where = ""
    if names:
        hidden = [n for n in names[len(out):] if n]
        where = " (" + ", ".join(shown_name[:40] for shown_name in hidden[:3]) + \
            (", …" if len(hidden) > 3 else "") + ")" if hidden else ""
    return "; ".join(out) + f"; and {rest} more{where}"


def shown(value: object) -> str:
    """``repr(value)`` (so control characters appear escaped), cut to :data:`SHOWN_CHARS`
    characters with a trailing ``…``."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"


def shown_path(path: object) -> str:
    """A file path for an error line: as is when printable, else its ``repr``; cut to its last
    :data:`SHOWN_CHARS` characters with a leading ``…``."""
    text = str(path)
    if not text.isprintable():
        text = repr(text)
    return text if len(text) <= SHOWN_CHARS else "…" + text[-(SHOWN_CHARS - 1):]


def one_line(message: str) -> str:
    """``message`` with control characters escaped (``\\n``, ``\\x1b``…) and cut to
    :data:`MAX_MESSAGE` characters: one printable line whatever the input held."""
    if not message.isprintable():
        message = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in message)
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE - 1] + "…"


class GpusizerError(Exception):
    """Base of every gpusizer error.

    Args:
        message: what is wrong and what to do.
        field: dotted path of the offending field (``inference.concurrency``), if any.
        value: the offending value, if any.
        file: the file the value came from, if any.
    """

    def __init__(self, message: str, *, field: str | None = None, value: object = None,
                 file: str | None = None) -> None:
        self.field = field
        self.value = value
        self.file = file
        self.reason = one_line(message)
        prefix = ""
        if file:
            prefix += f"{shown_path(file)}: "
        if field:
            prefix += f"{one_line(field)[:SHOWN_CHARS * 2]}: "
        super().__init__(prefix + self.reason)


class ArgumentError(GpusizerError, ValueError):
    """A library call's argument (or a command-line option) of the wrong kind or value: a date
    that is not a date, a card that is neither a name nor a ``Card``, catalogs that are neither
    rows, texts nor paths. An input error; ``field`` names the argument."""


class SheetError(GpusizerError, ValueError):
    """The workload sheet is invalid (bad key, value, unit or dimension)."""


class ModelError(GpusizerError, ValueError):
    """A model's config.json is missing a field the sizing needs, or is inconsistent."""


class UnknownArchitectureError(ModelError):
    """The config's ``model_type`` has no family module: its parameters cannot be counted."""


class CatalogError(GpusizerError, ValueError):
    """A catalog file (offers) or the card table is invalid."""


class UnknownCardError(CatalogError, LookupError):
    """A ``--card`` name matches no canonical card or alias."""


class EvidenceError(GpusizerError, ValueError):
    """An evidence file is malformed."""


class EngineLogError(EvidenceError):
    """An engine's start-up log given to ``gpusizer import`` is foreign, truncated,
    contradictory, or documents another workload than the sheet's."""


class HubError(GpusizerError, RuntimeError):
    """The Hugging Face Hub could not answer (offline, gated, not found)."""


class ModelNotFoundError(HubError, LookupError):
    """A ``model.id`` that cannot be resolved: not in the registry while offline, or unknown to
    the Hub (wrong id or revision). An input error: fix the id or pass ``model.path``."""


class QualityError(GpusizerError, ValueError):
    """The quality gate's input is invalid (no lock, no quality block, a metric the command does
    not evaluate). An input error."""


class CriteriaMovedError(QualityError):
    """The sheet's quality criteria (threshold, metric, reference, corpus, model) differ from the
    locked ones, or the frozen corpus file changed since the lock: a threshold moved after the
    lock is refused (R2: "threshold fixed before comparing")."""


class CorpusError(QualityError):
    """The frozen corpus file is unreadable or a sample is malformed (line and sample named)."""


class SampleTooLongError(CorpusError):
    """A corpus sample is longer than the model's context window: it is never truncated."""


class LmEvalMismatchError(EvidenceError):
    """An lm-evaluation-harness results file does not match the locked criteria (task, version,
    n-shot or sample count named)."""


class FormatUnavailableError(GpusizerError, RuntimeError):
    """A weight format cannot be evaluated here (e.g. bitsandbytes is not installed)."""


class MissingExtraError(GpusizerError, ImportError):
    """An optional dependency group is not installed; the message names the pip command
    (:func:`install_line`)."""


def install_line(extra: str) -> str:
    """The pip commands that install the optional dependency group ``extra`` (pyproject's
    ``[project.optional-dependencies]``): quoted, so zsh does not glob the brackets, and the
    form for a clone of the repository (its ``constraints.txt`` pins what CI tests)::

        pip install "gpusizer[simulate]" (from a checkout:
        pip install -c constraints.txt -e ".[simulate]")
    """
    return (f'pip install "gpusizer[{extra}]" (from a checkout: '
            f'pip install -c constraints.txt -e ".[{extra}]")')


class MeasureError(GpusizerError, RuntimeError):
    """``gpusizer measure`` could not run the ladder (the harness itself failed, not the
    workload: an out-of-memory of the workload is recorded as evidence, never raised)."""


class MeasureExtraMissingError(MeasureError, MissingExtraError):
    """The ``measure`` extra (torch, transformers, peft, nvidia-ml-py) is not installed:
    :func:`install_line` ``("measure")``."""


class MeasureUnsupportedError(MeasureError, ValueError):
    """The sheet asks for something this harness cannot run on this machine (a bitsandbytes
    format without CUDA, a placement it does not implement, a checkpoint without safetensors).
    An input problem for this machine."""
