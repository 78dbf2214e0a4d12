"""The HTTP/1.1 connection protocol of the service: uvicorn's h11 protocol with two limits.

uvicorn bounds the idle time between two requests (``timeout_keep_alive``) and the size of a
request's headers (``h11_max_incomplete_event_size``), but not the time a client may take to
send them, nor the number of open connections: a client that sends its headers one byte at
a time (slowloris), or opens connections and sends nothing, holds them forever.
:func:`hardened_protocol` returns the protocol class that adds, per connection:

* a header deadline: from the connection's opening, and from the first byte of each later
  request, the request line and headers must arrive within ``header_timeout_s``; otherwise
  the client gets ``408 request_timeout`` (when it had sent part of a request) and the
  connection is closed;
* a connection cap: beyond ``max_connections`` open connections, a new one is answered
  ``503 overloaded`` with ``Retry-After`` and closed before anything is read.

The body's own timeout is enforced in the app
(:class:`~graphstrata.bindings.server.middleware.BodyLimitMiddleware`), where the body is
read. See :class:`~graphstrata.bindings.server.settings.ServerSettings`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from graphstrata.bindings.server.errors import error_body


def canned_response(status: int, reason: str, code: str, message: str, **headers: str) -> bytes:
    """A whole HTTP/1.1 JSON error response that closes the connection.

    Parameters
    ----------
    status, reason:
        Status code and reason phrase.
    code, message:
        The ``error`` object's members.
    **headers:
        Extra headers (``Retry_After="1"`` is sent as ``retry-after: 1``).

    Returns
    -------
    bytes
        The status line, headers and body, ready to write to a transport.
    """
    payload = json.dumps(error_body(code, message)).encode()
    lines = [
        f"HTTP/1.1 {status} {reason}",
        "content-type: application/json",
        f"content-length: {len(payload)}",
        "connection: close",
        *(f"{k.replace('_', '-').lower()}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


class HardenedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header deadline and a connection cap (class attributes).

    Use :func:`hardened_protocol` to get a subclass with the limits of a
    :class:`~graphstrata.bindings.server.settings.ServerSettings`.
    """

    header_timeout_s: float = 10.0
    max_connections: int = 1024
    retry_after_s: int = 1
    #: Called once per refused connection (a metrics counter).
    on_refused: Callable[[], None] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        self._refused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
        """Accept the connection, or refuse it at once when too many are open."""
        super().connection_made(transport)  # type: ignore[arg-type]
        if len(self.connections) > self.max_connections:
            self._refused = True
            self.connections.discard(self)
            if self.on_refused is not None:
                self.on_refused()
            self.transport.write(
                canned_response(
                    503,
                    "Service Unavailable",
                    "overloaded",
                    f"more than {self.max_connections} connections are open; retry later",
                    Retry_After=str(self.retry_after_s),
                )
            )
            self.transport.close()
            return
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        """Feed h11; a new request starts its header deadline, complete headers end it."""
        if self._refused:
            return
        if self._header_timer is None and self.conn.their_state is h11.IDLE:
            self._arm_header_timer()
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._cancel_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the header deadline with the connection."""
        self._cancel_header_timer()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a response is still being written: the keep-alive timer takes over
        partial, _closed = self.conn.trailing_data
        if partial:
            self.transport.write(
                canned_response(
                    408,
                    "Request Timeout",
                    "request_timeout",
                    f"the request headers did not arrive within {self.header_timeout_s:g} s",
                )
            )
        self.transport.close()


def hardened_protocol(
    header_timeout_s: float,
    max_connections: int,
    retry_after_s: int = 1,
    on_refused: Callable[[], None] | None = None,
) -> type[HardenedH11Protocol]:
    """The protocol class to give uvicorn (``Config(http=...)``) for these limits.

    Parameters
    ----------
    header_timeout_s:
        Seconds for a request's line and headers to arrive.
    max_connections:
        Open connections at once; one more is answered 503 and closed.
    retry_after_s:
        ``Retry-After`` of that 503.
    on_refused:
        Called for each refused connection.

    Returns
    -------
    type
        A subclass of :class:`HardenedH11Protocol` with these limits.
    """
    attrs = {
        "header_timeout_s": float(header_timeout_s),
        "max_connections": int(max_connections),
        "retry_after_s": int(retry_after_s),
        "on_refused": staticmethod(on_refused) if on_refused is not None else None,
    }
    return type("ServiceH11Protocol", (HardenedH11Protocol,), attrs)
