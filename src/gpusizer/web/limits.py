"""Size limits on what the web page reads: the request body as a whole, and each upload by its
kind, with the caps of :data:`gpusizer.input_files.SIZE_CAPS` (issue 11).

:class:`BodyLimit` answers HTTP 413 from the ``Content-Length`` header before reading a byte of
an over-cap body, and stops a body without one (chunked) as soon as more than the cap has
arrived: at most one chunk (the server's read size, 64 KiB for uvicorn) past the cap is ever
held. :func:`read_capped` reads an upload to at most its kind's cap plus one byte.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from ..input_files import SIZE_CAPS

__all__ = ["BODY_CAP", "TooLarge", "BodyLimit", "read_capped"]

BODY_CAP = sum(SIZE_CAPS[k] for k in ("sheet", "catalog", "evidence file", "config.json",
                                      "corpus"))
"""The largest request body read, in bytes: one input of each kind a request may carry at its
cap (sheet 1 MiB + catalog 64 MiB + evidence file 16 MiB + config.json 4 MiB + corpus 64 MiB =
149 MiB); several catalogs or evidence files share it."""

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class TooLarge(Exception):
    """A body or an upload over its cap (``what``: which, ``cap``: the cap in bytes)."""

    def __init__(self, what: str, cap: int) -> None:
        self.what = what
        self.cap = cap
        super().__init__(f"the {what} is over the {cap}-byte limit for a {what}")


async def _answer_413(send: Send, message: str) -> None:
    body = ('{"detail": [{"loc": ["body"], "msg": %s, "type": "too_large"}]}'
            % _json_string(message)).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _json_string(text: str) -> str:
    import json
    return json.dumps(text)


class BodyLimit:
    """ASGI middleware: a request body over ``cap`` bytes is answered 413 (JSON ``detail``
    naming the limit) and never read past the cap.

    Args:
        app: the ASGI application wrapped.
        cap: the largest body, in bytes (default :data:`BODY_CAP`).
    """

    def __init__(self, app: Callable[..., Awaitable[None]], cap: int = BODY_CAP) -> None:
        self.app = app
        self.cap = cap

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        what = "request body"
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared < 0 or declared > self.cap:
                    await _answer_413(send, str(TooLarge(what, self.cap)))
                    return
        seen = 0
        started = False

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.cap:
                    raise TooLarge(what, self.cap)
            return message

        async def tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited, tracking)
        except TooLarge as exc:
            if started:
                raise
            await _answer_413(send, str(exc))


async def read_capped(upload: Any, kind: str) -> bytes:
    """The bytes of one uploaded file (a Starlette ``UploadFile``), read in 1 MiB chunks to at
    most ``SIZE_CAPS[kind]`` + 1 bytes.

    Raises:
        TooLarge: the upload is over its kind's cap.
    """
    cap = SIZE_CAPS[kind]
    chunks: list[bytes] = []
    size = 0
    while size <= cap:
        chunk = await upload.read(min(1 << 20, cap + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > cap:
        raise TooLarge(kind, cap)
    return b"".join(chunks)
