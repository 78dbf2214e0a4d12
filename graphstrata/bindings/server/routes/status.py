"""``GET /v1/stats``, ``GET /metrics`` (guarded) and ``GET /healthz`` (open)."""

import asyncio
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from graphstrata.bindings.server.auth import Guard
from graphstrata.bindings.server.errors import error_responses
from graphstrata.bindings.server.jsonbody import JSONRoute
from graphstrata.bindings.server.models import Models
from graphstrata.bindings.server.runtime import Service


def router(
    service: Service, models: Models, guard: Guard, base: str = "/v1", listed: bool = True
) -> APIRouter:
    """The statistics and metrics routes of one app (parameters as for the other routers)."""
    api = APIRouter(
        dependencies=guard.dependencies, route_class=JSONRoute, include_in_schema=listed
    )
    errors = error_responses(*guard.statuses, model=models.ErrorOut)

    @api.get(f"{base}/stats", summary="Index and service statistics", responses=errors)
    async def stats() -> Response:
        data = await asyncio.get_running_loop().run_in_executor(None, service.stats)
        return JSONResponse(data)

    @api.get(
        "/metrics" if base == "/v1" else f"{base}/metrics",
        summary="Prometheus metrics",
        response_class=Response,
        responses=errors,
    )
    async def metrics() -> Response:
        service.metrics.observe_index(service.index)
        service.metrics.pending_operations.set(service.writer.pending)
        service.metrics.query_cache_entries.set(len(service.runner.cache))
        return Response(generate_latest(service.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return api


def health_router(service: Service) -> APIRouter:
    """``GET /healthz``: liveness and the served version, open to load balancers."""
    api = APIRouter()

    @api.get("/healthz", summary="Liveness and the served version")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "version": service.index.version, "modes": service.index.modes}

    return api
