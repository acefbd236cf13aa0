"""The FastAPI application of ``gpusizer serve``: the sheet form, the result page, the cards view
and ``POST /api/plan`` (CONTRACT.md).

Pages are Jinja2 templates shipped with the package (``web/templates``), with autoescape on for
every template: a value from a sheet, a catalog or an evidence file is always escaped; the only
HTML inserted as is comes from :mod:`gpusizer.report.html`, which escapes every value itself.
Scripts and styles are files of the package (``web/static``), served by the page; no page loads
anything from elsewhere, and ``Content-Security-Policy`` forbids it (``default-src 'self'``).

Inputs: the form's fields (:mod:`.schema_form`) or a pasted sheet, uploaded catalogs (YAML or
CSV), evidence files (JSON) and a model's config.json. Bodies and uploads are capped
(:mod:`.limits`); a key naming a path is refused unless it names an upload, saved in a
temporary folder made for the request and deleted after it (the only folder a path from the
request is read in). Every sheet is validated by the sheet model the CLI uses
(:mod:`gpusizer.sheet`); an error is shown next to its field (HTTP 422).
"""

from __future__ import annotations

import base64
import json
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.formparsers import MultiPartParser
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from .. import api
from ..errors import (ArgumentError, CatalogError, EvidenceError, GpusizerError, ModelError,
                      QualityError, SheetError)
from ..input_files import SIZE_CAPS, parse_json
from ..yaml_reader import YamlProblem, decode_text, parse_yaml
from .chart import PATTERNS, phase_chart
from .limits import BODY_CAP, BodyLimit, TooLarge, read_capped
from .schema_form import (dump_yaml, form_fields, path_fields, refused_paths, set_key,
                          sheet_from_form)

__all__ = ["create_app", "serve", "BackgroundServer", "LOOPBACK", "CSP"]

LOOPBACK = ("127.0.0.1", "localhost", "::1")
"""Addresses that only this machine reaches; ``serve`` warns for any other."""

CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
       "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
"""The pages' Content-Security-Policy: nothing from another origin, no inline script."""

INPUT_ERRORS = (ArgumentError, SheetError, ModelError, CatalogError, EvidenceError, QualityError)
"""The errors a user fixes by changing the input: HTTP 422 (the CLI's exit status 2)."""

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")
STATIC = Path(__file__).parent / "static"


class InputProblem(Exception):
    """Bad input found by the web layer itself, with the field it belongs to."""

    def __init__(self, message: str, field: str) -> None:
        self.field = field
        self.reason = message
        super().__init__(f"{field}: {message}")


@dataclass
class Submission:
    """What one submitted form holds: the sheet (a mapping, or YAML text when pasted), the
    catalogs' texts, the evidence documents, the uploads' relative paths per key."""

    sheet: Any = None
    values: dict[str, str] = field(default_factory=dict)
    catalogs: list[str] = field(default_factory=list)
    evidence: list[Any] = field(default_factory=list)
    uploaded: dict[str, str] = field(default_factory=dict)
    pasted: str = ""

    @property
    def sheet_mapping(self) -> dict[str, Any]:
        return self.sheet if isinstance(self.sheet, dict) else {}


def _env() -> Environment:
    env = Environment(loader=PackageLoader("gpusizer.web", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["gib"] = lambda n: "—" if n is None else f"{n / (1 << 30):.2f} GiB"
    env.filters["data_uri"] = lambda text, mime: (
        f"data:{mime};charset=utf-8;base64,{base64.b64encode(text.encode()).decode()}")
    return env


def _field_of(exc: Exception) -> str:
    """Where an error is shown on the form: a dotted sheet key, ``catalogs``, ``evidence`` or
    ``sheet`` (the whole sheet)."""
    name = getattr(exc, "field", None) or ""
    file = getattr(exc, "file", None) or ""
    for slot in ("catalogs", "evidence"):
        if name.startswith(slot) or file.startswith(slot) or (
                slot == "catalogs" and isinstance(exc, CatalogError)) or (
                slot == "evidence" and isinstance(exc, EvidenceError)):
            return slot
    return name or "sheet"


def _errors_by_field(exc: Exception) -> dict[str, str]:
    """The form's errors: one per field. A sheet error listing several problems
    (``a.b: why; c: why``) is split so each shows next to its own field."""
    reason = getattr(exc, "reason", str(exc))
    if isinstance(exc, SheetError) and not exc.field:
        out: dict[str, str] = {}
        for part in reason.split("; "):
            m = re.match(r"^([A-Za-z_][\w.]*): (.+)$", part)
            if m:
                out.setdefault(m.group(1), m.group(2))
            else:
                out["sheet"] = (out.get("sheet", "") + " " + part).strip()
        return out
    return {_field_of(exc): reason}


def _safe_name(name: str | None, fallback: str) -> str:
    base = _SAFE_NAME.sub("_", Path(name or "").name).lstrip(".")
    return base[:100] or fallback


async def _read_form(request: Request, tmp: Path) -> Submission:
    """The submission of the sheet form; uploads of path keys saved under ``tmp``.

    Raises:
        InputProblem: a file that is not UTF-8 text, YAML or JSON as its slot needs.
        TooLarge: an upload over its kind's cap.
    """
    form = await request.form(max_files=100, max_fields=1000, max_part_size=SIZE_CAPS["sheet"])
    fields = form_fields()
    sub = Submission()
    try:
        sub.values = {k: v for k, v in form.items() if isinstance(v, str)}
        sub.pasted = sub.values.get("sheet_yaml", "").strip()
        if sub.pasted:
            sub.sheet = sub.pasted
        else:
            sub.sheet = sheet_from_form(fields, sub.values)
        for k, up in enumerate(u for u in form.getlist("catalogs") if not isinstance(u, str)):
            if not up.filename:
                continue
            try:
                sub.catalogs.append(decode_text(await read_capped(up, "catalog")))
            except YamlProblem as exc:
                raise InputProblem(f"{_safe_name(up.filename, 'catalog')}: {exc}",
                                   "catalogs") from None
        for up in (u for u in form.getlist("evidence") if not isinstance(u, str)):
            if not up.filename:
                continue
            data = await read_capped(up, "evidence file")
            try:
                sub.evidence.append(parse_json(data, "evidence file", EvidenceError,
                                               file=_safe_name(up.filename, "evidence")))
            except EvidenceError as exc:
                raise InputProblem(str(exc), "evidence") from None
        for f in path_fields(fields):
            ups = [u for u in form.getlist(f.name) if not isinstance(u, str) and u.filename]
            if not ups:
                continue
            kind = "config.json" if f.folder else ("corpus" if f.key == "corpus" else "sheet")
            folder = tmp / f.name.replace(".", "_")
            folder.mkdir()
            names = []
            for up in ups:
                name = _safe_name(up.filename, "upload")
                (folder / name).write_bytes(await read_capped(up, kind))
                names.append(name)
            rel = folder.name if f.folder else f"{folder.name}/{names[0]}"
            sub.uploaded[f.name] = rel
        if sub.uploaded and not isinstance(sub.sheet, dict):
            sub.sheet = _mapping(sub.sheet)
        for key, rel in sub.uploaded.items():
            set_key(sub.sheet, key, rel)
            if key == "model.path":
                sub.sheet["model"].pop("id", None)
    finally:
        await form.close()
    return sub


def _mapping(sheet: Any) -> dict[str, Any]:
    """A sheet given as YAML text as a mapping (for the path check).

    Raises:
        SheetError: invalid YAML or not a mapping.
    """
    if isinstance(sheet, dict):
        return sheet
    try:
        data = parse_yaml(sheet)
    except YamlProblem as exc:
        raise SheetError(str(exc), field="sheet") from None
    if not isinstance(data, dict):
        raise SheetError(f"expected a mapping of sheet keys, got {type(data).__name__}",
                         field="sheet")
    return data


def _check_sheet(sheet: Any, uploaded: dict[str, str]) -> None:
    """Refuse a path key that names no upload, and remote code.

    Raises:
        InputProblem: naming the key.
    """
    mapping = _mapping(sheet)
    bad = refused_paths(mapping, uploaded)
    if bad:
        raise InputProblem("refused: the web page opens no path given in a sheet; upload the "
                           "file in the form instead (a path key must name an uploaded file)",
                           bad)
    model = mapping.get("model")
    if isinstance(model, dict) and model.get("trust_remote_code") is True:
        raise InputProblem("refused: the web page never runs a model's remote code",
                           "model.trust_remote_code")


@dataclass(frozen=True)
class Offer:
    """One row of the result page's offers table (the plan's JSON offer and its words)."""

    o: dict[str, Any]
    fit: str
    rank: str
    margin_bytes: int


# Starlette spools a form's file part to an (unlinked) file of the system's temporary folder past
# 1 MiB; held in memory up to the body cap instead, an upload is only ever written into the
# request's own temporary folder (issue 18 point 5). The body cap bounds that memory.
MultiPartParser.spool_max_size = BODY_CAP


def create_app() -> FastAPI:
    """The web page as an ASGI application (wrapped in :class:`limits.BodyLimit`)."""
    from ..report.html import STYLE, details_html, page_one_html
    from ..report.markdown import render_markdown
    from ..report.html import render_html
    from ..report.offer_words import fit_words, rank_text

    env = _env()
    app = FastAPI(title="gpusizer", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(name).render(**context)
        return HTMLResponse(html, status_code=status, headers=_HEADERS)

    def form_page(sub: Submission | None = None, errors: dict[str, str] | None = None,
                  status: int = 200) -> HTMLResponse:
        values = sub.values if sub else {}
        return page("form.html", status, fields=form_fields(), values=values,
                    errors=errors or {}, pasted=sub.pasted if sub else "",
                    yaml_text=dump_yaml(sub.sheet) if sub and isinstance(sub.sheet, dict)
                    else "")

    @app.exception_handler(TooLarge)
    async def too_large(request: Request, exc: TooLarge) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"field": "body", "error": str(exc),
                                 "detail": [{"loc": ["body"], "msg": str(exc),
                                             "type": "too_large"}]}, status_code=413)
        return page("form.html", 413, fields=form_fields(), values={}, pasted="",
                    errors={"sheet": str(exc)}, yaml_text="")

    @app.get("/sheet.css")
    async def sheet_css() -> Response:
        return Response(STYLE, media_type="text/css", headers=_HEADERS)

    @app.get("/", response_class=HTMLResponse)
    async def index() -> HTMLResponse:
        return form_page()

    async def run(request: Request, what: str) -> HTMLResponse:
        with tempfile.TemporaryDirectory(prefix="gpusizer-web-") as tmp:
            sub = Submission()
            try:
                sub = await _read_form(request, Path(tmp))
                _check_sheet(sub.sheet, sub.uploaded)
                start = time.perf_counter()
                if what == "cards":
                    report = api.cards(sub.sheet, base_dir=tmp)
                    return page("cards.html", doc=report.to_json(), sheet=True,
                                sheet_yaml=_yaml_of(sub.sheet))
                report = api.plan(sub.sheet, catalogs=sub.catalogs or None,
                                  evidence=sub.evidence or None, base_dir=tmp)
                doc = report.to_json()
                sheet = report.result.sheet
                offers = [Offer(o, fit_words(doc, o), rank_text(o),
                                sheet.margin.of(o["device_bytes"]) if o.get("device_bytes")
                                else 0) for o in doc["offers"]]
                top = next((x for x in offers if x.o.get("device_bytes")), None)
                chart = phase_chart(doc, top.o if top else None,
                                    top.margin_bytes if top else None)
                return page("result.html", doc=doc, offers=offers, chart=chart,
                            patterns=PATTERNS,
                            page_one=Markup(page_one_html(doc)),
                            details=Markup(details_html(doc)),
                            downloads=[("gpusizer-plan.md", "text/markdown",
                                        render_markdown(doc)),
                                       ("gpusizer-plan.json", "application/json",
                                        json.dumps(doc, indent=2, default=str) + "\n"),
                                       ("gpusizer-plan.html", "text/html", render_html(doc)),
                                       ("sheet.yaml", "application/yaml",
                                        _yaml_of(sub.sheet))],
                            elapsed=time.perf_counter() - start)
            except InputProblem as exc:
                return form_page(sub, {exc.field: exc.reason}, 422)
            except INPUT_ERRORS as exc:
                return form_page(sub, _errors_by_field(exc), 422)
            except GpusizerError as exc:
                return form_page(sub, {_field_of(exc): str(exc)}, 500)

    @app.post("/plan", response_class=HTMLResponse)
    async def plan_page(request: Request) -> HTMLResponse:
        return await run(request, "plan")

    @app.post("/cards", response_class=HTMLResponse)
    async def cards_page(request: Request) -> HTMLResponse:
        return await run(request, "cards")

    @app.get("/cards", response_class=HTMLResponse)
    async def card_table() -> HTMLResponse:
        return page("cards.html", doc=api.cards().to_json(), sheet=False, sheet_yaml="")

    @app.post("/api/plan")
    async def api_plan(request: Request) -> JSONResponse:
        try:
            body = parse_json(await request.body(), "request body", ArgumentError)
            sheet, catalogs, evidence = _api_inputs(body)
            _check_sheet(sheet, {})
            report = api.plan(sheet, catalogs=catalogs, evidence=evidence)
        except (InputProblem, *INPUT_ERRORS) as exc:
            name = getattr(exc, "field", None) or _field_of(exc)
            msg = getattr(exc, "reason", str(exc))
            return JSONResponse({"field": name, "error": str(exc),
                                 "detail": [{"loc": _loc(name), "msg": msg,
                                             "type": "value_error"}]}, status_code=422)
        except GpusizerError as exc:
            return JSONResponse({"field": exc.field, "error": str(exc)}, status_code=500)
        return JSONResponse(report.to_json())

    # the first request answers as fast as the next: the pipeline's modules are imported now
    from .. import pipeline  # noqa: F401
    from ..report import json_report  # noqa: F401
    return BodyLimit(app)  # type: ignore[return-value]


def _loc(name: str) -> list[str]:
    """A field's place in ``POST /api/plan``'s body (FastAPI's ``loc``): a sheet key under
    ``sheet``, the others as named."""
    if name.split("[")[0] in ("body", "sheet", "catalogs", "evidence"):
        return ["body", name]
    return ["body", "sheet", *name.split(".")]


def _yaml_of(sheet: Any) -> str:
    return dump_yaml(sheet) if isinstance(sheet, dict) else str(sheet).rstrip() + "\n"


_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer"}


def _api_inputs(body: Any) -> tuple[Any, list[str] | None, list[Any] | None]:
    """``POST /api/plan``'s body checked for its shape (CONTRACT.md): ``sheet`` (a mapping or
    YAML text of at most the sheet's cap), optional ``catalogs`` (texts, each within the
    catalog cap) and ``evidence`` (documents).

    Raises:
        InputProblem: naming the field (``sheet``, ``catalogs[1]``, an unknown key …).
        TooLarge: a text over its kind's cap.
    """
    if not isinstance(body, dict):
        raise InputProblem("expected a JSON object {\"sheet\": …, \"catalogs\": [...], "
                           "\"evidence\": [...]}", "body")
    for key in body:
        if key not in ("sheet", "catalogs", "evidence"):
            raise InputProblem("unknown key (expected sheet, catalogs, evidence)", str(key)[:80])
    sheet = body.get("sheet")
    if not isinstance(sheet, (dict, str)):
        raise InputProblem("expected the sheet as a mapping of sheet keys or YAML text",
                           "sheet")
    if isinstance(sheet, str) and len(sheet.encode()) > SIZE_CAPS["sheet"]:
        raise TooLarge("sheet", SIZE_CAPS["sheet"])
    catalogs = body.get("catalogs")
    if catalogs is not None:
        if not isinstance(catalogs, list) or not catalogs:
            raise InputProblem("expected a non-empty list of catalog texts (YAML or CSV)",
                               "catalogs")
        for i, text in enumerate(catalogs):
            if not isinstance(text, str):
                raise InputProblem("expected a catalog's text (YAML or CSV)", f"catalogs[{i}]")
            if len(text.encode()) > SIZE_CAPS["catalog"]:
                raise TooLarge("catalog", SIZE_CAPS["catalog"])
    evidence = body.get("evidence")
    if evidence is not None:
        if not isinstance(evidence, list):
            raise InputProblem("expected a list of evidence documents", "evidence")
        for i, doc in enumerate(evidence):
            if not isinstance(doc, dict):
                raise InputProblem("expected an evidence document (a JSON object)",
                                   f"evidence[{i}]")
            if len(json.dumps(doc).encode()) > SIZE_CAPS["evidence file"]:
                raise TooLarge("evidence file", SIZE_CAPS["evidence file"])
    return sheet, catalogs, evidence


def serve(host: str = "127.0.0.1", port: int = 8765) -> None:
    """Run the web page with uvicorn on ``host``:``port`` until interrupted (a warning is
    printed for an address other than the loopback)."""
    import sys

    import uvicorn
    if host not in LOOPBACK:
        print(f"warning: gpusizer serve listens on {host}, not only this machine: anyone who "
              "reaches it can submit sheets and read results (no login)", file=sys.stderr)
    print(f"gpusizer: serving on http://{'[' + host + ']' if ':' in host else host}:{port}/",
          file=sys.stderr)
    uvicorn.run(create_app(), host=host, port=port, log_level="warning")


class BackgroundServer:
    """The web page served by uvicorn in a thread on a free loopback port, for tests, the speed
    benchmark and the screenshots: ``with BackgroundServer() as url: …`` (``url`` ends in
    ``/``); the server stops when the block ends.

    Raises:
        RuntimeError: the server did not start within 20 s.
    """

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.url = ""
        self._server: Any = None
        self._thread: Any = None

    def __enter__(self) -> str:
        import socket
        import threading

        import uvicorn
        with socket.socket() as s:
            s.bind((self.host, 0))
            port = s.getsockname()[1]
        config = uvicorn.Config(create_app(), host=self.host, port=port, log_level="warning",
                                lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the web page's server did not start")
            time.sleep(0.02)
        self.url = f"http://{self.host}:{port}/"
        return self.url

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(10)
