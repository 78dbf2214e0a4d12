"""``GET /metrics`` and ``GET /v1/indexes/{name}/metrics``: Prometheus metrics, each per-index
series labelled with its ``index`` (:mod:`graphstrata.bindings.server.metrics`).

``/metrics`` shows the series of every served index the caller's token may read (all of them
without tokens); ``/v1/indexes/{name}/metrics`` those of that index. The app-wide series
(HTTP requests, the query-vector cache's size) are in both.

No ``from __future__ import annotations`` (see :mod:`graphstrata.bindings.server.routes.retrieve`).
"""

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from graphstrata.bindings.server.auth import Guard, TokenTable
from graphstrata.bindings.server.errors import error_responses
from graphstrata.bindings.server.jsonbody import JSONRoute
from graphstrata.bindings.server.metrics import exposition
from graphstrata.bindings.server.models import Models
from graphstrata.bindings.server.runtime import Service


def router(
    services: dict[str, Service], models: Models, guard: Guard, tokens: TokenTable
) -> APIRouter:
    """The metrics routes of one app.

    Parameters
    ----------
    services:
        Index name -> its service, the first one first.
    models:
        The first index's models (for the error model).
    guard:
        The bearer-token guard.
    tokens:
        The service's tokens: ``/metrics`` shows the indexes the caller may read.
    """
    api = APIRouter(dependencies=guard.dependencies, route_class=JSONRoute)
    errors = error_responses(*guard.statuses, model=models.ErrorOut)
    first = next(iter(services.values()))

    def render(shown: list[Service]) -> Response:
        for service in shown:
            service.metrics.observe_index(service.index)
            service.metrics.pending_operations.set(service.writer.pending)
        first.metrics.query_cache_entries.set(len(first.runner.cache))
        body = exposition(first.metrics.registry, [s.name for s in shown])
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    @api.get("/metrics", summary="Prometheus metrics", response_class=Response, responses=errors)
    async def all_metrics(request: Request) -> Response:
        scope = tokens.scope_of_header(request.headers.get("authorization"))
        shown = [
            s
            for name, s in services.items()
            if not tokens or (scope is not None and scope.allows(name, "read"))
        ]
        return render(shown)

    def of(service: Service) -> Callable[[], Awaitable[Response]]:
        async def one() -> Response:
            return render([service])

        return one

    for name, service in services.items():
        api.add_api_route(
            f"/v1/indexes/{name}/metrics",
            of(service),
            methods=["GET"],
            response_class=Response,
            include_in_schema=False,
            summary="Prometheus metrics of one index",
        )
    return api
