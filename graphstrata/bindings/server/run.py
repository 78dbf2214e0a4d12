"""``run_server``: serve an app with uvicorn until SIGINT/SIGTERM, then report."""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from fastapi import FastAPI

from graphstrata.bindings.server.app import create_app
from graphstrata.bindings.server.settings import ServerSettings
from graphstrata.bindings.threads import apply as apply_threads


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket (port 0 picks a free port).

    Parameters
    ----------
    host, port:
        Where to listen (an address with ``:`` is IPv6).

    Returns
    -------
    socket.socket
        Bound, listening and inheritable.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must say TCP: asyncio sets TCP_NODELAY on accepted sockets only when it does, and
    # without it Nagle + delayed ACK add ~40 ms to every keep-alive response (measured).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def run_server(
    index_path: str | Path | Sequence[str | Path],
    settings: ServerSettings,
    *,
    on_ready: Callable[[str, FastAPI], None] | None = None,
    log_level: str = "warning",
) -> dict[str, Any]:
    """Serve until SIGINT/SIGTERM; return the service summary.

    Parameters
    ----------
    index_path:
        The index to serve, or several (see :func:`~.app.create_app`).
    settings:
        Where to listen, limits and tuning.
    on_ready:
        ``on_ready(url, app)`` is called once the socket listens (connections made from then
        on are accepted as soon as the app has started).
    log_level:
        uvicorn's log level.

    Returns
    -------
    dict
        :meth:`Service.summary` of the stopped service.
    """
    import uvicorn

    settings.check()
    # The server role's thread budget for the whole process, before any index is opened or
    # kernel runs (Numba's threading layer and OpenMP's wait policy can only be chosen before
    # its pool starts). Not in create_app: an app made inside another process (a test, an
    # application's own server) leaves that process's pools alone unless it applies the role.
    apply_threads("server", settings.threads)
    app = create_app(index_path, settings=settings)
    sock = bind_socket(settings.host, settings.port)
    host, port = sock.getsockname()[:2]
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
    server = uvicorn.Server(uvicorn_config(app, settings, log_level=log_level))
    if on_ready is not None:
        on_ready(url, app)
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        server.run(sockets=[sock])
    except (KeyboardInterrupt, _Terminated):
        # uvicorn shuts down gracefully on SIGINT/SIGTERM, then re-raises the signal.
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()
    summary: dict[str, Any] = app.state.service.summary()
    return summary


def uvicorn_config(app: FastAPI, settings: ServerSettings, *, log_level: str = "warning") -> Any:
    """The uvicorn configuration of the service: its protocol, timeouts and limits.

    The HTTP protocol is :func:`~graphstrata.bindings.server.protocol.hardened_protocol`
    (header deadline, connection cap); the keep-alive timeout and the largest request head
    come from the settings; the body limit, the body timeout and the auth check before the
    body are the app's middleware (:func:`~graphstrata.bindings.server.app.create_app`).

    One process and one event loop serve every connection (uvicorn's single worker): the
    event loop only parses requests and encodes answers, while embedding (one thread, the
    embedder's intra-op threads) and searching (``search_threads``) run in thread pools. More
    worker processes would each hold a copy of the index and the model and split the
    micro-batches, so they would embed in smaller batches for no gain on the same cores.

    Parameters
    ----------
    app:
        The app of :func:`~graphstrata.bindings.server.app.create_app`.
    settings:
        Its settings.
    log_level:
        uvicorn's log level.

    Returns
    -------
    uvicorn.Config
        For ``uvicorn.Server(config).run(sockets=[...])``.
    """
    import uvicorn

    from graphstrata.bindings.server.protocol import hardened_protocol

    service = getattr(app.state, "service", None)
    on_refused = None
    if service is not None:
        on_refused = service.metrics.rejected.labels("connection").inc
    protocol = hardened_protocol(
        settings.header_timeout_s,
        settings.max_connections,
        settings.retry_after_s,
        on_refused,
    )
    return uvicorn.Config(
        app,
        http=protocol,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        # Typed int by uvicorn, but only given to loop.call_later, which takes float seconds.
        timeout_keep_alive=settings.keep_alive_timeout_s,  # type: ignore[arg-type]
        h11_max_incomplete_event_size=settings.max_header_bytes,
        # A stuck request must not keep a stopping server alive forever: after the grace
        # period the connections still open are closed and their tasks cancelled.
        timeout_graceful_shutdown=settings.shutdown_grace_s,  # type: ignore[arg-type]
    )


#: Name prefixes of the service's own pool threads (:class:`~.runtime.QueryRunner`).
POOL_THREADS = ("gs-search", "gs-answer", "gs-embed")


def busy_pool_threads(wait_s: float) -> list[threading.Thread]:
    """The service's pool threads still running after up to ``wait_s`` seconds.

    Parameters
    ----------
    wait_s:
        How long to wait for them, in all.

    Returns
    -------
    list of threading.Thread
        Those still alive (a search or an upstream call that outlived the grace period).
    """
    deadline = time.monotonic() + wait_s
    busy = []
    for thread in threading.enumerate():
        if thread.name.startswith(POOL_THREADS) and thread.is_alive():
            thread.join(max(deadline - time.monotonic(), 0.0))
            if thread.is_alive():
                busy.append(thread)
    return busy


class _Terminated(Exception):
    """SIGTERM, turned into an exception so the shutdown report is still printed."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise _Terminated()
