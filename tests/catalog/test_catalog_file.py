"""CatalogFile records and the SHA-256 the report prints."""

from __future__ import annotations

import hashlib

from gpusizer.catalog import catalog_file
from gpusizer.catalog.catalog_file import CatalogFile, sha256_hex


def test_all_names_exported():
    for name in catalog_file.__all__:
        assert hasattr(catalog_file, name)


def test_sha256_hex_matches_sha256sum():
    # sha256sum of the empty input (FIPS 180-4 test vector)
    assert sha256_hex(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert sha256_hex(b"abc") == hashlib.sha256(b"abc").hexdigest()


def test_record_defaults_to_nothing_skipped():
    record = CatalogFile(path="x.yaml", sha256="0" * 64, kind="offers-yaml", offers=0)
    assert record.skipped == () and record.discrepancies == ()
