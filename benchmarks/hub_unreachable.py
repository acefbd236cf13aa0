"""How long an unreachable Hugging Face Hub costs before the command fails, and how many requests.

No network is used: huggingface_hub's HTTP client gets a transport that refuses every request
with a connection error (its ``set_client_factory`` hook), the Hub cache is an empty temporary
folder, and ``HF_HUB_OFFLINE`` is unset. Two ways of fetching the config.json of an id the
bundled registry lacks are timed:

- ``hf_hub_download`` alone (what gpusizer did before issue 13): on a network error it retries
  with ``retry_on_errors=True`` (``http_backoff``: 5 retries after 1, 2, 4, 8 and 8 s);
- ``gpusizer.model.resolve.resolve_model`` now: one ``get_hf_file_metadata`` request (no retry),
  then the error with the offline hint.

A refused connection fails at once, so the times are the retry waits; a black-holed network
adds up to the request timeout per attempt (``PROBE_TIMEOUT_S`` = 5 s now, huggingface_hub's
10 s ``HF_HUB_ETAG_TIMEOUT`` per attempt before). Run: ``python benchmarks/hub_unreachable.py``.
"""

from __future__ import annotations

import os
import tempfile
import time

MODEL_ID = "someone/not-in-the-registry"


def _refusing_hub(calls: list) -> None:
    import httpx2
    import huggingface_hub

    def refuse(request: httpx2.Request) -> httpx2.Response:
        calls.append(f"{request.method} {request.url}")
        raise httpx2.ConnectError("refused by the benchmark's stub transport", request=request)

    huggingface_hub.set_client_factory(lambda: httpx2.Client(transport=httpx2.MockTransport(refuse)))


def _time(label: str, fetch) -> None:
    calls: list[str] = []
    _refusing_hub(calls)
    started = time.perf_counter()
    try:
        fetch()
        outcome = "no error (unexpected)"
    except Exception as exc:  # noqa: BLE001 - the benchmark reports whatever ends the call
        outcome = f"{type(exc).__name__}: {str(exc)[:110]}"
    seconds = time.perf_counter() - started
    config = sum(c.endswith("/config.json") for c in calls)
    print(f"{label}: {seconds:6.2f} s, {len(calls)} request(s), {config} for config.json\n"
          f"    -> {outcome}")


def main() -> None:
    os.environ.pop("HF_HUB_OFFLINE", None)
    os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="gpusizer-bench-hf-")
    from huggingface_hub import hf_hub_download
    from huggingface_hub.utils import logging

    logging.set_verbosity_error()  # silence the "Retrying in N s" warnings

    from gpusizer.model.resolve import resolve_model

    _time("before: hf_hub_download        ", lambda: hf_hub_download(MODEL_ID, "config.json"))
    _time("now:    gpusizer resolve_model ",
          lambda: resolve_model(model_id=MODEL_ID, revision=None, path=None))


if __name__ == "__main__":
    main()
