"""Write the figures of every example and validation sheet as the CLI prints them today.

``python tests/golden/regenerate.py`` (from the repository root) rewrites ``tests/golden/*.json``;
``tests/test_golden.py`` checks that every number (and every state, verdict, provenance and item
name) is still the same. Regenerate only in a commit that moves a figure on purpose, and list in
that commit's message which figures moved and why.

What is recorded per sheet (through the real CLI, in process):
- ``estimate`` without a card and with each card of ``CARDS`` (plus the card the sheet's
  ``# Run:`` comment names);
- ``fit`` on each card of ``FIT_CARDS``;
- ``plan`` on the bundled catalog and on ``examples/catalogs/h200-lots.yaml``, ``--today`` pinned;
- ``alternatives`` on the bundled catalog;
- ``simulate`` for the sheets of ``SIMULATE`` (only where the simulate extra is installed).
Versions, timings and other volatile fields are dropped (``VOLATILE``). A command that refuses
the input is recorded as its exit code.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent
TODAY = "2026-12-01"
CARDS = ("T4", "RTX 4090", "A100 80GB", "H100 SXM", "B200")
FIT_CARDS = ("RTX 4090", "H100 SXM")
SIMULATE = {"benchmarks/sheets/llama-lora.yaml": "H100 SXM",
            "benchmarks/sheets/llama-serve-4k.yaml": "H100 SXM",
            "benchmarks/sheets/qwen-lora.yaml": "A100 80GB"}
VOLATILE = {"version", "versions", "seconds", "registry"}
"""Keys whose values change with the installed software or the clock, not with the figures."""
COMPARED_STRINGS = {"state", "verdict", "provenance", "name", "weights_format", "stored_format",
                    "canonical_card", "estimated_fit", "kernel", "phase", "runs"}
"""String-valued keys that are figures too (a state or a name); other strings are prose."""


GOLDEN_VALIDATION = frozenset({
    "fastchat2556-vicuna7b-qlora-v100s-1024.yaml", "fastchat2556-vicuna7b-qlora-v100s-2048.yaml",
    "fms-llama2-70b-qlora-accelbnb-1xa100-bs4.yaml", "fms-mistral7b-fullft-fp16-1xa100-bs4.yaml",
    "fms-mistral7b-qlora-bnb-1xa100-bs4.yaml", "litgpt-hub-llama2-7b-lora-a10g.yaml",
    "litgpt-rt-llama2-7b-lora-mb1-a100-40gb.yaml",
    "llamafactory257-llama2-70b-lora-8xa100-load-oom.yaml",
    "unsloth-readme-llama31-8b-qlora-24gb-maxctx.yaml", "vllm10517-llama31-8b-rtx3090.yaml",
    "vllm13061-r1-distill-qwen14b-2x4090.yaml"})
"""The validation sheets whose every CLI figure is pinned here."""


def sheets() -> list[Path]:
    """Every example, validation and benchmark sheet, in a fixed order."""
    out = sorted((REPO / "examples").glob("*.yaml"))
    # the validation sheets of the first public cases; the others (examples/validation/cases.yaml)
    # are held by the accuracy record (docs/accuracy.json, tests/test_accuracy_record.py), so
    # adding a case does not add thirteen CLI runs here
    out += sorted(p for p in (REPO / "examples" / "validation").glob("*.yaml")
                  if p.name in GOLDEN_VALIDATION)
    out += sorted((REPO / "benchmarks" / "sheets").glob("*.yaml"))
    return out


def run_card(sheet: Path) -> str | None:
    """The card named by the sheet's ``# Run: ... --card X`` comment, if any."""
    m = re.search(r"^# Run: .*--card (\"[^\"]+\"|\S+)", sheet.read_text(), re.M)
    return m.group(1).strip('"') if m else None


def _clean(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items() if k not in VOLATILE}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def invoke(*args: str) -> Any:
    """Run one CLI command; its JSON (volatile keys dropped) or ``{"exit": code}``.

    ``simulate`` runs in a fresh process, as a real run does (peft's first import in a process
    once moved its figures by 1 024 B; ``tests/simulate/test_repeat.py`` now checks that a
    simulation gives the same figures whatever ran before it). The other commands import no
    torch and run in process (fast)."""
    if args[0] == "simulate":
        import subprocess
        proc = subprocess.run([sys.executable, "-m", "gpusizer.cli", *args], capture_output=True,
                              text=True, cwd=REPO, timeout=600)
        code, out = proc.returncode, proc.stdout
    else:
        from typer.testing import CliRunner

        from gpusizer.cli import app
        res = CliRunner().invoke(app, list(args))
        code, out = res.exit_code, res.stdout
    if code != 0:
        return {"exit": code}
    return _clean(json.loads(out))


def commands(sheet: Path, *, simulate: bool) -> dict[str, list[str]]:
    """Command label → CLI arguments, for one sheet."""
    s = str(sheet)
    out = {"estimate": ["estimate", s, "--format", "json"]}
    cards = list(CARDS)
    rc = run_card(sheet)
    if rc and rc not in cards:
        cards.append(rc)
    for c in cards:
        out[f"estimate --card {c}"] = ["estimate", s, "--card", c, "--format", "json"]
    for c in FIT_CARDS:
        out[f"fit --card {c}"] = ["fit", s, "--card", c, "--format", "json"]
    out["plan"] = ["plan", s, "--today", TODAY, "--format", "json", "--quiet"]
    out["plan h200-lots"] = ["plan", s, "--catalog", str(REPO / "examples/catalogs/h200-lots.yaml"),
                             "--today", TODAY, "--format", "json", "--quiet"]
    out["alternatives"] = ["alternatives", s, "--today", TODAY, "--format", "json"]
    rel = sheet.relative_to(REPO).as_posix()
    if simulate and rel in SIMULATE:
        out[f"simulate --card {SIMULATE[rel]}"] = ["simulate", s, "--card", SIMULATE[rel],
                                                   "--format", "json"]
    return out


def golden_name(sheet: Path) -> str:
    return sheet.relative_to(REPO).as_posix().replace("/", "__").removesuffix(".yaml") + ".json"


def record(sheet: Path, *, simulate: bool) -> dict[str, Any]:
    return {label: invoke(*args) for label, args in commands(sheet, simulate=simulate).items()}


def main() -> int:
    import os
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import torch  # noqa: F401
        simulate = True
    except ImportError:
        simulate = False
        print("torch not installed: simulate figures are not regenerated", file=sys.stderr)
    for sheet in sheets():
        path = GOLDEN / golden_name(sheet)
        doc = record(sheet, simulate=simulate)
        if not simulate and path.exists():   # keep the simulate figures recorded earlier
            old = json.loads(path.read_text())
            doc.update({k: v for k, v in old.items() if k.startswith("simulate")})
        path.write_text(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        print(f"wrote {path.relative_to(REPO)} ({len(doc)} commands)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())
