"""Model facts for memory tests come from the bundled registry (offline, no ../shared needed)."""

from __future__ import annotations

import functools

from gpusizer.model.resolve import resolve_model
from gpusizer.sheet import parse_sheet


@functools.cache
def facts_of(model_id: str):
    """Facts of a registry model (resolved offline)."""
    return resolve_model(model_id=model_id, revision="main", path=None)


def sheet(**kw):
    """A sheet with a placeholder id (facts are passed separately)."""
    base = {"model": {"id": "test/model"}, "task": "inference", "weights": "bf16"}
    base.update(kw)
    return parse_sheet(base)
