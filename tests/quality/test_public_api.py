"""Every module of the quality stage declares ``__all__`` and every name in it exists."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import gpusizer.quality

MODULES = [f"gpusizer.quality.{m.name}" for m in pkgutil.iter_modules(gpusizer.quality.__path__)]
MODULES += ["gpusizer.decision.alternatives", "gpusizer.report.alternatives_report"]


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist(name):
    if name.endswith((".formats", ".evaluate")):
        pytest.importorskip("torch", reason="the quality extra (torch) is not installed")
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported, f"{name} declares no __all__"
    assert all(hasattr(module, n) for n in exported)
