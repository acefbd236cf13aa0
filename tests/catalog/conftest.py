"""Fixtures of the catalog tests.

Shared reference data live beside the repository, in ``<repo_root>/../shared/data``
(gpu_specs/gpu_memory_reported.csv, catalogs/*.csv; their sources are listed in the README.md and
SOURCES.md there). Tests that need them skip, saying so, when that folder is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

@pytest.fixture
def shared_data(shared_dir: Path) -> Path:
    """``<repo_root>/../shared/data`` (the root conftest skips, saying why, when it is absent)."""
    return shared_dir / "data"


@pytest.fixture
def catalogs_dir(shared_data: Path) -> Path:
    """The shared catalog copies (skypilot-org/skypilot-catalog, the-full-stack/website)."""
    return shared_data / "catalogs"
