"""Public adaptation cases (shared/validation/public-cases.jsonl) against `gpusizer estimate`.

Every LoRA / QLoRA / full fine-tune case is listed in examples/validation/training-cases.yaml,
either with sheets and a card or with the reason it is skipped. Cases from transformers-based
stacks have their verdict (fits / out of memory) asserted; other frameworks are printed only.
Cases that report exact ``max_memory_allocated`` bytes must lie within 10 % of ``peak_bytes``.
Run with ``-s`` to see the comparison table.
"""

from __future__ import annotations

import json

import pytest
import yaml

from .conftest import REPO_ROOT, cli_json

MANIFEST = REPO_ROOT / "examples" / "validation" / "training-cases.yaml"
TRAINING_TASKS = ("lora", "qlora", "full_finetune")


def _manifest() -> dict[str, dict]:
    return {c["id"]: c for c in yaml.safe_load(MANIFEST.read_text())["cases"]}


def _cases(shared_dir) -> list[dict]:
    path = shared_dir / "validation" / "public-cases.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r["task"] in TRAINING_TASKS]


def test_every_adaptation_case_is_sized_or_skipped_with_a_reason(shared_dir):
    manifest = _manifest()
    for case in _cases(shared_dir):
        entry = manifest.get(case["id"])
        assert entry is not None, f"{case['id']} is neither sized nor skipped"
        assert entry.get("sheets") or entry.get("skip"), case["id"]


def _verdict(doc: dict, device: int) -> str:
    """fits ⇔ device peak + margin ≤ device bytes (the memory criterion's rule); out of memory
    when even the known part of a phase exceeds the device."""
    mem = doc["memory"]
    margin = round(device * float(doc["sheet"]["margin"].rstrip("%")) / 100) \
        if str(doc["sheet"]["margin"]).endswith("%") else 0
    if mem["device_peak_bytes"] is not None:
        return "fits" if mem["device_peak_bytes"] + margin <= device else "oom"
    known = max(p["known_bytes"] for p in mem["phases"])
    return "oom" if known > device else "unknown"


def _sized():
    return [(cid, sheet, expected, entry) for cid, entry in _manifest().items()
            for sheet, expected in (entry.get("sheets") or {}).items()]


@pytest.mark.parametrize("case_id,sheet,expected,entry", _sized(),
                         ids=[s for _, s, _, _ in _sized()])
def test_case(shared_dir, case_id, sheet, expected, entry):
    case = next(c for c in _cases(shared_dir) if c["id"] == case_id)
    args = ["estimate", f"examples/validation/{sheet}"]
    if entry["card"]:
        args += ["--card", entry["card"]]
    doc = cli_json(*args)
    mem = doc["memory"]
    peak = mem["peak_bytes"]
    phase = max(mem["phases"], key=lambda p: p["known_bytes"])
    big = max((i for i in mem["items"] if phase["name"] in i["phases"] and i["bytes"]),
              key=lambda i: i["bytes"] if phase["name"] not in i.get("phase_bytes", {})
              else i["phase_bytes"][phase["name"]])
    observed = case["observed"].get("value_bytes") or entry.get("observed_bytes")
    error = f"{(peak - observed) / observed:+.1%}" if (observed and peak) else "n/a"
    print(f"\n{case_id} [{sheet}]: observed {observed} B ({case['observed']['kind']}, "
          f"{case['observed']['counter']}), estimated peak {peak} B, error {error}, "
          f"peak phase {phase['name']}, dominant item {big['name']}")
    if case["observed"].get("value_bytes") and "max_memory_allocated" in case["observed"]["counter"]:
        assert abs(peak - observed) <= 0.10 * observed, (peak, observed)
    if entry["card"]:
        device = doc["fit"]["device_bytes"]
        got = _verdict(doc, device)
        print(f"  verdict on {entry['card']} ({device} B): {got}; observed {expected}")
        if entry["forced"]:
            assert got == expected
