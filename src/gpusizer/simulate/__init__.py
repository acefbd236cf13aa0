"""``gpusizer simulate``: the sheet's model code run on fake tensors (torch, transformers, peft).

Only this package imports torch, and only when a simulation runs: the core (``plan``,
``estimate``) never does. :func:`require_extra` turns a missing extra into a clear error.
See README.md in this folder.
"""

from __future__ import annotations

from importlib.util import find_spec

from ..errors import install_line
from .errors import SimulateExtraMissing

__all__ = ["require_extra", "EXTRA_MODULES"]

EXTRA_MODULES = ("torch", "transformers", "peft")
"""What ``pip install "gpusizer[simulate]"`` brings."""


def require_extra(why: str | None = None) -> None:
    """Raise :class:`SimulateExtraMissing` when a module of the simulate extra is missing;
    ``why`` (what needs the simulation) opens its one line."""
    missing = [m for m in EXTRA_MODULES if find_spec(m) is None]
    if missing:
        what = "gpusizer simulate needs" if why is None else f"{why}, which needs"
        raise SimulateExtraMissing(f"{what} {', '.join(missing)}: {install_line('simulate')}")
