"""The web page through FastAPI's TestClient (issue 18 points 1, 2 and 5): the form, the result,
the cards view, ``POST /api/plan`` (CONTRACT.md), 422 naming the field, 413 over the caps, no
user path opened, every value escaped."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import re

import pytest
import yaml

import gpusizer.api as api
from gpusizer.input_files import SIZE_CAPS
from gpusizer.sheet import Sheet
from gpusizer.web.schema_form import form_fields, walk

from ..conftest import EXAMPLES, REPO_ROOT
from .conftest import MARKUP_CATALOG, README_FORM, README_SHEET, SCRIPT, web_or_skip

REGISTRY = REPO_ROOT / "src" / "gpusizer" / "data" / "registry"


def _field_error(html: str, name: str) -> str:
    """The error shown inside the form field ``name`` (its div), or ''."""
    m = re.search(r'<div class="field[^"]*" data-field="%s">(.*?)</div>' % re.escape(name),
                  html, re.S)
    assert m, f"no field {name} on the page"
    err = re.search(r'<p class="error"[^>]*>(.*?)</p>', m.group(1), re.S)
    return err.group(1) if err else ""


def test_the_form_has_every_sheet_key_and_needs_nothing_from_elsewhere(client):
    r = client.get("/")
    assert r.status_code == 200
    for f in walk(form_fields()):
        if f.kind != "object":
            assert f'name="{f.name}"' in r.text, f.name
    assert r.headers["content-security-policy"].startswith("default-src 'self'")
    assert not re.search(r'(src|href)="(https?:)?//', r.text)
    for asset in ("/static/gpusizer.js", "/static/gpusizer.css", "/sheet.css"):
        assert client.get(asset).status_code == 200


def test_the_readme_example_answers_first_with_the_shortlist_and_the_chart(client):
    r = client.post("/plan", data=README_FORM)
    assert r.status_code == 200, r.text[:500]
    answer = re.search(r'<ul class="answer"><li>(.*?)</li>', r.text).group(1)
    assert answer.startswith("Answer: seed-rtx-6000-ada (RTX 6000 Ada × 1, 55.71 USD)")
    assert "estimated: fits, 17.10 GiB headroom" in answer
    # the answer comes before the chart, the offers and the details
    assert r.text.index('class="answer"') < r.text.index('id="phase-chart"') \
        < r.text.index('id="offers"') < r.text.index('id="details"')
    assert re.findall(r'<g class="bar" data-phase="(\w+)"', r.text) == ["load", "prefill",
                                                                       "decode"]
    # the device line is the top offer's: RTX 6000 Ada, 51 527 024 640 B = 47.99 GiB, margin 5 %
    assert "device 47.99 GiB (seed-rtx-6000-ada)" in r.text
    assert "device − margin 45.59 GiB (margin 2.40 GiB)" in r.text   # 2 576 351 232 B
    assert r.text.count('<tr class="offer"') == 2
    assert r.text.count('<details class="criterion">') == 12       # 2 offers × 6 criteria


def test_downloads_are_the_reports_of_the_same_plan(client):
    r = client.post("/plan", data=README_FORM)
    links = dict(re.findall(r'<a download="([^"]+)" href="data:[^;]+;charset=utf-8;base64,'
                            r'([^"]+)"', r.text))
    assert set(links) == {"gpusizer-plan.md", "gpusizer-plan.json", "gpusizer-plan.html",
                          "sheet.yaml"}
    text = {k: base64.b64decode(v).decode() for k, v in links.items()}
    doc = json.loads(text["gpusizer-plan.json"])
    expected = api.plan(README_SHEET).to_json()
    assert doc["sheet_sha256"] == expected["sheet_sha256"]
    assert [o["id"] for o in doc["offers"]] == [o["id"] for o in expected["offers"]]
    assert text["gpusizer-plan.md"].startswith("# ")
    assert text["gpusizer-plan.html"].startswith("<!DOCTYPE html>")
    assert Sheet.model_validate(
        yaml.safe_load(text["sheet.yaml"])).model_dump() == \
        Sheet.model_validate(yaml.safe_load(README_SHEET.read_text())).model_dump()


def test_a_bad_value_is_shown_next_to_its_field(client):
    r = client.post("/plan", data={**README_FORM, "inference.concurrency": "0"})
    assert r.status_code == 422
    assert _field_error(r.text, "inference.concurrency") == "expected an integer &gt;= 1, got 0"
    assert _field_error(r.text, "inference.prompt_tokens") == ""
    # what was typed stays in the form
    assert 'name="model.id" value="meta-llama/Meta-Llama-3.1-8B"' in r.text


def test_a_pasted_sheet_replaces_the_fields(client):
    r = client.post("/plan", data={"sheet_yaml": README_SHEET.read_text(), "task": "full"})
    assert r.status_code == 200
    assert "estimated: fits, 17.10 GiB headroom" in r.text


@pytest.mark.parametrize("sheet", [
    "model: {path: /etc}\ntask: inference\ninference: {prompt_tokens: 1, new_tokens: 1}\n",
    {"model": {"path": "/etc"}, "task": "inference"},
])
def test_api_refuses_a_user_path_with_422_naming_model_path(client, sheet):
    r = client.post("/api/plan", json={"sheet": sheet})
    assert r.status_code == 422
    body = r.json()
    assert body["field"] == "model.path"
    assert body["detail"][0]["loc"] == ["body", "sheet", "model", "path"]
    assert "upload" in body["detail"][0]["msg"]


def test_the_form_refuses_a_pasted_path(client):
    pasted = README_SHEET.read_text() + "quality: {corpus: /etc/passwd}\n"
    r = client.post("/plan", data={"sheet_yaml": pasted})
    assert r.status_code == 422
    assert "upload the file in the form" in _field_error(r.text, "quality.corpus")


def test_remote_code_is_refused(client):
    r = client.post("/api/plan", json={"sheet": {"model": {"id": "a/b", "trust_remote_code":
                                                           True}, "task": "inference"}})
    assert r.status_code == 422 and r.json()["field"] == "model.trust_remote_code"


def test_an_uploaded_config_json_is_the_model_and_its_folder_is_deleted_after(client, tmp_path,
                                                                            monkeypatch):
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    config = json.loads((REGISTRY / "meta-llama--Meta-Llama-3.1-8B.json").read_text())["config"]
    form = {k: v for k, v in README_FORM.items() if k != "model.id"}
    r = client.post("/plan", data=form, files=[
        ("model.path", ("config.json", json.dumps(config).encode(), "application/json"))])
    assert r.status_code == 200, r.text[:2000]
    assert "8030261248 parameters" in r.text        # Llama 3.1 8B, counted from the upload
    assert list(tmp_path.iterdir()) == []            # the request's folder is gone
    yaml_text = base64.b64decode(re.search(
        r'download="sheet.yaml" href="data:[^,]+,([^"]+)"', r.text).group(1)).decode()
    assert "path: model_path\n" in yaml_text and "id:" not in yaml_text


def test_api_plan_is_the_plan_json(client):
    r = client.post("/api/plan", json={"sheet": README_SHEET.read_text()})
    assert r.status_code == 200
    doc = r.json()
    expected = api.plan(README_SHEET, today=dt.date.today()).to_json()
    assert doc["sheet_sha256"] == expected["sheet_sha256"]
    assert doc["offers"] == expected["offers"]
    assert doc["memory"]["peak_bytes"] == expected["memory"]["peak_bytes"] == 29952057344


def test_api_plan_with_catalogs_and_evidence(client):
    sheet = (EXAMPLES / "deepseek-v3-8xh200-vllm.yaml").read_text()
    catalog = (EXAMPLES / "catalogs" / "h200-lots.yaml").read_text()
    r = client.post("/api/plan", json={"sheet": sheet, "catalogs": [catalog], "evidence": []})
    assert r.status_code == 200, r.text
    rows = yaml.safe_load(catalog)
    assert [o["id"] for o in r.json()["offers"]] == [
        o["id"] for o in api.plan(EXAMPLES / "deepseek-v3-8xh200-vllm.yaml",
                                  catalogs=[EXAMPLES / "catalogs" / "h200-lots.yaml"])
        .to_json()["offers"]]
    assert {o["id"] for o in r.json()["offers"]} == {row["id"] for row in rows}


@pytest.mark.parametrize(("body", "field"), [
    ({"sheet": 3}, "sheet"),
    ({"sheet": {"model": {"id": "a/b"}, "task": "inference"}, "extra": 1}, "extra"),
    ({"sheet": {"model": {"id": "a/b"}, "task": "inference"}, "catalogs": [7]}, "catalogs[0]"),
    ({"sheet": {"model": {"id": "a/b"}, "task": "inference"}, "evidence": ["x"]},
     "evidence[0]"),
    ({"sheet": {"model": {"id": "x/y"}, "task": "inference",
                "inference": {"prompt_tokens": 0, "new_tokens": 1}}},
     "inference.prompt_tokens"),
])
def test_api_bad_input_is_422_naming_the_field(client, body, field):
    r = client.post("/api/plan", json=body)
    assert r.status_code == 422
    assert r.json()["field"] == field


def test_api_body_that_is_not_json_is_422(client):
    r = client.post("/api/plan", content=b"{not json", headers={"content-type":
                                                                 "application/json"})
    assert r.status_code == 422 and "cannot read JSON" in r.json()["error"]


def test_a_sheet_over_its_cap_is_413(client):
    text = "# " + "x" * SIZE_CAPS["sheet"] + "\n"
    r = client.post("/api/plan", json={"sheet": text})
    assert r.status_code == 413
    assert f"over the {SIZE_CAPS['sheet']}-byte limit" in r.json()["error"]


def test_an_upload_over_its_cap_is_413(client):
    big = b" " * (SIZE_CAPS["config.json"] + 1)
    r = client.post("/plan", data=README_FORM, files=[("model.path", ("config.json", big))])
    assert r.status_code == 413
    assert f"over the {SIZE_CAPS['config.json']}-byte limit" in r.text


def _run_limited(headers, chunks, cap):
    """BodyLimit over an app that reads the whole body: (status, bytes handed to the app,
    receive calls)."""
    from gpusizer.web.limits import BodyLimit, TooLarge
    calls = {"receive": 0, "read": 0}
    sent = []

    async def app(scope, receive, send):
        more = True
        while more:
            m = await receive()
            calls["read"] += len(m.get("body", b""))
            more = m.get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def receive():
        calls["receive"] += 1
        body = chunks.pop(0)
        return {"type": "http.request", "body": body, "more_body": bool(chunks)}

    async def send(m):
        sent.append(m)

    scope = {"type": "http", "headers": headers}
    asyncio.run(BodyLimit(app, cap=cap)(scope, receive, send))
    assert TooLarge
    return sent[0]["status"], calls["read"], calls["receive"]


def test_a_declared_length_over_the_cap_is_413_before_any_byte_is_read():
    status, read, receives = _run_limited([(b"content-length", b"1001")], [b"x" * 1001], 1000)
    assert (status, read, receives) == (413, 0, 0)


def test_a_chunked_body_is_stopped_at_the_first_chunk_past_the_cap():
    chunks = [b"x" * 400] * 10                    # 4000 bytes, no Content-Length
    status, read, receives = _run_limited([], chunks, 1000)
    assert status == 413
    assert receives == 3                          # 400 + 400 + 400 > 1000: stopped there
    assert read == 800                            # the app never saw the chunk past the cap


def test_a_body_within_the_cap_passes():
    assert _run_limited([(b"content-length", b"800")], [b"x" * 400, b"x" * 400], 1000)[0] == 200


def test_markup_in_a_catalog_is_escaped_in_the_html(client):
    r = client.post("/plan", data=README_FORM,
                    files=[("catalogs", ("markup.yaml", MARKUP_CATALOG.encode()))])
    assert r.status_code == 200, r.text[:1000]
    assert SCRIPT not in r.text and "<img src=x" not in r.text and "<b>bold</b>" not in r.text
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    offer_ids = re.findall(r'<td class="offer-id">(.*?)</td>', r.text)
    assert escaped in offer_ids and "&lt;img src=x onerror=alert(2)&gt;" in offer_ids
    assert f'<td class="provider">{escaped}</td>' in r.text
    assert f'<td class="card">{escaped} × 1</td>' in r.text
    assert r.text.count("<script") == 1           # the page's own /static/gpusizer.js


def test_a_bad_catalog_is_shown_next_to_the_catalog_upload(client):
    r = client.post("/plan", data=README_FORM,
                    files=[("catalogs", ("bad.yaml", b"- id: x\n  cards: -1\n"))])
    assert r.status_code == 422
    assert _field_error(r.text, "catalogs")


def test_the_cards_view(client):
    r = client.post("/cards", data=README_FORM)
    assert r.status_code == 200
    expected = api.cards(README_SHEET).to_json()["answer_text"]
    assert f'<p class="answer" id="cards-answer">{expected}</p>' in r.text
    assert r.text.count('<td class="card">') == len(api.cards().to_json()["cards"])
    table = client.get("/cards")
    assert table.status_code == 200 and "RTX 6000 Ada" in table.text


def test_serve_without_the_extra_names_the_pip_command(monkeypatch):
    import importlib.util

    from typer.testing import CliRunner

    from gpusizer.cli import app
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "fastapi" else real(name, *a))
    r = CliRunner().invoke(app, ["serve"])
    assert r.exit_code == 1
    assert r.output.strip() == ('error: gpusizer serve needs the web extra: '
                                'pip install "gpusizer[web]" (from a checkout: '
                                'pip install -c constraints.txt -e ".[web]")')


@pytest.mark.parametrize(("host", "warned"), [("127.0.0.1", False), ("0.0.0.0", True)])
def test_serve_binds_to_the_loopback_and_warns_for_another_address(monkeypatch, capsys, host,
                                                                   warned):
    web_or_skip()
    import uvicorn

    from gpusizer.web import app as web_app
    seen = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(kw))
    web_app.serve(host=host, port=8765)
    assert (seen["host"], seen["port"]) == (host, 8765)
    assert ("warning: gpusizer serve listens on 0.0.0.0" in capsys.readouterr().err) is warned


def test_serve_defaults(monkeypatch):
    from typer.testing import CliRunner

    from gpusizer.cli import app
    web_or_skip()
    from gpusizer.web import app as web_app
    seen = {}
    monkeypatch.setattr(web_app, "serve", lambda **kw: seen.update(kw))
    assert CliRunner().invoke(app, ["serve"]).exit_code == 0
    assert seen == {"host": "127.0.0.1", "port": 8765}


def test_a_large_upload_is_never_spooled_outside_the_requests_folder():
    # Starlette writes a file part past spool_max_size (1 MiB by default) to an unlinked file of
    # the system's temporary folder; the app keeps parts in memory up to its body cap instead
    from starlette.formparsers import MultiPartParser

    from gpusizer.web.app import create_app
    from gpusizer.web.limits import BODY_CAP
    create_app()
    assert MultiPartParser.spool_max_size == BODY_CAP > 64 << 20  # a whole catalog fits
