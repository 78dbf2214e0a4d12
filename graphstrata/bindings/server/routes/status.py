"""``GET /v1/stats`` (guarded) and ``GET /healthz`` (open); the metrics are
:mod:`.metrics`'s."""

import asyncio
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from graphstrata.bindings.server.auth import Guard
from graphstrata.bindings.server.errors import error_responses
from graphstrata.bindings.server.jsonbody import JSONRoute
from graphstrata.bindings.server.models import Models
from graphstrata.bindings.server.runtime import Service


def router(
    service: Service, models: Models, guard: Guard, base: str = "/v1", listed: bool = True
) -> APIRouter:
    """The statistics route of one app (parameters as for the other routers)."""
    api = APIRouter(
        dependencies=guard.dependencies, route_class=JSONRoute, include_in_schema=listed
    )
    errors = error_responses(*guard.statuses, model=models.ErrorOut)

    @api.get(f"{base}/stats", summary="Index and service statistics", responses=errors)
    async def stats() -> Response:
        data = await asyncio.get_running_loop().run_in_executor(None, service.stats)
        return JSONResponse(data)

    return api


def health_router(service: Service) -> APIRouter:
    """``GET /healthz``: liveness and the served version, open to load balancers."""
    api = APIRouter()

    @api.get("/healthz", summary="Liveness and the served version")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "version": service.index.version, "modes": service.index.modes}

    return api
