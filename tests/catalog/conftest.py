"""Fixtures of the catalog tests.

Shared reference data live beside the repository, in ``<repo_root>/../shared/data``
(gpu_specs/gpu_memory_reported.csv, catalogs/*.csv; their sources are listed in the README.md and
SOURCES.md there). Tests that need them skip, saying so, when that folder is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """``<repo_root>/../shared/data``, or skip when this checkout has no shared folder."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared reference data not found at {SHARED_DATA} (the ../shared folder "
                    "holds gpu_memory_reported.csv and the SkyPilot catalogs)")
    return SHARED_DATA


@pytest.fixture
def catalogs_dir(shared_data: Path) -> Path:
    """The shared catalog copies (skypilot-org/skypilot-catalog, the-full-stack/website)."""
    return shared_data / "catalogs"
