"""Every module of the model stage declares ``__all__`` and every name in it exists."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import gpusizer.model
import gpusizer.model.families

MODULES = sorted(
    [f"gpusizer.model.{m.name}" for m in pkgutil.iter_modules(gpusizer.model.__path__)
     if m.name != "families"]
    + ["gpusizer.model.families"]
    + [f"gpusizer.model.families.{m.name}"
       for m in pkgutil.iter_modules(gpusizer.model.families.__path__)])


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported, f"{name} declares no __all__"
    assert all(hasattr(module, n) for n in exported)
