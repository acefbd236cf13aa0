"""The core stays light: lock, lm-eval import, the criterion and alternatives never import torch."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_ROOT


def test_lock_import_criterion_and_alternatives_do_not_import_torch():
    code = ("import sys\n"
            "import gpusizer.cli, gpusizer.quality, gpusizer.quality.criteria_lock\n"
            "import gpusizer.quality.lm_eval_import, gpusizer.quality.evidence_doc\n"
            "import gpusizer.decision.alternatives, gpusizer.report.alternatives_report\n"
            "from gpusizer.pipeline import run_alternatives\n"
            "from gpusizer.sheet import parse_sheet\n"
            "run_alternatives(parse_sheet({'model': {'id': 'Qwen/Qwen2.5-14B'}, "
            "'task': 'inference', 'weights': 'bf16', 'quality': {'corpus': 'c.jsonl'}, "
            "'inference': {'prompt_tokens': 1024, 'new_tokens': 256}}))\n"
            "heavy = sorted(m for m in ('torch', 'transformers') if m in sys.modules)\n"
            "print(heavy)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
