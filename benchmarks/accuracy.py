"""The accuracy scoreboard: every public case gpusizer holds, run through ``estimate`` (and
``simulate`` where the extra is installed), compared with what its counter observed.

    python benchmarks/accuracy.py               # print the scoreboard
    python benchmarks/accuracy.py --write       # also rewrite docs/accuracy.json and .md
    python benchmarks/accuracy.py --no-simulate # estimate only (what the test re-runs)

Cases come from ``examples/validation/cases.yaml`` (sheet, card, observations each with a named
counter) and, when ``../shared`` is beside the checkout, the published parameter counts of
``../shared/data/models/truth.json`` for every registry model that has one.

Each observation is compared with the figure its counter measures (issue 16, point 1):

======================  ==============================================================
counter                 gpusizer figure
======================  ==============================================================
max_memory_allocated    ``memory.peak_bytes``
max_memory_reserved     ``memory.reserved_peak_bytes`` (not predicted yet: reported apart)
nvml                    ``memory.device_peak_bytes``
vllm_kv_tokens          ``memory.pool.kv_tokens``
sglang_kv_tokens        ``memory.pool.kv_tokens``
weights_bytes           ``memory.pool.weights_bytes`` for an engine, else ``weights_bytes``
verdict                 the fit rule on the case's card (``fit.estimated_fit``)
not_stated              ``memory.device_peak_bytes``, in a group of its own
parameters              the count from the same config.json (logical or as stored)
======================  ==============================================================

Error is signed and relative: (ours − observed) / observed. Per group (the workload kind and
the counter) the board gives n, the median |error|, the worst case, the bias (median signed
error) and, for verdicts, how many are right (fits ↔ fits, oom ↔ does_not_fit) among those
that claim either; a ``borderline`` or ``unknown`` word claims neither and is counted as hedged
(its own column: a hedge is not wrong, but it is no answer either).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import sys
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "examples" / "validation" / "cases.yaml"
RECORD_JSON = ROOT / "docs" / "accuracy.json"
RECORD_MD = ROOT / "docs" / "accuracy.md"
SHARED = ROOT.parent / "shared"

COUNTERS = ("max_memory_allocated", "max_memory_reserved", "nvml", "vllm_kv_tokens",
            "sglang_kv_tokens", "weights_bytes", "verdict", "not_stated")
HEDGED = ("borderline", "unknown")
"""Fit words that claim neither a fit nor an overload: a verdict row with one is hedged."""
LIBRARIES = ("gpusizer", "transformers", "torch", "peft", "pydantic", "huggingface_hub")


@dataclass(frozen=True)
class Row:
    """One observation against one method's figure.

    ``observed`` and ``figure`` are bytes, tokens or parameters (ints) or, for a verdict,
    ``fits`` / ``oom`` and the fit rule's word; ``error`` is (figure − observed) / observed, or
    None for a verdict or when the figure is missing (``missing`` says why)."""

    case: str
    group: str
    counter: str
    method: str
    observed: int | str
    figure: int | str | None
    error: float | None
    right: bool | None
    missing: str | None = None
    note: str | None = None


def load_manifest(path: Path = MANIFEST) -> list[dict]:
    """The cases of ``cases.yaml``, each checked for the keys the scoreboard reads.

    Raises:
        ValueError: a case without id, a duplicate id, an unknown counter, or neither
            ``sheet``/``observations`` nor ``unexpressible``.
    """
    cases = yaml.safe_load(path.read_text(encoding="utf-8"))["cases"]
    seen: set[str] = set()
    for case in cases:
        cid = case.get("id")
        if not cid or cid in seen:
            raise ValueError(f"cases.yaml: case id {cid!r} is missing or repeated")
        seen.add(cid)
        if case.get("unexpressible"):
            continue
        if not case.get("sheet") or not case.get("observations"):
            raise ValueError(f"cases.yaml: {cid}: needs sheet and observations, or unexpressible")
        for obs in case["observations"]:
            if obs.get("counter") not in COUNTERS:
                raise ValueError(f"cases.yaml: {cid}: counter {obs.get('counter')!r} is not one "
                                 f"of {', '.join(COUNTERS)}")
    return cases


def _kind(doc: dict) -> str:
    sheet = doc["sheet"]
    if sheet["task"] != "inference":
        return "training"
    engine = (sheet.get("inference") or {}).get("engine", "transformers")
    return "serving" if engine in ("vllm", "sglang") else "inference"


def _figure(doc: dict, counter: str) -> tuple[int | str | None, str | None]:
    """The figure ``counter`` measures in an estimate/simulate document, or None and why."""
    mem = doc["memory"]
    pool = mem.get("pool") or mem.get("vllm")
    if counter == "max_memory_allocated":
        return mem["peak_bytes"], None if mem["peak_bytes"] is not None else "peak unknown"
    if counter == "max_memory_reserved":
        value = mem.get("reserved_peak_bytes")
        return value, None if value is not None else "no reserved figure predicted yet"
    if counter in ("nvml", "not_stated"):
        value = mem["device_peak_bytes"]
        return value, None if value is not None else "device peak unknown"
    if counter in ("vllm_kv_tokens", "sglang_kv_tokens"):
        if not pool:
            return None, "no engine pool (a card is needed)"
        return pool["kv_tokens"], None
    if counter == "weights_bytes":
        return (pool or {}).get("weights_bytes", mem["weights_bytes"]), None
    if counter == "verdict":
        fit = doc.get("fit") or {}
        word = fit.get("estimated_fit")
        return word, None if word else "no card: no fit"
    raise ValueError(counter)


def _rows_for(case: dict, doc: dict, method: str) -> list[Row]:
    kind = _kind(doc)
    rows = []
    for obs in case["observations"]:
        counter, observed = obs["counter"], obs["value"]
        figure, missing = _figure(doc, counter)
        group = "verdicts" if counter == "verdict" else f"{kind} · {counter}"
        if counter == "verdict":
            # borderline / unknown hedge: neither right nor wrong (counted as hedged)
            right = None if figure is None or figure in HEDGED else (
                (observed == "fits" and figure == "fits")
                or (observed == "oom" and figure == "does_not_fit"))
            rows.append(Row(case["id"], group, counter, method, observed, figure, None, right,
                            missing))
            continue
        error = None if figure is None else (figure - observed) / observed
        rows.append(Row(case["id"], group, counter, method, observed, figure, error, None,
                        missing))
    return rows


def _failed(case: dict, kind: str, method: str, reason: str) -> list[Row]:
    return [Row(case["id"], "verdicts" if o["counter"] == "verdict" else f"{kind} · {o['counter']}",
                o["counter"], method, o["value"], None, None, None, reason)
            for o in case["observations"]]


def score_case(case: dict, method: str = "estimate") -> list[Row]:
    """Run one case's sheet through ``method`` (``estimate`` or ``simulate``) on its card and
    compare every observation; a refusal becomes rows with ``missing`` set to its reason."""
    from gpusizer import api
    from gpusizer.errors import GpusizerError
    from gpusizer.pipeline import read_sheet

    sheet = MANIFEST.parent / case["sheet"]
    run = api.estimate if method == "estimate" else api.simulate
    try:
        report = run(sheet, card=case.get("card"))
        doc = report.to_json()
        if method == "simulate" and case.get("card"):
            # simulate's JSON has no fit object: the same fit rule on the simulated memory
            from gpusizer.catalog.cards import require_card
            from gpusizer.memory.fit_rule import judge_on_card
            r = report.result
            fit = judge_on_card(r.memory, require_card(case["card"]), r.sheet.margin)
            doc["fit"] = {"estimated_fit": fit.state}
    except GpusizerError as exc:
        parsed, _ = read_sheet(sheet)
        kind = _kind({"sheet": {"task": parsed.task, "inference": {
            "engine": parsed.inference.engine if parsed.inference else None}}})
        return _failed(case, kind, method, f"refused: {exc}")
    return _rows_for(case, doc, method)


def parameter_rows(shared: Path = SHARED) -> list[Row]:
    """Published parameter counts (``../shared/data/models/truth.json``) against gpusizer's count
    from the same real config.json, for every model of the shared data that has one; [] without
    ../shared. A published count is either the logical count or the Hub's ``safetensors.total``
    (every stored element: scales, buffers, a tied lm_head stored twice, DeepSeek-V3's MTP
    layer); where it is the latter, the count is rebuilt by the definitions
    ``tests/model/test_families.py`` states (``STORED_DEFINITIONS``), so both sides count the
    same thing."""
    if not (shared / "data" / "models" / "truth.json").is_file():
        return []
    sys.path.insert(0, str(ROOT))
    from tests.model.conftest import config_of, facts_of, shared_model_ids, truth
    from tests.model.test_families import STORED_DEFINITIONS

    rows = []
    ids = set(shared_model_ids())
    for model_id, published in sorted((m, t["param_count"]) for m, t in truth().items()
                                      if m in ids and t["param_count"] is not None):
        facts = facts_of(model_id)
        ours, note = facts.architecture.total_parameters, "logical count"
        if model_id in STORED_DEFINITIONS:
            note, stored = STORED_DEFINITIONS[model_id]
            ours = stored(facts, config_of(model_id))
        rows.append(Row(model_id, "parameters · published count", "parameters", "config.json",
                        published, ours, (ours - published) / published, None, None, note))
    return rows


@dataclass(frozen=True)
class Group:
    """One line of the scoreboard: errors in percent of the observed figure."""

    group: str
    method: str
    n: int
    median_abs_error_pct: float | None
    bias_pct: float | None
    worst_pct: float | None
    worst_case: str | None
    right: int | None
    missing: int
    hedged: int = 0


def summarize(rows: list[Row]) -> list[Group]:
    """Per (group, method): n, median |error|, median signed error (bias), the worst case, and
    the verdicts right; rows without a figure are counted in ``missing``."""
    keys = sorted({(r.group, r.method) for r in rows})
    out = []
    for group, method in keys:
        mine = [r for r in rows if r.group == group and r.method == method]
        scored = [r for r in mine if r.error is not None]
        missing = sum(1 for r in mine if r.figure is None)
        if group == "verdicts":
            judged = [r for r in mine if r.right is not None]
            hedged = sum(1 for r in mine if r.figure in HEDGED)
            out.append(Group(group, method, len(judged), None, None, None, None,
                             sum(r.right for r in judged), missing, hedged))
            continue
        if not scored:
            out.append(Group(group, method, 0, None, None, None, None, None, missing))
            continue
        worst = max(scored, key=lambda r: abs(r.error))
        out.append(Group(group, method, len(scored),
                         round(100 * statistics.median(abs(r.error) for r in scored), 2),
                         round(100 * statistics.median(r.error for r in scored), 2),
                         round(100 * worst.error, 2), worst.case, None, missing))
    return out


def versions() -> dict[str, str | None]:
    """The versions the record was made with (None: not installed)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def run(simulate: bool) -> tuple[list[dict], list[Row]]:
    """Every case's rows (estimate, then simulate when asked and installed), and the cases."""
    cases = load_manifest()
    rows: list[Row] = []
    for case in cases:
        if case.get("unexpressible"):
            continue
        rows += score_case(case, "estimate")
        if simulate:
            rows += score_case(case, "simulate")
    rows += parameter_rows()
    return cases, rows


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:+.1f} %" if x < 0 or x > 0 else "0.0 %"


def render_md(record: dict) -> str:
    """docs/accuracy.md from the record (the answer first: the board, then every case)."""
    lines = ["# Accuracy scoreboard", "",
             f"Made {record['date']} by `python benchmarks/accuracy.py --write` with "
             + ", ".join(f"{k} {v}" for k, v in record["versions"].items() if v) + ".", "",
             ("Error = (gpusizer − observed) / observed, in % of the observed figure; each "
              "counter is compared with the figure it measures (see benchmarks/accuracy.py)."), "",
             ("| group | method | n | median abs. error | bias (median) | worst (case) "
              "| verdicts right | hedged | no figure |"),
             "|---|---|---|---|---|---|---|---|---|"]
    for g in record["groups"]:
        worst = "–" if g["worst_pct"] is None else f"{_pct(g['worst_pct'])} ({g['worst_case']})"
        median = "–" if g["median_abs_error_pct"] is None else f"{g['median_abs_error_pct']:.1f} %"
        right = "–" if g["right"] is None else f"{g['right']} / {g['n']}"
        lines.append(f"| {g['group']} | {g['method']} | {g['n']} | {median} | "
                     f"{_pct(g['bias_pct'])} | {worst} | {right} | {g.get('hedged', 0)} | "
                     f"{g['missing']} |")
    lines += ["", "## Cases", "", "| case | counter | method | observed | gpusizer | error |",
              "|---|---|---|---|---|---|"]
    for r in record["rows"]:
        figure = r["figure"] if r["figure"] is not None else f"none ({r['missing']})"
        error = ("right" if r["right"] else "wrong") if r["counter"] == "verdict" and \
            r["right"] is not None else "hedged" if r["counter"] == "verdict" and \
            r["figure"] in HEDGED else _pct(None if r["error"] is None else 100 * r["error"])
        note = f" ({r['note']})" if r.get("note") else ""
        lines.append(f"| {r['case']} | {r['counter']} | {r['method']} | {r['observed']} | "
                     f"{figure} | {error}{note} |")
    lines += ["", "## Cases that cannot be expressed", ""]
    lines += [f"- {c['id']}: {c['unexpressible']}" for c in record["unexpressible"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite docs/accuracy.json and .md")
    parser.add_argument("--no-simulate", action="store_true", help="estimate only")
    parser.add_argument("--keep-simulate", action="store_true",
                        help="estimate only, carrying the recorded simulate rows (their date "
                             "stays in each row's note)")
    args = parser.parse_args(argv)
    simulate = not (args.no_simulate or args.keep_simulate)
    if simulate:
        try:
            import torch  # noqa: F401
        except ImportError:
            print("simulate extra not installed: estimate only", file=sys.stderr)
            simulate = False
    cases, rows = run(simulate)
    if args.keep_simulate:
        old = json.loads(RECORD_JSON.read_text(encoding="utf-8"))
        rows += [Row(**{**r, "note": r.get("note") or f"simulate row of {old['date']}"})
                 for r in old["rows"] if r["method"] == "simulate"]
    groups = summarize(rows)
    record = {"date": dt.date.today().isoformat(), "versions": versions(),
              "groups": [asdict(g) for g in groups], "rows": [asdict(r) for r in rows],
              "unexpressible": [{"id": c["id"], "unexpressible": c["unexpressible"]}
                                for c in cases if c.get("unexpressible")]}
    text = render_md(record)
    print(text.split("\n## Cases")[0])
    if args.write:
        RECORD_JSON.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        RECORD_MD.write_text(text, encoding="utf-8")
        print(f"wrote {RECORD_JSON.relative_to(ROOT)} and {RECORD_MD.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
