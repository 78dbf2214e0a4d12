"""``POST /v1/answer``: retrieve, then answer with the index's LLM (``Index.answer``: the
retrieved nodes numbered, the answer citing them as ``[n]``, with ``citations``).

``?stream=true`` answers server-sent events instead: ``{"delta": "..."}`` pieces whose
concatenation is the answer, then one ``{"done": true, ...}`` event with the whole answer
body (nodes, report, answer), then ``data: [DONE]``.

No ``from __future__ import annotations`` (see :mod:`graphstrata.bindings.server.routes.retrieve`).
"""

import time
from collections.abc import AsyncIterator
from typing import Annotated, Any, cast

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response, StreamingResponse

from graphstrata.bindings.api import stream_pieces
from graphstrata.bindings.server.auth import Guard
from graphstrata.bindings.server.errors import error_responses
from graphstrata.bindings.server.events import SSE_SCHEMA, sse, until_disconnect
from graphstrata.bindings.server.jsonbody import JSONRoute
from graphstrata.bindings.server.models import Models, RetrieveFields
from graphstrata.bindings.server.routes.retrieve import RETRIEVE_ERRORS
from graphstrata.bindings.server.runtime import Service


def router(
    service: Service, models: Models, guard: Guard, base: str = "/v1", listed: bool = True
) -> APIRouter:
    """The answer route of one app (parameters as for :func:`.retrieve.router`)."""
    api = APIRouter(
        dependencies=guard.dependencies, route_class=JSONRoute, include_in_schema=listed
    )
    RetrieveRequest = models.RetrieveRequest

    @api.post(
        f"{base}/answer",
        summary="Retrieve, then answer with the configured LLM",
        response_model=models.AnswerResponse,
        responses={
            **error_responses(*RETRIEVE_ERRORS, *guard.statuses, model=models.ErrorOut),
            200: {
                "description": "The answer, or (``?stream=true``) server-sent events",
                "content": {"text/event-stream": {"schema": SSE_SCHEMA}},
            },
        },
    )
    async def answer(
        request: RetrieveRequest,  # type: ignore[valid-type]
        # Not in the OpenAPI document: a query flag that switches the media type (see the
        # module's docstring and the 200 response's text/event-stream content).
        stream: Annotated[bool, Query(include_in_schema=False)] = False,
    ) -> Response:
        body = cast(RetrieveFields, request)
        service.check_mode(body.mode)
        service.check_query(body.query)
        params = service.with_filter(service.check_params(body.mode, body.params), body.filter)
        async with service.slots.hold():
            start = time.perf_counter()
            result = await service.runner.run_answer(
                service.index.answer,
                body.query,
                body.mode,
                body.budget_tokens,
                top_k=body.top_k,
                **params,
            )
            service.metrics.query_seconds.labels(f"answer:{body.mode}").observe(
                time.perf_counter() - start
            )
        service.runner.account([result])
        if stream:
            return StreamingResponse(
                until_disconnect(events(result.to_dict())),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache"},
            )
        return JSONResponse(result.to_dict())

    return api


async def events(body: dict[str, Any]) -> AsyncIterator[bytes]:
    """The server-sent events of a streamed answer (see the module's docstring)."""
    for piece in stream_pieces(body.get("answer") or ""):
        yield sse({"delta": piece})
    yield sse({"done": True, **body})
    yield sse("[DONE]")
