"""Evidence given as documents is validated and selected as a folder of files is."""

from __future__ import annotations

import json

import pytest

from gpusizer.errors import EvidenceError
from gpusizer.evidence import (
    load_evidence, load_evidence_docs, read_evidence, read_evidence_folder, select_evidence,
)
from gpusizer.sheet import parse_sheet, sheet_sha256

from .decision.test_criteria import SHEET, compat, measurement

OTHER = {**SHEET, "inference": {**SHEET["inference"], "concurrency": 3}}


def _folder(tmp_path, docs):
    for i, doc in enumerate(docs):
        (tmp_path / f"e{i}.json").write_text(json.dumps(doc))
    return tmp_path


def test_documents_select_as_the_same_files_do(tmp_path):
    docs = [measurement(SHEET), compat(), measurement(OTHER)]
    sha = sheet_sha256(parse_sheet(SHEET))
    from_files = load_evidence(_folder(tmp_path, docs), sheet_sha256=sha)
    given = select_evidence(load_evidence_docs(docs), sheet_sha256=sha)
    assert [d.citation() for d in given.docs] == [d.citation() for d in from_files.docs]
    assert len(given.docs) == 2
    assert [f for f, _ in given.ignored] == ["evidence[2]"]
    assert [f for f, _ in from_files.ignored] == [str(tmp_path / "e2.json")]
    assert given.ignored[0][1] == from_files.ignored[0][1]
    assert "it documents another workload" in given.ignored[0][1]


def test_a_malformed_document_names_its_place_and_field():
    bad = {**compat(), "result": "maybe"}
    with pytest.raises(EvidenceError, match=r"^evidence\[1\]: result: ") as info:
        load_evidence_docs([compat(), bad])
    assert info.value.file == "evidence[1]" and info.value.field == "result"
    with pytest.raises(EvidenceError, match=r"^evidence\[0\]: expected an evidence document"):
        load_evidence_docs(["e0.json"])


def test_read_evidence_takes_a_folder_path_or_documents_and_refuses_a_str(tmp_path):
    assert read_evidence(None) == ()
    folder = _folder(tmp_path, [compat()])
    assert read_evidence(folder) == read_evidence_folder(folder)
    assert read_evidence([compat()])[0].file == "evidence[0]"
    with pytest.raises(EvidenceError, match="^evidence: expected a folder") as info:
        read_evidence(str(folder))
    assert info.value.field == "evidence"
