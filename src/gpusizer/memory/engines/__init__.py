"""Inference engines: one module per engine, each an ``Engine`` (``base.py``), in one registry.

Code outside this package asks ``engine_of(sheet)`` or ``ENGINES[name]`` for an engine's rule
and never compares engine names. ``README.md`` here says how to add an engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Engine, PoolCondition, PoolSplit
from .transformers import TRANSFORMERS
from .sglang import SGLANG
from .vllm import VLLM

if TYPE_CHECKING:
    from ...sheet import Sheet

__all__ = ["ENGINES", "Engine", "PoolSplit", "PoolCondition", "engine_of",
           "TRAINING_ENGINE"]

ENGINES: dict[str, Engine] = {e.name: e for e in (TRANSFORMERS, VLLM, SGLANG)}
"""Engine name (the sheet's ``inference.engine``) → its rules."""

TRAINING_ENGINE: Engine = TRANSFORMERS
"""Training, and a sheet without an ``inference`` block, run transformers."""


def engine_of(sheet: Sheet) -> Engine:
    """The engine whose rules size ``sheet``: its ``inference.engine``, else transformers."""
    inf = sheet.inference
    return ENGINES[inf.engine] if inf is not None else TRAINING_ENGINE
