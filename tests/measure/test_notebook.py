"""The lab notebook (R14) runs and its assertions hold: measured peak == the arithmetic shown."""

from __future__ import annotations

import os

import nbformat
from nbclient import NotebookClient

from tests.conftest import REPO_ROOT

NOTEBOOK = REPO_ROOT / "notebooks" / "measure_instrumentation.ipynb"


def test_notebook_executes_and_its_peak_matches_the_arithmetic(tmp_path, monkeypatch):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    if "PYTHONPATH" not in os.environ:  # the kernel imports gpusizer from this checkout
        monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT / "src"))
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                      for o in c.get("outputs", []))
    assert "measured peaks equal the arithmetic: 1609984 B" in outputs
    assert "forward peak W + x + max(h + r, r + y) = 1609984" in outputs
