"""The rich terminal table renders the same figures as the JSON document."""

import io

from gpusizer.pipeline import run_plan
from gpusizer.report.json_report import plan_document
from gpusizer.report.terminal import print_terminal
from gpusizer.sheet import load_sheet

from .conftest import EXAMPLES


def test_terminal_table_shows_phase_peaks_and_offers():
    doc = plan_document(run_plan(load_sheet(EXAMPLES / "llama-3.1-8b-serving.yaml")))
    buf = io.StringIO()
    print_terminal(doc, file=buf)
    text = buf.getvalue()
    assert "Phase peaks" in text and "Offers" in text and "conditional" in text
    decode = next(p for p in doc["memory"]["phases"] if p["name"] == "decode")
    assert f"{decode['peak_bytes'] / 2**30:.2f}" in text
    assert "twice the length (16384 tokens per sequence)" in text
