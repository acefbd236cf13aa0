"""The README's Python example runs as written."""

from __future__ import annotations

import re
import subprocess
import sys

from .conftest import REPO_ROOT


def test_the_readme_python_example_runs():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Python\n", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                         text=True, check=True, timeout=120).stdout.splitlines()
    # R7: 7e9 parameters × 2 bytes (fp16) + 6 GiB reserve = 14 000 000 000 + 6 442 450 944
    assert out[0] == f"{14_000_000_000 + 6 * 2**30} conditional" == "20442450944 conditional"
    assert out[1].startswith("{'largest concurrency at the required length': ")
