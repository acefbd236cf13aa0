"""What the Hugging Face Hub code shares: the offline switch and the errors a call can raise.

``huggingface_hub`` is imported only inside these functions, so importing gpusizer stays fast.
"""

from __future__ import annotations

import os

__all__ = ["hub_offline", "hub_failures"]

_TRUE = frozenset({"1", "ON", "YES", "TRUE"})
"""Values huggingface_hub treats as true for its environment switches (``constants._is_true``)."""


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set to a true value (read now, not at import)."""
    return os.environ.get("HF_HUB_OFFLINE", "").upper() in _TRUE


def hub_failures() -> tuple[type[BaseException], ...]:
    """Exception classes meaning "the Hub could not answer" (network, auth, missing file).

    Includes ``OSError`` (connection failures of the ``requests`` backend) and ``httpx.HTTPError``
    when httpx is the transport (huggingface_hub >= 1.0).
    """
    from huggingface_hub import errors

    names = ("HfHubHTTPError", "LocalEntryNotFoundError", "EntryNotFoundError",
             "OfflineModeIsEnabled", "NotASafetensorsRepoError", "SafetensorsParsingError",
             "HFValidationError")
    found: list[type[BaseException]] = [getattr(errors, n) for n in names if hasattr(errors, n)]
    found.append(OSError)
    try:
        import httpx
    except ImportError:  # requests-based huggingface_hub < 1.0
        pass
    else:
        found.append(httpx.HTTPError)
    return tuple(found)
