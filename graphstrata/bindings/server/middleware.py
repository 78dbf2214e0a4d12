"""ASGI middleware of the service: request metrics, auth before the body, body limit and
timeout, and the last-resort 500.

Order (outermost first): :class:`MetricsMiddleware` sees every answer; :class:`AuthMiddleware`
checks the bearer token on the headers before a byte of the body is read;
:class:`BodyLimitMiddleware` reads the body within the size limit and the body timeout;
:class:`ErrorMiddleware` answers an exception that escaped the app.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Collection, MutableMapping, Sequence
from typing import Any

from starlette.responses import JSONResponse
from starlette.routing import BaseRoute

from graphstrata.bindings.server.auth import TokenTable
from graphstrata.bindings.server.errors import api_error, error_body
from graphstrata.bindings.server.metrics import ServiceMetrics
from graphstrata.bindings.server.routing import method_label, route_template, status_label

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Largest body of an unauthenticated request that is read (and dropped) so that its 401 can
#: keep the connection alive; a larger or chunked one is answered at once and the connection
#: closed, unread (uvicorn has buffered about this much of it anyway).
DRAIN_LIMIT = 65_536


class AuthMiddleware:
    """Answer 401 to a request without a known bearer token (403 to one whose token lacks the
    route's right or index) before its body is read.

    The token is compared in constant time. A request with no body, or a declared body of at
    most :data:`DRAIN_LIMIT` bytes (read within ``timeout_s`` and dropped), gets its 401 on a
    connection that stays open; any other gets its 401 at once, unread, and the connection is
    closed, so an unauthenticated client can never make the server buffer or wait for a body.

    Parameters
    ----------
    app:
        The wrapped ASGI app.
    token:
        The required bearer token, or the service's :class:`~.auth.TokenTable`.
    open_paths:
        Paths served without a token (``/healthz``, the OpenAPI document and its viewers).
    timeout_s:
        How long the small body of a refused request may take to arrive.
    access:
        ``access(method, path)`` -> ``(index name or None, right)`` that the route needs, or
        None to check only that the token is known.
    """

    def __init__(
        self,
        app: ASGIApp,
        token: str | TokenTable,
        open_paths: Collection[str],
        timeout_s: float,
        access: Callable[[str, str], tuple[str | None, str]] | None = None,
    ):
        self.app = app
        self.tokens = TokenTable.build(token) if isinstance(token, str) else token
        self.open_paths = frozenset(open_paths)
        self.timeout_s = timeout_s
        self.access = access

    def authorized(self, scope: Scope) -> bool:
        """Whether the request carries ``Authorization: Bearer <token>`` with a known token."""
        return self.tokens.scope_of_header(_header(scope, b"authorization")) is not None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        token_scope = self.tokens.scope_of_header(_header(scope, b"authorization"))
        if token_scope is not None:
            if self.access is None:
                await self.app(scope, receive, send)
                return
            index, right = self.access(scope.get("method", "GET"), scope["path"])
            if token_scope.allows(index, right):
                await self.app(scope, receive, send)
                return
            where = f" on index {index!r}" if index else ""
            status, code, message = 403, "forbidden", f"this token has no {right} right{where}"
            headers: dict[str, str] = {}
        else:
            status, code, message = 401, "unauthorized", "missing or wrong bearer token"
            headers = {"WWW-Authenticate": "Bearer"}
        declared = _header(scope, b"content-length")
        chunked = "chunked" in (_header(scope, b"transfer-encoding") or "").lower()
        length = int(declared) if declared is not None and declared.isdigit() else None
        if chunked or (declared is not None and length is None):
            close = True  # a body of unknown size: not read
        elif not length:
            close = False  # no body
        elif length <= DRAIN_LIMIT:
            close = not await _drain(receive, DRAIN_LIMIT, self.timeout_s)
        else:
            close = True  # too large to read for a refusal
        await send_error(send, status, code, message, headers=headers, close=close)


async def _drain(receive: Receive, limit: int, timeout_s: float) -> bool:
    """Read and drop a body of at most ``limit`` bytes; whether it all came within the time."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    size = 0
    while True:
        try:
            message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0.0))
        except TimeoutError:
            return False
        if message["type"] == "http.disconnect":
            return False
        size += len(message.get("body", b""))
        if size > limit:
            return False
        if not message.get("more_body", False):
            return True


class BodyBudget:
    """Bytes of request bodies held at once across every connection, within a limit.

    All callers run on the event loop thread, so a plain counter is race free.

    Parameters
    ----------
    limit:
        The most bytes held at once.
    retry_after_s:
        ``Retry-After`` of the refusal.
    """

    def __init__(self, limit: int, retry_after_s: int):
        self.limit = limit
        self.retry_after_s = retry_after_s
        self.in_use = 0

    def take(self, size: int) -> bool:
        """Count ``size`` more bytes; False (nothing counted) when that would pass the limit."""
        if self.in_use + size > self.limit:
            return False
        self.in_use += size
        return True

    def give_back(self, size: int) -> None:
        """Stop counting ``size`` bytes."""
        self.in_use -= size


class BodyLimitMiddleware:
    """Read the body within ``max_bytes`` and ``timeout_s``, whether or not it has a length.

    A request line and headers over ``max_header_bytes`` get 431 (uvicorn refuses a head that
    arrives in pieces over that size with 400; a whole one that arrives in one read is
    checked here). A declared ``Content-Length`` over the limit is refused with 413 before
    anything is read;
    a chunked upload is refused once it crosses the limit; a body that has not fully arrived
    ``timeout_s`` seconds after the headers gets ``408 request_timeout`` (slow-body clients
    cannot hold a connection). Each of these closes the connection. The app sees the body
    only once it is whole, so it never holds more than ``max_bytes`` of it.

    Parameters
    ----------
    app:
        The wrapped ASGI app.
    max_bytes:
        The largest accepted body.
    timeout_s:
        Seconds the whole body may take to arrive.
    max_header_bytes:
        The largest request line + headers (None: not checked here).
    budget:
        The memory budget of bodies across connections (None: none). A body is counted
        from its declared ``Content-Length`` before a byte is read, or chunk by chunk as it
        arrives, until the app has answered; one that does not fit is refused with ``503
        overloaded`` + ``Retry-After`` and its connection closed, so many connections each
        sending a body of the largest size cannot add up past the budget.
    """

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        timeout_s: float = 60.0,
        max_header_bytes: int | None = None,
        budget: BodyBudget | None = None,
    ):
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self.max_header_bytes = max_header_bytes
        self.budget = budget or BodyBudget(2**63, 0)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.max_header_bytes is not None and head_size(scope) > self.max_header_bytes:
            await send_error(
                send,
                431,
                "bad_request",
                f"request line and headers are over the limit of {self.max_header_bytes} bytes",
            )
            return
        declared = _header(scope, b"content-length")
        held = 0
        if declared is not None:
            if not declared.isdigit():
                await send_error(send, 400, "bad_request", "invalid Content-Length header")
                return
            if int(declared) > self.max_bytes:
                await self._too_large(send)
                return
            held = int(declared)
        counted = [0]  # bytes of this body counted in the budget, given back at the end
        try:
            if not self._take(counted, held):
                await self._over_budget(send)
                return
            await self._read_then_call(scope, receive, send, counted)
        finally:
            self.budget.give_back(counted[0])

    def _take(self, counted: list[int], size: int) -> bool:
        """Count ``size`` bytes of this body in the budget (``counted[0]`` is what it has)."""
        if size <= counted[0]:
            return True
        if not self.budget.take(size - counted[0]):
            return False
        counted[0] = size
        return True

    async def _read_then_call(
        self, scope: Scope, receive: Receive, send: Send, counted: list[int]
    ) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0.0))
            except TimeoutError:
                await send_error(
                    send,
                    408,
                    "request_timeout",
                    f"the request body did not arrive within {self.timeout_s:g} s",
                )
                return
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await self._too_large(send)
                return
            if not self._take(counted, size):  # a chunked body, counted as it arrives
                await self._over_budget(send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        whole = b"".join(chunks)
        del chunks
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": whole, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _over_budget(self, send: Send) -> None:
        retry = self.budget.retry_after_s
        await send_error(
            send,
            503,
            "overloaded",
            f"request bodies in flight are at the server's memory budget of "
            f"{self.budget.limit} bytes; retry after {retry} s",
            headers={"Retry-After": str(retry)},
        )

    async def _too_large(self, send: Send) -> None:
        await send_error(
            send,
            413,
            "payload_too_large",
            f"request body is over the limit of {self.max_bytes} bytes",
        )


class MetricsMiddleware:
    """Count requests by route template, method and status, and time them.

    Every label takes its value from a closed set, whatever the client sends: the endpoint is
    a route template of the app (``"unmatched"`` for a path no route has), the method one of
    :data:`~.routing.KNOWN_METHODS` (else ``"other"``), the status one the service answers
    (else its class, :func:`~.routing.status_label`). So no request, authenticated or not,
    can create new time series.

    Parameters
    ----------
    app:
        The wrapped ASGI app.
    metrics:
        Where the counts go.
    routes:
        The app's routes (``app.router.routes``), to name the endpoint of a request that was
        answered before routing (401, 408, 413).
    """

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics, routes: Sequence[BaseRoute]):
        self.app = app
        self.metrics = metrics
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            endpoint = self.endpoint(scope)
            method = method_label(str(scope.get("method", "")))
            self.metrics.requests.labels(endpoint, method, status_label(status)).inc()
            self.metrics.request_seconds.labels(endpoint).observe(time.perf_counter() - start)

    def endpoint(self, scope: Scope) -> str:
        """The route template of the request, or ``"unmatched"``."""
        path = getattr(scope.get("route"), "path", None)
        if isinstance(path, str):
            return path
        return route_template(self.routes, scope) or "unmatched"


class ErrorMiddleware:
    """Answer an exception that escaped the endpoint with the service's mapping.

    Starlette's own last-resort handler answers and then re-raises (so the server logs the
    traceback a second time, without the error id); this one answers a mapped JSON error
    (:func:`~graphstrata.bindings.server.errors.api_error`: a defect is a 500 whose id is
    logged with the traceback) and is done. After the response has started, nothing can be
    answered any more and the exception goes on.

    Parameters
    ----------
    app:
        The wrapped ASGI app.
    """

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        watched = StartWatch(send)
        try:
            await self.app(scope, receive, watched)
        except Exception as exc:
            if watched.started:
                raise
            err = api_error(exc, f"{scope.get('method', '')} {scope.get('path', '')}")
            response = JSONResponse(err.body(), status_code=err.status, headers=err.headers)
            await response(scope, receive, send)


class StartWatch:
    """``send`` wrapped to note whether the response has started: after its start an error
    can no longer be answered, only the connection cut."""

    def __init__(self, send: Send):
        self.send = send
        self.started = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self.send(message)


def head_size(scope: Scope) -> int:
    """Bytes of the request line and headers, about as they came on the wire."""
    size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"") + 16
    for key, value in scope.get("headers", ()):
        size += len(key) + len(value) + 4
    return size


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return str(value.decode("latin-1").strip())
    return None


async def send_error(
    send: Send,
    status: int,
    code: str,
    message: str,
    headers: dict[str, str] | None = None,
    close: bool = True,
) -> None:
    """Send a JSON error before the app has read the body.

    Parameters
    ----------
    send:
        The ASGI ``send`` callable.
    status, code, message:
        As for :func:`~graphstrata.bindings.server.errors.error_body`.
    headers:
        Extra response headers (``WWW-Authenticate``).
    close:
        Close the connection after the answer (``Connection: close``): needed whenever the
        body was not read.
    """
    payload = json.dumps(error_body(code, message)).encode()
    raw = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
    ]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    if close:
        raw.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})
