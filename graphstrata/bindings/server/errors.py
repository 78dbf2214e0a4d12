"""Errors of the HTTP service: one JSON shape, a stable code per status, one mapping.

Every error leaves as ``{"error": {"code": ..., "message": ..., ...}}``. Only the caller's
mistakes are 4xx; a failing model backend is 502 (504 when it timed out); anything else is a
defect: 500 with a generated ``error_id`` that is both in the body and in the server log next
to the traceback (docs/architecture.md, "Service").

=====================================================  ======  =====================
exception                                              status  ``error.code``
=====================================================  ======  =====================
body that is not valid JSON (any depth, any size)      422     ``bad_request``
request body/field validation (pydantic, strict)       422     ``bad_request``
``QueryError`` (mode params, budget, top-k, no text)   422     ``bad_request``
``ConfigError``, ``DocumentError``                     422     ``bad_request``
unknown mode (checked by the service)                  400     ``mode_unavailable``
missing or wrong bearer token                          401     ``unauthorized``
a token without the right or the index of the route    403     ``forbidden``
unknown route / id                                     404     ``not_found``
wrong method (``Allow`` lists the path's methods)      405     ``method_not_allowed``
cancelling an operation already running or over        409     ``conflict``
headers or body too slow to arrive                     408     ``request_timeout``
body over the limit                                    413     ``payload_too_large``
request line + headers over the limit                  431     ``bad_request``
unsupported content type                               415     ``bad_request``
saturated (slots, writer queue), shutting down         429/503 ``overloaded``
``IndexLockedError`` (another process kept the lock)   503     ``overloaded``
``StoreWriteError``, ``OSError`` ENOSPC/EDQUOT         507     ``insufficient_storage``
too many open connections (answered, then closed)      503     ``overloaded``
``LLMError`` / ``EmbedderError``                       502     ``backend_error``
the same, when the backend timed out                   504     ``backend_timeout``
the request's deadline passed (``request_timeout_s``)  504     ``deadline_exceeded``
anything else                                          500     ``internal``
=====================================================  ======  =====================

``OPTIONS`` on a known path is answered ``204`` with an ``Allow`` header that lists every
method of the path (the same list as a 405's).
"""

from __future__ import annotations

import errno
import logging
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from graphstrata.bindings.api import (
    BackendError,
    ConfigError,
    DocumentError,
    EmbedderError,
    IndexLockedError,
    QueryError,
    StoreWriteError,
)
from graphstrata.bindings.server.routing import allowed_methods, method_label

log = logging.getLogger("graphstrata.server")

#: HTTP status -> the stable ``error.code`` it is answered with.
STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    409: "conflict",
    413: "payload_too_large",
    415: "bad_request",
    422: "bad_request",
    431: "bad_request",
    429: "overloaded",
    500: "internal",
    502: "backend_error",
    503: "overloaded",
    504: "backend_timeout",
    507: "insufficient_storage",
}

#: Exceptions that are the caller's fault (answered 422 ``bad_request``).
INPUT_ERRORS: tuple[type[Exception], ...] = (QueryError, ConfigError, DocumentError)

#: ``errno`` values of a full disk or quota (answered 507).
_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})

_TIMEOUT_TEXT = re.compile(r"\w*timeout\b|timed out", re.IGNORECASE)


class ApiError(Exception):
    """An error answered as ``{"error": {"code", "message", ...}}`` with an HTTP status.

    Parameters
    ----------
    status:
        The HTTP status.
    code:
        The stable error code (see :data:`STATUS_CODES`).
    message:
        One human-readable line.
    headers:
        Extra response headers (``Retry-After``, ``WWW-Authenticate``).
    details:
        More members of the ``error`` object (``problems``, ``error_id``).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        headers: dict[str, str] | None = None,
        **details: Any,
    ):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        self.details = details

    def body(self) -> dict[str, Any]:
        """The JSON body of this error."""
        return error_body(self.code, self.message, **self.details)


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    """``{"error": {"code": code, "message": message, **details}}``."""
    return {"error": {"code": code, "message": message, **details}}


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None, **details: Any
) -> JSONResponse:
    """A JSON error response (see :func:`error_body`)."""
    return JSONResponse(error_body(code, message, **details), status_code=status, headers=headers)


def one_line(text: str) -> str:
    """``text`` with every run of whitespace collapsed to one space."""
    return " ".join(text.split())


def is_timeout(exc: BaseException) -> bool:
    """Whether a backend failure was a timeout.

    True when the exception or one of its causes is a ``TimeoutError`` or has a class named
    ``*Timeout*`` (``httpx.ReadTimeout``), or when its message reports one (the HTTP backends
    name the last transport error, e.g. ``last error: ReadTimeout: ...``).

    Parameters
    ----------
    exc:
        The exception raised by a backend.

    Returns
    -------
    bool
        True for a timeout.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, TimeoutError) or "timeout" in type(current).__name__.lower():
            return True
        current = current.__cause__ or current.__context__
    return bool(_TIMEOUT_TEXT.search(str(exc)))


def known_error(exc: BaseException) -> ApiError | None:
    """The API error for an exception of a known class, or None for anything else.

    Parameters
    ----------
    exc:
        Raised while serving a request (or applying a document operation).

    Returns
    -------
    ApiError or None
        422 for input errors, 502/504 for backend failures; None means a defect (500).
    """
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, DocumentError):
        return ApiError(422, "bad_request", one_line(str(exc)), problems=exc.problems[:50])
    if isinstance(exc, INPUT_ERRORS):
        return ApiError(422, "bad_request", one_line(str(exc)))
    if isinstance(exc, IndexLockedError):
        # The message names the index's path: the server's layout is not the client's business.
        return ApiError(503, "overloaded", "another process holds the index lock; retry later")
    if isinstance(exc, StoreWriteError):
        # The message names the file that could not be written and the version the index
        # stays at: what the operator needs to free space and retry.
        log.error("store write failed: %s", one_line(str(exc)))
        return ApiError(507, "insufficient_storage", one_line(str(exc)))
    if isinstance(exc, OSError) and exc.errno in _DISK_FULL:
        name = Path(exc.filename).name if isinstance(exc.filename, str) else "a file"
        message = f"no space left on the index's disk while writing {name}; free space and retry"
        log.error("%s (%s)", message, exc)
        return ApiError(507, "insufficient_storage", message)
    if isinstance(exc, BackendError):
        what = "embedder" if isinstance(exc, EmbedderError) else "LLM"
        error_id = uuid.uuid4().hex
        log.error("%s backend failure (error id %s)", what, error_id, exc_info=exc)
        detail = one_line(str(exc)) or type(exc).__name__
        if is_timeout(exc):
            return ApiError(
                504, "backend_timeout", f"the {what} backend timed out: {detail}", error_id=error_id
            )
        return ApiError(
            502, "backend_error", f"the {what} backend failed: {detail}", error_id=error_id
        )
    return None


def internal_error(exc: BaseException, where: str) -> ApiError:
    """A 500 for a defect: a new error id, logged with the traceback.

    Parameters
    ----------
    exc:
        The unexpected exception.
    where:
        What was being done (``"POST /v1/retrieve"``, ``"operation <id>"``), for the log.

    Returns
    -------
    ApiError
        ``internal``, with ``error_id`` among its details.
    """
    error_id = uuid.uuid4().hex
    log.error("internal error %s on %s", error_id, where, exc_info=exc)
    return ApiError(
        500,
        "internal",
        f"internal error {error_id} ({type(exc).__name__}); the server log has the details",
        error_id=error_id,
    )


def api_error(exc: BaseException, where: str) -> ApiError:
    """:func:`known_error`, else :func:`internal_error` (the one mapping of the service)."""
    return known_error(exc) or internal_error(exc, where)


def validation_messages(errors: Sequence[Any]) -> list[str]:
    """``loc: msg`` for the first ten pydantic validation errors.

    Only the location and pydantic's message are used (never the input, the exception's text
    or the endpoint it was raised for), each on one line of at most 300 characters.
    """
    out = []
    for err in errors[:10]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        text = one_line(f"{loc or 'body'}: {err.get('msg', 'invalid')}")
        out.append(text if len(text) <= 300 else text[:297] + "...")
    return out


def first_param(exc: RequestValidationError) -> str | None:
    """The member of the body that the first validation error is about (``messages.0.role``;
    None for the body as a whole): OpenAI's ``error.param``."""
    for err in exc.errors()[:1]:
        loc = [str(p) for p in err.get("loc", ()) if p != "body"]
        return ".".join(loc) or None
    return None


def install_error_handlers(app: FastAPI) -> None:
    """Every error leaves as JSON with a stable code (the mapping of :func:`api_error`).

    Parameters
    ----------
    app:
        The application.
    """

    async def _mapped(request: Request, exc: Exception) -> JSONResponse:
        err = api_error(exc, f"{request.method} {request.url.path}")
        return error_response(err.status, err.code, err.message, err.headers, **err.details)

    mapped: tuple[type[Exception], ...] = (ApiError, *INPUT_ERRORS, BackendError, Exception)
    for cls in mapped:
        app.add_exception_handler(cls, _mapped)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = validation_messages(exc.errors())
        return error_response(
            422, "bad_request", "; ".join(problems), problems=problems, param=first_param(exc)
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        headers = dict(exc.headers or {})
        message = str(exc.detail)
        if exc.status_code == 405:
            allowed = allowed_methods(request.app.state.routes, request.scope)
            headers["Allow"] = ", ".join(allowed)
            if request.method == "OPTIONS":
                return Response(status_code=204, headers=headers)
            method = method_label(request.method)
            message = f"method {method} is not allowed on this path; allowed: {headers['Allow']}"
        code = STATUS_CODES.get(
            exc.status_code, "bad_request" if exc.status_code < 500 else "internal"
        )
        return error_response(exc.status_code, code, message, headers)


def error_responses(*statuses: int, model: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` documenting the given error statuses with ``model``."""
    return {s: {"model": model, "description": STATUS_CODES.get(s, "error")} for s in statuses}
