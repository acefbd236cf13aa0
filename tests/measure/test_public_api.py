"""Every module of the measure package declares ``__all__`` and every name in it exists; the
core never imports torch (the CLI loads this package lazily)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import gpusizer.measure as measure
from tests.conftest import REPO_ROOT


def test_every_module_declares_its_public_names():
    for info in pkgutil.iter_modules(measure.__path__):
        module = importlib.import_module(f"gpusizer.measure.{info.name}")
        exported = getattr(module, "__all__", None)
        assert exported, f"{info.name} declares no __all__"
        for name in exported:
            assert hasattr(module, name), f"{info.name}.{name}"


def test_plan_and_the_cli_import_no_torch():
    code = ("import sys, gpusizer.cli, gpusizer.pipeline, gpusizer.evidence, "
            "gpusizer.decision.criteria; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "False"
