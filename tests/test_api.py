"""The Python API (``gpusizer.api``): each command on a sheet given as a mapping, YAML text or a
path gives the very document the CLI prints; catalogs as rows, text or paths; evidence as
documents or a folder; bad input raises the library's error naming the field."""

from __future__ import annotations

import builtins
import datetime as dt
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gpusizer
from gpusizer import api, pipeline
from gpusizer.catalog.cards import require_card
from gpusizer.cli import app
from gpusizer.errors import (CatalogError, EvidenceError, ModelError, SheetError,
                             UnknownCardError)
from gpusizer.pipeline import FitAnswer
from gpusizer.yaml_reader import parse_yaml

from .conftest import REPO_ROOT
from .decision.test_criteria import FULL_OFFER, SHEET, compat, measurement
from .golden.regenerate import _clean

EXAMPLES = REPO_ROOT / "examples"
SEED = EXAMPLES / "seed-7b-fp16.yaml"
SERVING = EXAMPLES / "llama-3.1-8b-serving.yaml"
QLORA = EXAMPLES / "llama-3.1-8b-qlora.yaml"
H200_LOTS = EXAMPLES / "catalogs" / "h200-lots.yaml"
TODAY = dt.date(2026, 12, 1)
KINDS = ("mapping", "text", "path")
GiB = 2**30


def sheet_as(kind: str, path: Path):
    """The sheet file as each kind the API takes (the mapping is what the CLI's reader parses)."""
    if kind == "path":
        return path
    text = path.read_text(encoding="utf-8")
    return text if kind == "text" else parse_yaml(text)


def cli_doc(*args: str) -> dict:
    """The CLI's JSON for ``args`` (in process)."""
    res = CliRunner().invoke(app, [*args, "--format", "json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.parametrize("kind", KINDS)
def test_estimate_each_sheet_kind_is_the_clis_json(kind):
    r = api.estimate(sheet_as(kind, SERVING), card="H100 SXM")
    assert isinstance(r, api.EstimateReport)
    assert r.to_json() == cli_doc("estimate", str(SERVING), "--card", "H100 SXM")
    # Llama-3.1-8B: 32 layers × 8 KV heads × head_dim 128, K and V, 2 bytes (bf16), for
    # 8 sequences × (4096 + 4096) tokens: 131072 B per token × 65536 tokens = 8 GiB
    assert r.result.estimate.item("kv_cache").bytes == 2 * 32 * 8 * 128 * 2 * 8 * 8192 == 8 * GiB


@pytest.mark.parametrize("kind", KINDS)
def test_estimate_the_seeds_worked_example(kind):
    r = api.estimate(sheet_as(kind, SEED))
    # R7: 7e9 parameters × 2 bytes (fp16) + a 6 GiB reserve = 19.04 GiB
    assert r.result.estimate.weights_bytes == 14_000_000_000
    assert r.result.estimate.envelope_bytes == 14_000_000_000 + 6 * GiB
    assert r.to_json() == cli_doc("estimate", str(SEED))


@pytest.mark.parametrize("kind", KINDS)
def test_plan_each_sheet_kind_is_the_clis_json(kind):
    r = api.plan(sheet_as(kind, SEED), today=TODAY)
    assert isinstance(r, api.PlanReport)
    doc = r.to_json()
    assert doc == cli_doc("plan", str(SEED), "--today", TODAY.isoformat(), "--quiet")
    # the seed's short choice (R11): both offers conditional at their documented prices
    assert [(o["total_usd"], o["verdict"]) for o in doc["offers"]] == [
        (47.14, "conditional"), (55.71, "conditional")]


@pytest.mark.parametrize("kind", KINDS)
def test_fit_each_sheet_kind_is_the_clis_json(kind):
    answer = api.fit(sheet_as(kind, QLORA), card="RTX 6000 Ada")
    assert isinstance(answer, FitAnswer)
    assert answer.to_json() == cli_doc("fit", str(QLORA), "--card", "RTX 6000 Ada")
    assert answer.card == "RTX 6000 Ada" and answer.margin == "5%"


@pytest.mark.parametrize("kind", KINDS)
def test_alternatives_each_sheet_kind_is_the_clis_json(kind):
    r = api.alternatives(sheet_as(kind, SERVING), today=TODAY)
    assert isinstance(r, api.AlternativesReport)
    assert r.to_json() == cli_doc("alternatives", str(SERVING), "--today", TODAY.isoformat())


@pytest.fixture(scope="module")
def tiny_sheet(tmp_path_factory) -> Path:
    """A sheet naming a model folder by a relative path (tests/quality/data/tiny-llama: a
    2-layer Llama config, no weights)."""
    folder = tmp_path_factory.mktemp("tiny")
    shutil.copytree(REPO_ROOT / "tests/quality/data/tiny-llama", folder / "tiny-llama")
    path = folder / "sheet.yaml"
    path.write_text("model: {path: tiny-llama}\ntask: inference\nweights: fp32\n"
                    "inference: {prompt_tokens: 8, new_tokens: 8}\n")
    return path


@pytest.mark.parametrize("kind", KINDS)
def test_simulate_each_sheet_kind_reads_relative_paths_from_base_dir(kind, tiny_sheet):
    pytest.importorskip("torch", reason="the simulate extra (torch) is not installed")
    base = None if kind == "path" else tiny_sheet.parent  # a path sheet: its own folder
    r = api.simulate(sheet_as(kind, tiny_sheet), card="H100 SXM", base_dir=base)
    assert isinstance(r, api.SimulationReport)
    cli = cli_doc("simulate", str(tiny_sheet), "--card", "H100 SXM")
    assert _clean(r.to_json()) == _clean(cli)  # seconds and versions dropped
    # per layer: q and o 64 × 64, k and v 64 × (2 KV heads × 16), MLP 3 × 64 × 176, two norms
    # of 64; then the final norm, embeddings and lm_head (untied) 256 × 64: 125 248 fp32
    # parameters × 4 B, and each of the 5 norms (256 B) booked as one 512-byte CUDA block
    per_layer = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 176 + 2 * 64
    parameters = 2 * per_layer + 64 + 2 * 256 * 64
    assert parameters == 125_248
    assert r.result.memory.item("weights").bytes == 4 * parameters + 5 * (512 - 256)


def test_estimate_a_text_or_mapping_sheet_reads_its_model_path_from_base_dir(tiny_sheet):
    text = tiny_sheet.read_text()
    from_path = api.estimate(tiny_sheet).to_json()
    assert api.estimate(text, base_dir=tiny_sheet.parent).to_json() == from_path
    assert api.estimate(parse_yaml(text), base_dir=str(tiny_sheet.parent)).to_json() == from_path
    with pytest.raises(ModelError, match="no config.json") as info:  # read from the working
        api.estimate(text)                                            # directory: no tiny-llama
    assert info.value.field == "model.path" and info.value.file == "tiny-llama"


def test_catalogs_as_rows_text_or_path_give_the_same_decisions():
    text = H200_LOTS.read_text(encoding="utf-8")
    by_path = api.plan(SERVING, catalogs=[H200_LOTS], today=TODAY).to_json()
    assert by_path == cli_doc("plan", str(SERVING), "--catalog", str(H200_LOTS), "--today",
                              TODAY.isoformat(), "--quiet")
    by_text = api.plan(SERVING, catalogs=[text], today=TODAY).to_json()
    by_rows = api.plan(SERVING, catalogs=parse_yaml(text), today=TODAY).to_json()
    one_text = api.plan(SERVING, catalogs=text, today=TODAY).to_json()
    for doc in (by_text, by_rows, one_text):
        assert doc["offers"] == by_path["offers"] and doc["memory"] == by_path["memory"]
    assert [c["file"] for c in by_text["gpusizer"]["catalogs"]] == ["catalogs[0]"]
    assert by_text["gpusizer"]["catalogs"][0]["sha256"] == by_path["gpusizer"]["catalogs"][0][
        "sha256"]  # the same bytes
    assert [(c["file"], c["kind"]) for c in by_rows["gpusizer"]["catalogs"]] == [
        ("catalogs", "offers-rows")]


def test_evidence_as_documents_or_a_folder_decides_the_same(tmp_path):
    docs = [measurement(SHEET), compat()]
    folder = tmp_path / "evidence"
    folder.mkdir()
    for i, doc in enumerate(docs):
        (folder / f"e{i}.json").write_text(json.dumps(doc))
    kw = {"catalogs": [[FULL_OFFER]], "today": dt.date(2026, 11, 30)}
    from_folder = api.plan(SHEET, evidence=folder, **kw).to_json()
    from_docs = api.plan(SHEET, evidence=docs, **kw).to_json()
    assert from_docs["offers"] == from_folder["offers"]
    assert from_docs["evidence"] == from_folder["evidence"]
    # measured in the offer's own environment on its card: every criterion acceptable
    offer = from_docs["offers"][0]
    assert {k: c["state"] for k, c in offer["criteria"].items()} == {
        k: "acceptable" for k in offer["criteria"]}
    assert offer["verdict"] == "selected" and offer["rank"] == 1


@pytest.mark.parametrize("call, error, field, fragment", [
    (lambda: api.estimate(42), SheetError, "sheet", "expected a sheet"),
    (lambda: api.estimate(Path("absent.yaml")), SheetError, None, "cannot read the sheet"),
    (lambda: api.estimate({**SHEET, "reserve": 6}), SheetError, None, "reserve: "),
    (lambda: api.estimate("model: [unclosed"), SheetError, None, "invalid YAML"),
    (lambda: api.estimate(SEED, card="RTX 4099"), UnknownCardError, "card", "RTX 4090"),
    (lambda: api.plan(SEED, catalogs=[{"id": "a", "provider": "p", "card": "T4", "cards": 0}]),
     CatalogError, "row 1.cards", "catalogs: row 1.cards: "),
    (lambda: api.plan(SEED, catalogs=[3]), CatalogError, "catalogs[0]", "expected a catalog"),
    (lambda: api.plan(SEED, catalogs="[]"), CatalogError, "--catalog", "gave no offer"),
    (lambda: api.plan(SEED, evidence="evidence/"), EvidenceError, "evidence", "os.PathLike"),
    (lambda: api.plan(SEED, evidence=[{"kind": "compatibility", "document": "d",
                                       "version": "1"}]),
     EvidenceError, None, "evidence[0]: "),
])
def test_bad_input_raises_the_library_error_naming_the_field(call, error, field, fragment):
    with pytest.raises(error) as info:
        call()
    assert fragment in str(info.value)
    if field is not None:
        assert info.value.field == field
    assert not hasattr(info.value, "exit_code")  # the CLI alone picks exit statuses


def _calls_on_examples() -> dict[str, object]:
    """Each API function called on a bundled example."""
    out = {"estimate": api.estimate(SEED), "plan": api.plan(SEED, today=TODAY),
           "fit": api.fit(SERVING, card="H100 SXM"),
           "alternatives": api.alternatives(SEED, today=TODAY), "cards": api.cards(SERVING)}
    try:
        import torch  # noqa: F401
    except ImportError:
        return out
    # a bundled sheet whose model folder holds the whole config.json (the simulation needs it)
    out["simulate"] = api.simulate(REPO_ROOT / "benchmarks/sheets/llama-serve-4k.yaml",
                                   card="H100 SXM")
    return out


def test_every_name_in_api_all_is_called_or_returned():
    results = _calls_on_examples()
    for name in api.__all__:
        obj = getattr(api, name)
        if isinstance(obj, type):
            assert any(isinstance(r, obj) for r in results.values()), name
            continue
        if name == "simulate" and name not in results:
            continue  # the simulate extra is not installed
        assert name in results, name
        doc = results[name].to_json()
        assert json.loads(json.dumps(doc)) == doc  # JSON values only


def test_every_name_in_gpusizer_all_is_called():
    assert gpusizer.__version__ == "0.1.0"
    for name in gpusizer.__all__:
        if name == "__version__":
            continue
        result = getattr(gpusizer, name)(SEED, **({"today": TODAY} if name == "plan" else {}))
        assert result.to_json() == getattr(api, name)(SEED, **(
            {"today": TODAY} if name == "plan" else {})).to_json()
    assert {"estimate", "plan"} <= set(dir(gpusizer))
    with pytest.raises(AttributeError):
        gpusizer.fit_everything  # noqa: B018


def test_import_gpusizer_is_light_and_the_api_imports_no_torch():
    code = ("import sys\nimport gpusizer\n"
            "assert [m for m in sys.modules if m.startswith('gpusizer')] == ['gpusizer']\n"
            "assert 'pydantic' not in sys.modules\n"
            "r = gpusizer.estimate(__import__('pathlib').Path('examples/seed-7b-fp16.yaml'))\n"
            "assert r.to_json()['memory']['weights_bytes'] == 14_000_000_000\n"
            "bad = [m for m in ('torch', 'transformers', 'peft') if m in sys.modules]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=True)


def test_computing_opens_no_file_but_the_packages_own_data(monkeypatch):
    """After the input stage, estimate, plan and alternatives open nothing of the user's (the
    card table and registry are package data under src/gpusizer/data)."""
    sheet, base = pipeline.read_sheet(SERVING)
    plan_inputs = pipeline.load_plan_inputs(sheet, catalogs=[H200_LOTS], base_dir=base)
    sheet_inputs = pipeline.load_sheet_inputs(sheet, base_dir=base)
    card = require_card("H100 SXM")
    opened: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def spy_open(file, *a, **k):
        opened.append(str(file))
        return real_open(file, *a, **k)

    def spy_os_open(file, *a, **k):
        opened.append(str(file))
        return real_os_open(file, *a, **k)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(io, "open", spy_open)
    monkeypatch.setattr(os, "open", spy_os_open)
    pipeline.estimate(sheet_inputs, card=card)
    pipeline.plan(plan_inputs, today=TODAY)
    pipeline.alternatives(plan_inputs, today=TODAY)
    data = str(Path(gpusizer.__file__).parent / "data")
    assert [f for f in opened if not f.startswith(data)] == []


@pytest.mark.parametrize(("call", "field", "words"), [
    (lambda s: api.estimate(s, card=4090), "card", "expected a card name (str) or a gpusizer "
                                                   "Card, got int"),
    (lambda s: api.fit(s, card=None), "card", "got NoneType"),
    (lambda s: api.plan(s, catalogs=42), "catalogs", "got int"),
    (lambda s: api.plan(s, catalogs=[]), "catalogs", "an empty sequence gives no offer"),
    (lambda s: api.plan(s, today="2026-12-01"), "today", "expected a datetime.date, got str"),
    (lambda s: api.alternatives(s, today=20261201), "today", "got int"),
])
def test_an_argument_of_the_wrong_kind_is_an_argument_error_naming_it(call, field, words):
    from gpusizer.errors import ArgumentError
    with pytest.raises(ArgumentError) as exc:
        call(REPO_ROOT / "examples/llama-3.1-8b-serving.yaml")
    assert exc.value.field == field and words in str(exc.value)


def test_a_datetime_counts_as_its_date():
    sheet = REPO_ROOT / "examples/llama-3.1-8b-serving.yaml"
    assert api.plan(sheet, today=dt.datetime(2026, 12, 1, 23, 59)).to_json() == \
        api.plan(sheet, today=dt.date(2026, 12, 1)).to_json()
