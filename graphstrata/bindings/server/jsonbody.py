"""Request bodies as JSON: one strict, bounded parser for every route.

Python's ``json.loads`` recurses once per nesting level, so ``[[[[...]]]]`` a few thousand
levels deep raises ``RecursionError`` (a 500 if nothing catches it), and an integer of more
than 4,300 digits raises a ``ValueError`` that is not a ``JSONDecodeError``. Every body of
the service is parsed here instead, with pydantic's JSON parser (jiter): nesting is limited to
:data:`MAX_DEPTH` levels, ``NaN``/``Infinity`` (not JSON) are refused, and every failure is
one ``422 bad_request`` that says what is wrong and where.

:class:`JSONRoute` makes FastAPI's request-model routes parse their bodies with it too.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute
from pydantic_core import from_json

from graphstrata.bindings.server.errors import ApiError

#: Deepest nesting of arrays and objects a body may have (the parser's fixed limit).
MAX_DEPTH = 200


def parse_json(data: bytes | str, what: str = "body") -> Any:
    """Decode one JSON value.

    Parameters
    ----------
    data:
        The JSON text (bytes are read as UTF-8).
    what:
        What it is, for the message (``"body"``, ``"line 3"``).

    Returns
    -------
    Any
        The decoded value (dicts, lists, str, int, float, bool, None).

    Raises
    ------
    ApiError
        422 ``bad_request`` for anything that is not one valid JSON value: a syntax error,
        invalid UTF-8, ``NaN``/``Infinity``, nesting deeper than :data:`MAX_DEPTH`, an
        integer of more than 4,300 digits.
    """
    try:
        return from_json(data, allow_inf_nan=False)
    except ValueError as exc:
        reason = str(exc)
        if "recursion limit" in reason:
            reason = f"nested deeper than {MAX_DEPTH} levels; {reason}"
        raise ApiError(422, "bad_request", f"{what} is not valid JSON ({reason})") from exc


class JSONRequest(Request):
    """A request whose :meth:`json` is :func:`parse_json` (errors are 422, never 400/500)."""

    async def json(self) -> Any:
        """The body, decoded by :func:`parse_json`.

        Raises
        ------
        HTTPException
            422 for a body that is not valid JSON (FastAPI passes an ``HTTPException``
            through unchanged; the service's handler answers it with ``bad_request``).
        """
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = parse_json(body)
            except ApiError as exc:
                raise HTTPException(exc.status, exc.message) from exc
        return self._json


class JSONRoute(APIRoute):
    """A FastAPI route whose request-model bodies are decoded by :func:`parse_json`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """FastAPI's handler, given a :class:`JSONRequest` instead of the plain request."""
        handler = super().get_route_handler()

        async def route_handler(request: Request) -> Response:
            return await handler(JSONRequest(request.scope, request.receive))

        return route_handler
