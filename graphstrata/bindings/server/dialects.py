"""Error bodies in the dialect of the client a route emulates.

The service answers every error as ``{"error": {"code", "message", ...}}`` (:mod:`.errors`).
The OpenAI-compatible routes (``/v1/chat/completions``, ``/v1/models``,
``/v1/vector_stores/...``) answer OpenAI's shape instead, ``{"error": {"message", "type",
"param", "code"}}`` with 400 where the service says 422 (OpenAI's status for an invalid
request), and the Ollama routes (``/api/...``) answer Ollama's, ``{"error": "message"}``.
:class:`ErrorDialectMiddleware` rewrites the error responses of those paths, whoever wrote
them (the token check, the body limit, validation, a route), so there is one mapping.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from graphstrata.bindings.server.middleware import ASGIApp, Message, Receive, Scope, Send

#: OpenAI's ``error.type`` for a status (4xx not listed: ``invalid_request_error``).
_OPENAI_TYPES = {401: "invalid_request_error", 429: "rate_limit_error"}
#: OpenAI's ``error.code`` for some of the service's codes (others are kept).
_OPENAI_CODES = {"unauthorized": "invalid_api_key", "overloaded": "rate_limit_exceeded"}


def openai_error(status: int, error: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The status and body of a service error in OpenAI's dialect.

    Parameters
    ----------
    status:
        The service's status (422 becomes 400).
    error:
        The service's ``error`` object (``code``, ``message``, and optionally ``param`` and
        other details, which are kept).

    Returns
    -------
    tuple
        ``(status, {"error": {"message", "type", "param", "code", ...}})``; ``type`` is
        ``server_error`` for a 5xx, ``rate_limit_error`` for a 429, else
        ``invalid_request_error``.
    """
    status = 400 if status == 422 else status
    code = str(error.get("code") or "")
    kind = "server_error" if status >= 500 else _OPENAI_TYPES.get(status, "invalid_request_error")
    extra = {k: v for k, v in error.items() if k not in ("code", "message", "param", "type")}
    body = {
        "message": str(error.get("message") or ""),
        "type": kind,
        "param": error.get("param"),
        "code": _OPENAI_CODES.get(code, code) or None,
        **extra,
    }
    return status, {"error": body}


def ollama_error(status: int, error: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The status and body of a service error in Ollama's dialect: ``{"error": "message"}``
    (422 becomes 400, as Ollama answers a bad request)."""
    return (400 if status == 422 else status), {"error": str(error.get("message") or "")}


Dialect = Callable[[int, dict[str, Any]], tuple[int, dict[str, Any]]]


def dialect_of(path: str) -> Dialect | None:
    """The error dialect of a request path, or None for the service's own."""
    if path in ("/v1/chat/completions", "/v1/models") or path.startswith("/v1/vector_stores/"):
        return openai_error
    if path.startswith("/api/"):
        return ollama_error
    return None


class ErrorDialectMiddleware:
    """Rewrite the JSON error responses of the emulated routes (:func:`dialect_of`).

    Only a response with status >= 400 and a JSON body of the service's shape is buffered
    and rewritten (its headers kept, ``content-length`` updated); every other response
    passes through untouched.

    Parameters
    ----------
    app:
        The wrapped ASGI app.
    """

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        dialect = dialect_of(scope.get("path", "")) if scope["type"] == "http" else None
        if dialect is None:
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def rewriting(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                kind = dict(message.get("headers") or []).get(b"content-type", b"")
                json_body = kind.startswith(b"application/json")
                if message["status"] >= 400 and json_body:
                    start = message
                    return
            elif message["type"] == "http.response.body" and start is not None:
                chunks.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                status, body = rewritten(dialect, start["status"], b"".join(chunks))
                kept = [(k, v) for k, v in start.get("headers") or [] if k != b"content-length"]
                kept.append((b"content-length", str(len(body)).encode()))
                await send({**start, "status": status, "headers": kept})
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        await self.app(scope, receive, rewriting)


def rewritten(dialect: Dialect, status: int, raw: bytes) -> tuple[int, bytes]:
    """The error in ``dialect``, or ``raw`` unchanged when it is not the service's shape."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        return status, raw
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if not isinstance(error, dict) or "message" not in error:
        return status, raw
    new_status, body = dialect(status, error)
    return new_status, json.dumps(body, ensure_ascii=False).encode()
