"""``GET /v1/indexes``: the served indexes (those the caller may read), with their stats and
the caller's ``rights`` on each (the web page hides write controls from a read-only token)."""

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from graphstrata.bindings.server.auth import RIGHTS, Guard, TokenTable
from graphstrata.bindings.server.errors import error_responses
from graphstrata.bindings.server.jsonbody import JSONRoute
from graphstrata.bindings.server.models import Models
from graphstrata.bindings.server.runtime import Service


def router(
    services: dict[str, Service], models: Models, guard: Guard, tokens: TokenTable
) -> APIRouter:
    """The index list of one app (parameters as for :func:`.chat.router`)."""
    api = APIRouter(dependencies=guard.dependencies, route_class=JSONRoute)

    @api.get(
        "/v1/indexes",
        summary="The served indexes, with their statistics and routes",
        responses=error_responses(*guard.statuses, model=models.ErrorOut),
    )
    async def list_indexes(request: Request) -> Response:
        scope = tokens.scope_of_header(request.headers.get("authorization"))

        def collect() -> list[dict[str, Any]]:
            out = []
            for i, (name, service) in enumerate(services.items()):
                if tokens and (scope is None or not scope.allows(name, "read")):
                    continue
                stats = service.stats()
                out.append(
                    {
                        "name": name,
                        "default": i == 0,
                        "base": f"/v1/indexes/{name}",
                        "modes": sorted(service.index.modes),
                        "rights": sorted(
                            r for r in RIGHTS if not tokens or (scope and scope.allows(name, r))
                        ),
                        **stats,
                    }
                )
            return out

        data = await asyncio.get_running_loop().run_in_executor(None, collect)
        return JSONResponse({"indexes": data})

    return api
