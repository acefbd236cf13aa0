"""Model facts for format tests come from the bundled registry (offline)."""

from __future__ import annotations

import functools

from gpusizer.model.resolve import resolve_model


@functools.cache
def facts_of(model_id: str):
    """Facts of a registry model (resolved offline)."""
    return resolve_model(model_id=model_id, revision="main", path=None)
