"""What the app's routes say about a request: its route template and the allowed methods.

Used for the metrics labels (a route template, never the raw path) and for the ``Allow``
header of ``OPTIONS`` answers and ``405`` errors, which must list every method that the
path's routes serve, not only those of the first route that matched the path.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from typing import Any

from starlette.routing import BaseRoute, Match

Scope = MutableMapping[str, Any]

#: Request methods reported under their own name in the metrics; any other is ``"other"``.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})


def _matching(routes: Iterable[BaseRoute], scope: Scope) -> list[tuple[Match, BaseRoute]]:
    probe = {"type": "http", "method": scope.get("method", "GET"), "root_path": "", **scope}
    out: list[tuple[Match, BaseRoute]] = []
    for route in routes:
        match, _ = route.matches(probe)
        if match is not Match.NONE:
            out.append((match, route))
    return out


def route_template(routes: Iterable[BaseRoute], scope: Scope) -> str | None:
    """The path template of the route that serves (or would serve) this request.

    Parameters
    ----------
    routes:
        The app's routes (``app.router.routes``).
    scope:
        The ASGI scope of the request.

    Returns
    -------
    str or None
        ``/v1/documents/{doc_id:path}`` and the like: the route of the matched path (a full
        match first, else one whose path matched with another method), or None when no
        route has this path.
    """
    matches = _matching(routes, scope)
    for wanted in (Match.FULL, Match.PARTIAL):
        for match, route in matches:
            if match is wanted:
                path = getattr(route, "path", None)
                if isinstance(path, str):
                    return path
    return None


def allowed_methods(routes: Iterable[BaseRoute], scope: Scope) -> list[str]:
    """Every method the routes of this request's path serve, plus ``OPTIONS``, sorted.

    Parameters
    ----------
    routes:
        The app's routes (``app.router.routes``).
    scope:
        The ASGI scope of the request.

    Returns
    -------
    list of str
        E.g. ``["DELETE", "GET", "HEAD", "OPTIONS"]`` for ``/v1/documents/{doc_id}``
        (Starlette serves ``HEAD`` wherever it serves ``GET``); empty when no route has
        this path.
    """
    methods: set[str] = set()
    for _, route in _matching(routes, scope):
        methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods | {"OPTIONS"}) if methods else []


def method_label(method: str) -> str:
    """The request method as a metrics label: a known method, else ``"other"``."""
    upper = method.upper()
    return upper if upper in KNOWN_METHODS else "other"


#: Statuses the service answers, each reported under its own code; others by their class.
KNOWN_STATUSES = frozenset(
    {200, 202, 204, 400, 401, 403, 404, 405, 408, 413, 415, 422, 429, 431, 500, 502, 503, 504}
)


def status_label(status: int) -> str:
    """The response status as a metrics label: a status the service answers, else its class.

    Parameters
    ----------
    status:
        The HTTP status.

    Returns
    -------
    str
        ``"200"``, ``"429"``, ... for the statuses of :data:`KNOWN_STATUSES`; ``"2xx"``,
        ``"3xx"``, ``"4xx"``, ``"5xx"`` (or ``"other"``) for any other, so the label takes a
        closed set of values whatever the app answers.
    """
    if status in KNOWN_STATUSES:
        return str(status)
    if 100 <= status < 600:
        return f"{status // 100}xx"
    return "other"
