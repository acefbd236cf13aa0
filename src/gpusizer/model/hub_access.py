"""What the Hugging Face Hub code shares: the offline switch, id validation, the errors a call can
raise, and one file fetched with a single short attempt.

``huggingface_hub`` is imported only inside these functions, so importing gpusizer stays fast.

Why a probe. ``hf_hub_download`` answers a network error on its metadata ``HEAD`` by retrying
with ``retry_on_errors=True`` (``http_backoff``: 5 retries, waits 1 + 2 + 4 + 8 + 8 s), so an
unreachable Hub costs about 23 s before it fails (huggingface_hub 2.4.0,
``file_download._hf_hub_download_to_cache_dir``; gpusizer finding F18). :func:`hub_file` first
asks ``get_hf_file_metadata`` once (its default ``retry_on_errors=False``: no retry) with a short
timeout, and only downloads (``hf_hub_download``, which caches the file) once the Hub answered.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import HubError, ModelError, ModelNotFoundError, shown

__all__ = ["hub_offline", "hub_failures", "network_failures", "validate_model_id",
           "probe_timeout", "hub_file", "OFFLINE_HINT", "PROBE_TIMEOUT_S"]

_TRUE = frozenset({"1", "ON", "YES", "TRUE"})
"""Values huggingface_hub treats as true for its environment switches (``constants._is_true``)."""

PROBE_TIMEOUT_S = 5.0
"""Seconds the single metadata request may take before the Hub counts as unreachable, unless
``HF_HUB_ETAG_TIMEOUT`` is set (then that value: huggingface_hub's own switch for this request,
default 10 s)."""

OFFLINE_HINT = ("set HF_HUB_OFFLINE=1 to use only the bundled registry (`gpusizer models` lists "
                "it) and the local Hub cache, or set model.path to a folder with config.json")
"""The hint every "Hub cannot be reached" error ends with."""

NOT_FOUND = ("RepositoryNotFoundError", "RevisionNotFoundError", "EntryNotFoundError",
             "RemoteEntryNotFoundError", "GatedRepoError")
"""huggingface_hub errors meaning the id, revision or file is wrong (or gated): exit 2."""


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set to a true value (read now, not at import)."""
    return os.environ.get("HF_HUB_OFFLINE", "").upper() in _TRUE


def probe_timeout() -> float:
    """Timeout of the single Hub attempt: ``HF_HUB_ETAG_TIMEOUT`` when set to a positive number,
    else :data:`PROBE_TIMEOUT_S`."""
    try:
        value = float(os.environ.get("HF_HUB_ETAG_TIMEOUT", ""))
    except ValueError:
        return PROBE_TIMEOUT_S
    return value if value > 0 else PROBE_TIMEOUT_S


def network_failures() -> tuple[type[BaseException], ...]:
    """Exception classes meaning "the request never got an answer": the transport errors of
    whichever HTTP library huggingface_hub uses (``httpx2.TransportError`` for 2.x,
    ``httpx.TransportError`` for 1.x, ``requests`` connection errors and timeouts before 1.0),
    and huggingface_hub's ``LocalEntryNotFoundError`` (what ``hf_hub_download`` raises when it
    could reach neither the Hub nor a cached copy). Not ``OSError`` as such: the Hub's own HTTP
    errors (404, gated) derive from it."""
    from huggingface_hub.errors import LocalEntryNotFoundError

    found: list[type[BaseException]] = [LocalEntryNotFoundError]
    for module in ("httpx2", "httpx"):
        try:
            lib = __import__(module)
        except ImportError:
            continue
        found.append(lib.TransportError)
    try:
        import requests
    except ImportError:
        pass
    else:
        found += [requests.ConnectionError, requests.Timeout]
    return tuple(found)


def hub_failures() -> tuple[type[BaseException], ...]:
    """Exception classes meaning "the Hub could not answer" (network, auth, missing file).

    The ``huggingface_hub.errors`` classes, the transport errors of :func:`network_failures`,
    ``OSError`` (a cache that cannot be written), and the ``HTTPError`` base of httpx / httpx2
    where installed.
    """
    from huggingface_hub import errors

    names = ("HfHubHTTPError", "LocalEntryNotFoundError", "EntryNotFoundError",
             "OfflineModeIsEnabled", "NotASafetensorsRepoError", "SafetensorsParsingError",
             "HFValidationError")
    found: list[type[BaseException]] = [getattr(errors, n) for n in names if hasattr(errors, n)]
    found += [*network_failures(), OSError]
    for module in ("httpx2", "httpx"):
        try:
            found.append(__import__(module).HTTPError)
        except ImportError:
            pass
    return tuple(found)


def validate_model_id(model_id: str) -> None:
    """Refuse an id the Hub could never hold, before any request (finding F18).

    The rules are huggingface_hub's ``validate_repo_id``: at most one ``/``; organisation and
    name of 1 to 96 characters each, letters, digits, ``-``, ``_``, ``.``; no ``--`` or ``..``;
    not starting or ending with ``-`` or ``.``.

    Raises:
        ModelError: naming ``model.id``, the value and the rule it breaks (exit 2).
    """
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(model_id)
    except HFValidationError as exc:
        rule = str(exc).split(": '", 1)[0].strip()  # the rule, without its echo of the value
        raise ModelError(f"{shown(model_id)} is not a Hugging Face Hub id ({rule}); expected "
                         "org/name (letters, digits, '-', '_', '.'; each part at most 96 "
                         "characters)", field="model.id", value=model_id) from None


def hub_file(repo_id: str, filename: str, revision: str | None, *,
             not_found_hint: str = "") -> Path:
    """A file of a Hub repo, from the Hub (then cached by huggingface_hub) or its cache.

    One metadata request (``get_hf_file_metadata``, no retry, :func:`probe_timeout`); when it
    gets no answer, the cached copy (``try_to_load_from_cache``) if any, else an immediate
    error. When it answers, ``hf_hub_download`` fetches the file into the Hub cache.

    Args:
        repo_id: a valid Hub id (see :func:`validate_model_id`).
        filename: the file in the repo, e.g. ``config.json``.
        revision: commit sha, tag or branch; None means ``main``.
        not_found_hint: appended to the "not found" message (close registry matches).

    Returns:
        The local path of the file.

    Raises:
        HubError: the Hub cannot be reached and the file is not cached (exit 1), or it answered
            with a server error; the message ends with :data:`OFFLINE_HINT`.
        ModelNotFoundError: the repo, revision or file does not exist or is gated (exit 2).
    """
    from huggingface_hub import (get_hf_file_metadata, hf_hub_download, hf_hub_url,
                                 try_to_load_from_cache)

    where = f"{repo_id}@{revision or 'main'}"
    try:
        get_hf_file_metadata(hf_hub_url(repo_id, filename, revision=revision),
                             timeout=probe_timeout())
        return Path(hf_hub_download(repo_id, filename, revision=revision))
    except hub_failures() as exc:
        failure = exc
    if type(failure).__name__ in NOT_FOUND:
        raise ModelNotFoundError(
            f"the Hub has no {filename} for {where} ({type(failure).__name__}): check the id and "
            f"revision, or log in for gated models (hf auth login){not_found_hint}",
            field="model.id", value=repo_id) from None
    if not isinstance(failure, network_failures()):
        raise HubError(f"cannot download {filename} of {where}: {type(failure).__name__}: "
                       f"{shown(str(failure))}; {OFFLINE_HINT}", field="model.id",
                       value=repo_id) from None
    cached = try_to_load_from_cache(repo_id, filename, revision=revision)
    if isinstance(cached, str):
        return Path(cached)
    raise HubError(f"the Hugging Face Hub cannot be reached (one attempt, "
                   f"{type(failure).__name__}: {shown(str(failure))}) and {filename} of {where} "
                   f"is not in the local cache: {OFFLINE_HINT}", field="model.id",
                   value=repo_id) from None
