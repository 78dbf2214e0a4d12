"""``GET /readyz``: not ready (503) until the server has warmed up, then ready (200).

At start-up a background thread compiles (or loads from Numba's cache) every kernel of the
engine (:func:`graphstrata.bindings.warmup.warmup`), then embeds one text and runs one query
per mode on each served index, so the first real request finds its kernels, its embedder
session and its memory-mapped tables ready. ``/healthz`` (liveness) answers at once; a load
balancer or an orchestrator routes traffic on ``/readyz``. Requests that come earlier are
served all the same, paying what is not warm yet.

``GRAPHSTRATA_SERVE_WARMUP`` picks the warm-up: ``full`` (default), ``index`` (the served
indexes only: the kernels are known to be in the cache, e.g. an image warmed at build time),
or ``off`` (ready at once).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from graphstrata.bindings.server.runtime import Service

#: The environment variable that picks the warm-up level.
WARMUP_ENV = "GRAPHSTRATA_SERVE_WARMUP"
LEVELS = ("full", "index", "off")
_QUESTION = "Which instruments did the observatory build?"

log = logging.getLogger("graphstrata.server")


class Readiness:
    """The server's warm-up and its ``/readyz`` route.

    Parameters
    ----------
    services:
        The served indexes.
    level:
        ``full``, ``index`` or ``off``; default ``$GRAPHSTRATA_SERVE_WARMUP``, else ``full``.

    Attributes
    ----------
    hold:
        The warm-up waits for this event before it starts (set from the start; a test clears
        it to observe the not-ready state, :meth:`stop` sets it).
    ready:
        Set when the warm-up has ended (also after a failed warm-up: the server works
        without it, compiling on first use; the error is in ``/readyz``).
    """

    def __init__(self, services: Iterable[Service], level: str | None = None):
        self.level = level or os.environ.get(WARMUP_ENV) or "full"
        if self.level not in LEVELS:
            raise ValueError(f"{WARMUP_ENV} must be one of {', '.join(LEVELS)}: {self.level!r}")
        self.services = list(services)
        self.hold = threading.Event()
        self.hold.set()
        self.ready = threading.Event()
        self.report: dict[str, Any] = {"level": self.level}
        self._started = 0.0
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the warm-up thread (at the app's start-up)."""
        self._started = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="graphstrata-warmup", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float | None = None) -> None:
        """Let a held warm-up go and wait up to ``timeout_s`` seconds (None: for ever) for it
        to end (at the app's shutdown). The warm-up thread is a daemon: one still running
        then (e.g. a graph query waiting on a slow upstream LLM) does not keep the process."""
        self.hold.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        self.hold.wait()
        try:
            if self.level == "full":
                from graphstrata.bindings.warmup import warmup

                kernels = warmup()
                self.report["kernels"] = kernels.to_dict()
                log.info("%s", kernels.summary())
            if self.level in ("full", "index"):
                for service in self.services:
                    for mode in service.index.modes:  # embeds the question once, then cached
                        service.index.query(_QUESTION, mode)
        except Exception as exc:  # the server still works: it compiles on first use
            self.report["error"] = f"{type(exc).__name__}: {exc}"
            log.warning("warm-up failed (%s); serving without it", self.report["error"])
        finally:
            self.report["seconds"] = round(time.perf_counter() - self._started, 3)
            self.ready.set()

    def router(self) -> APIRouter:
        """``GET /readyz``: 200 ``{"status": "ready", "warmup": {...}}`` once warm, else 503
        ``{"status": "warming_up", "seconds": ...}``."""
        api = APIRouter()

        @api.get("/readyz", summary="Readiness: 503 until the warm-up has ended")
        async def readyz() -> JSONResponse:
            if self.ready.is_set():
                return JSONResponse({"status": "ready", "warmup": self.report})
            waited = time.perf_counter() - self._started if self._started else 0.0
            return JSONResponse(
                {"status": "warming_up", "level": self.level, "seconds": round(waited, 3)},
                status_code=503,
            )

        return api
