"""gpusizer: size GPU memory for an LLM workload and classify GPU offers.

The pipeline, one module (or package) per stage, in data-flow order:
``sheet`` → ``model`` → ``memory`` → ``evidence`` → ``decision`` → ``report``;
``cli`` and ``api`` (the Python API) sit on top. ``units`` and ``errors`` are shared.

``gpusizer.estimate`` and ``gpusizer.plan`` are ``gpusizer.api``'s, imported on first use so
``import gpusizer`` stays light; ``gpusizer.api`` has the other commands (``fit``, ``simulate``,
``alternatives``).
"""

__version__ = "0.1.0"

SCHEMA_VERSION = 2
"""``schema_version`` of every JSON output and evidence document gpusizer writes (CONTRACT.md):
it rises only when a field is renamed or removed; new keys beside old ones do not raise it."""

__all__ = ["__version__", "estimate", "plan"]

_FROM_API = ("estimate", "plan")


def __getattr__(name: str) -> object:
    """``estimate`` and ``plan`` from ``gpusizer.api``, imported on first access (PEP 562)."""
    if name in _FROM_API:
        from . import api
        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FROM_API))
