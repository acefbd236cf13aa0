"""The frozen corpus: every line checked, identified by index, never skipped."""

from __future__ import annotations

import hashlib

import pytest

from gpusizer.errors import CorpusError
from gpusizer.quality.corpus import read_corpus


def test_perplexity_and_exact_match_corpora(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"text": "one"}\n{"text": "two", "id": "s2"}\n')
    c = read_corpus(p, "perplexity")
    assert [(s.index, s.text, s.id) for s in c.samples] == [(0, "one", None), (1, "two", "s2")]
    assert c.sha256 == hashlib.sha256(p.read_bytes()).hexdigest() and c.size_bytes == 44
    q = tmp_path / "q.jsonl"
    q.write_text('{"prompt": "2+2=", "expected": "4"}\n')
    assert read_corpus(q, "exact_match").samples[0].expected == "4"


@pytest.mark.parametrize("text, metric, message", [
    ('{"text": "a"}\n\n{"text": "b"}\n', "perplexity", "line 2 (sample 1): expected one JSON"),
    ('{"text": "a"}\n[1]\n', "perplexity", "line 2 (sample 1): expected a JSON object"),
    ('{"txt": "a"}\n', "perplexity", "unknown key(s) ['txt']"),
    ('{"text": ""}\n', "perplexity", "expected a non-empty string 'text'"),
    ('{"prompt": "q"}\n', "exact_match", "expected a non-empty string 'expected'"),
    ('', "perplexity", "no sample"),
])
def test_malformed_lines_are_named(tmp_path, text, metric, message):
    p = tmp_path / "c.jsonl"
    p.write_text(text)
    with pytest.raises(CorpusError) as exc:
        read_corpus(p, metric)
    assert message in str(exc.value) and str(p) in str(exc.value)
