"""``gpusizer fit`` Markdown from its JSON document."""

from __future__ import annotations

from gpusizer.pipeline import FitAnswer
from gpusizer.report.fit_report import render_fit_markdown


def test_answers_and_notes_one_line_each_and_none_spelled_out():
    answer = FitAnswer("H100 SXM", 85_520_809_984, "5%",
                       {"largest concurrency at the required length": 41,
                        "largest prompt_tokens at the required concurrency and new_tokens": None},
                       ("estimated peaks (arithmetic), not measured",))
    assert answer.to_json() == {
        "schema_version": 2, "limits": {},
        "card": "H100 SXM", "device_bytes": 85_520_809_984, "margin": "5%",
        "answers": {"largest concurrency at the required length": 41,
                    "largest prompt_tokens at the required concurrency and new_tokens": None},
        "notes": ["estimated peaks (arithmetic), not measured"]}
    assert render_fit_markdown(answer.to_json()) == (
        # 85 520 809 984 B / 2**30 = 79.65 GiB
        "# gpusizer fit on H100 SXM (device 79.65 GiB (85 520 809 984 B), margin 5%)\n\n"
        "- largest concurrency at the required length: 41\n"
        "- largest prompt_tokens at the required concurrency and new_tokens: none (not even one "
        "sequence fits)\n"
        "- note: estimated peaks (arithmetic), not measured\n")
