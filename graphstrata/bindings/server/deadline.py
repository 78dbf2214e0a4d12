"""The deadline of a request: one limit across its whole life (issue 51).

Every request the app serves runs under :class:`DeadlineMiddleware`: once
``request_timeout_s`` seconds have passed since its body arrived (search, upstream LLM and
streaming together), the request is cancelled and answered ``504 deadline_exceeded`` (or, when
its response had already started, its connection is closed). Cancelling the request's task
stops everything that runs on the event loop; work already handed to a thread pool cannot be
interrupted, so long loops there check the deadline cooperatively (:func:`check`): the
server's batch retrieval checks it between queries, so an expired batch frees its search
thread after the query in progress (a graph query's walk is bounded by ``ppr_iters <= 100``).

The deadline of the running request is a context variable: :meth:`QueryRunner.run
<graphstrata.bindings.server.runtime.QueryRunner.run>` runs pool work in a copy of the
request's context, so :func:`check` sees it there too.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable
from typing import TypeVar

from graphstrata.bindings.server.errors import ApiError
from graphstrata.bindings.server.middleware import (
    ASGIApp,
    Receive,
    Scope,
    Send,
    StartWatch,
    send_error,
)

#: The monotonic time by which the current request must be done (None: no deadline).
_DEADLINE: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar(
    "graphstrata_request_deadline", default=None
)

T = TypeVar("T")


def expired_error(seconds: float) -> ApiError:
    """The ``504 deadline_exceeded`` of a request that ran past ``seconds``."""
    return ApiError(
        504,
        "deadline_exceeded",
        f"the request did not finish within the server's request timeout of {seconds:g} s",
    )


def check() -> None:
    """Raise ``504 deadline_exceeded`` when the current request's deadline has passed.

    Cheap (one clock read); call it between the steps of a long loop that runs in a thread.

    Raises
    ------
    ApiError
        504 ``deadline_exceeded``.
    """
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() >= deadline[0]:
        raise expired_error(deadline[1])


class DeadlineMiddleware:
    """Cancel a request that runs longer than ``timeout_s`` (see the module's docstring).

    Parameters
    ----------
    app:
        The wrapped ASGI app.
    timeout_s:
        Seconds a request may take once it reached the app.
    """

    def __init__(self, app: ASGIApp, timeout_s: float):
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        watched = StartWatch(send)
        token = _DEADLINE.set((time.monotonic() + self.timeout_s, self.timeout_s))
        try:
            await asyncio.wait_for(self.app(scope, receive, watched), self.timeout_s)
        except TimeoutError:
            if watched.started:
                # Nothing can be answered any more: the response ends unfinished (the server
                # closes the connection), so the client sees a cut stream, not a whole one.
                return
            err = expired_error(self.timeout_s)
            await send_error(send, err.status, err.code, err.message)
        finally:
            _DEADLINE.reset(token)


def in_context(fn: Callable[[], T]) -> Callable[[], T]:
    """``fn`` bound to a copy of the current context (the request's deadline included), to
    run in a thread pool, where the caller's context variables are not otherwise seen; it
    does not start once the deadline has passed (work that waited in the pool's queue)."""
    context = contextvars.copy_context()

    def checked() -> T:
        check()
        return fn()

    return lambda: context.run(checked)
