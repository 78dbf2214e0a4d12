"""``POST /v1/retrieve`` and ``POST /v1/retrieve/batch``.

No ``from __future__ import annotations``: the request models are per app (see
:mod:`graphstrata.bindings.server.models`) and FastAPI must resolve the endpoint annotations
to those local classes.
"""

from typing import cast

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from graphstrata.bindings.server.auth import Guard
from graphstrata.bindings.server.errors import ApiError, error_responses
from graphstrata.bindings.server.jsonbody import JSONRoute
from graphstrata.bindings.server.models import BatchRetrieveFields, Models, RetrieveFields
from graphstrata.bindings.server.runtime import Service

#: Errors a retrieval may answer besides validation (502/504: the embedder failed).
RETRIEVE_ERRORS = (400, 413, 422, 429, 502, 504)


def router(
    service: Service, models: Models, guard: Guard, base: str = "/v1", listed: bool = True
) -> APIRouter:
    """The retrieval routes of one app.

    Parameters
    ----------
    service:
        The app's service.
    models:
        The app's request/response models.
    guard:
        The bearer-token guard.
    base:
        The routes' prefix: ``/v1`` (the first index's single-index routes) or
        ``/v1/indexes/{name}``.
    listed:
        Whether the OpenAPI document lists them (the per-index copies are not listed).

    Returns
    -------
    APIRouter
        The routes, to include in the app.
    """
    api = APIRouter(
        dependencies=guard.dependencies, route_class=JSONRoute, include_in_schema=listed
    )
    RetrieveRequest = models.RetrieveRequest
    BatchRetrieveRequest = models.BatchRetrieveRequest
    errors = error_responses(*RETRIEVE_ERRORS, *guard.statuses, model=models.ErrorOut)
    max_chars = service.settings.max_query_chars

    @api.post(
        f"{base}/retrieve",
        summary="Retrieve a context for one query",
        response_model=models.RetrieveResponse,
        responses=errors,
    )
    async def retrieve(request: RetrieveRequest) -> Response:  # type: ignore[valid-type]
        body = cast(RetrieveFields, request)
        service.check_mode(body.mode)
        service.check_query(body.query)
        params = service.with_filter(service.check_params(body.mode, body.params), body.filter)
        async with service.slots.hold():
            result = await service.runner.retrieve(
                body.query, body.mode, body.budget_tokens, body.top_k, params
            )
        return JSONResponse(result.to_dict())

    @api.post(
        f"{base}/retrieve/batch",
        summary="Retrieve for many queries (embedded in one call)",
        response_model=models.BatchRetrieveResponse,
        responses=errors,
    )
    async def retrieve_batch(request: BatchRetrieveRequest) -> Response:  # type: ignore[valid-type]
        body = cast(BatchRetrieveFields, request)
        service.check_mode(body.mode)
        for q in body.queries:
            if len(q) > max_chars:
                raise ApiError(422, "bad_request", f"a query is over {max_chars} characters")
            service.check_query(q)
        params = service.with_filter(service.check_params(body.mode, body.params), body.filter)
        async with service.slots.hold():
            results = await service.runner.run(
                service.runner.query_batch,
                list(body.queries),
                body.mode,
                body.budget_tokens,
                body.top_k,
                params,
            )
        service.metrics.embed_batch_size.observe(len(results))
        return JSONResponse({"results": [r.to_dict() for r in results]})

    return api
