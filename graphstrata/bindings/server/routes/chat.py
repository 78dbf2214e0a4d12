"""OpenAI-compatible ``POST /v1/chat/completions`` and ``GET /v1/models``.

``model`` names the index (``NAME``) or the index and a search mode (``NAME:MODE``; the
default mode is ``hybrid`` where the index serves it, else ``naive``). The last user message
is the query (else the last message; cut to ``max_query_chars``); the retrieved nodes, numbered, go into the system prompt and the index's LLM
answers with ``[n]`` markers. Extension fields: ``budget_tokens`` and ``top_k`` in the
request; ``citations`` (``{marker, doc_id, node_id, kind, score}``) on the response and on
the last chunk of a stream. ``stream: true`` answers server-sent events of
``chat.completion.chunk`` objects ending with ``data: [DONE]``; the streamed content is the
non-streamed content, piece by piece.

No ``from __future__ import annotations`` (see :mod:`graphstrata.bindings.server.routes.retrieve`).
"""

import time
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from graphstrata.bindings.api import Answer, stream_pieces
from graphstrata.bindings.server.auth import Guard, TokenTable
from graphstrata.bindings.server.errors import ApiError, error_responses
from graphstrata.bindings.server.events import SSE_SCHEMA, sse, until_disconnect
from graphstrata.bindings.server.jsonbody import JSONRoute
from graphstrata.bindings.server.models import Citation, Models, integral
from graphstrata.bindings.server.routes.retrieve import RETRIEVE_ERRORS
from graphstrata.bindings.server.runtime import Service

#: Preferred default search modes of a chat model that names no mode, best first.
DEFAULT_MODES = ("hybrid", "naive")


#: Non-blank text (the schema says so, so schema-valid requests are never refused for it).
NON_BLANK = r"\S"


def Bounded(low: int, high: int) -> Any:
    """An integer as JSON Schema defines it (``5`` or ``5.0``) in ``[low, high]``; never a
    boolean or a string (strict: ``false`` is not 0)."""
    return Annotated[int, Field(ge=low, le=high, strict=True), BeforeValidator(integral)]


class TextPart(BaseModel):
    """One part of a message's content list (only text parts are read)."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["text"]
    text: str = Field(pattern=NON_BLANK)


class ChatMessage(BaseModel):
    """One chat message."""

    model_config = ConfigDict(extra="forbid")
    role: Literal["system", "developer", "user", "assistant"]
    content: (
        Annotated[str, Field(pattern=NON_BLANK)]
        | Annotated[list[TextPart], Field(min_length=1, max_length=16)]
    )
    name: str | None = None

    def text(self) -> str:
        """The message's text (text parts joined by newlines)."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content)


class StreamOptions(BaseModel):
    """``stream_options`` (``include_usage`` adds a usage chunk before ``[DONE]``)."""

    model_config = ConfigDict(extra="forbid")
    include_usage: bool = False


class ChatRequest(BaseModel):
    """The request of the chat completions API (sampling options are accepted and ignored:
    the answer comes from the index's LLM backend)."""

    model_config = ConfigDict(extra="forbid")
    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: Bounded(1, 4096) | None = None  # type: ignore[valid-type]
    max_completion_tokens: Bounded(1, 4096) | None = None  # type: ignore[valid-type]
    n: Bounded(1, 1) | None = None  # type: ignore[valid-type]
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    seed: Bounded(-(2**63), 2**63 - 1) | None = None  # type: ignore[valid-type]
    stop: str | list[str] | None = None
    user: str | None = None
    budget_tokens: Bounded(1, 2**53) | None = None  # type: ignore[valid-type]
    top_k: Bounded(1, 2**53) | None = None  # type: ignore[valid-type]


class ChatResponseMessage(BaseModel):
    role: Literal["assistant"]
    content: str


class ChatChoice(BaseModel):
    index: int
    message: ChatResponseMessage
    finish_reason: str


class ChatUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatResponse(BaseModel):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[ChatChoice]
    usage: ChatUsage
    citations: list[Citation]


class ModelOut(BaseModel):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str


class ModelList(BaseModel):
    object: Literal["list"]
    data: list[ModelOut]


def default_mode(modes: list[str] | dict[str, Any]) -> str:
    """The mode a chat model without ``:MODE`` searches with."""
    for mode in DEFAULT_MODES:
        if mode in modes:
            return mode
    return sorted(modes)[0]


def model_ids(services: dict[str, Service]) -> list[str]:
    """``NAME`` and ``NAME:MODE`` for every served index and every mode it serves."""
    out: list[str] = []
    for name, service in services.items():
        out += [name, *(f"{name}:{m}" for m in sorted(service.index.modes))]
    return out


def resolve_model(
    services: dict[str, Service], model: str, readable: dict[str, Service] | None = None
) -> tuple[Service, str]:
    """The index and the search mode of ``model`` (``NAME`` or ``NAME:MODE``).

    Parameters
    ----------
    services:
        Every served index.
    model:
        The requested model.
    readable:
        The indexes the caller may read (default: all): the only ones an error names, so a
        token scoped to one index never learns the others.

    Raises
    ------
    ApiError
        404 ``not_found`` for an index not served, 400 ``mode_unavailable`` for a mode not
        served by the index.
    """
    name, sep, mode = model.partition(":")
    service = services.get(name)
    if service is None:
        shown = model_ids(services if readable is None else readable)
        raise ApiError(404, "not_found", f"model {model!r} does not exist; served: {shown}")
    if not sep:
        return service, default_mode(service.index.modes)
    service.check_mode(mode)
    return service, mode


def router(
    services: dict[str, Service], models: Models, guard: Guard, tokens: TokenTable
) -> APIRouter:
    """The chat completion and model list routes of one app.

    Parameters
    ----------
    services:
        Index name -> its service, the first one first.
    models:
        The first index's request/response models (for the error model).
    guard:
        The bearer-token guard.
    tokens:
        The service's tokens: a chat needs the ``read`` right on the model's index, and the
        model list shows only the indexes the caller may read.

    Returns
    -------
    APIRouter
        The routes, to include in the app.
    """
    api = APIRouter(dependencies=guard.dependencies, route_class=JSONRoute)
    errors = error_responses(404, *RETRIEVE_ERRORS, *guard.statuses, model=models.ErrorOut)
    first = next(iter(services.values()))
    settings = first.settings
    max_chars = settings.max_query_chars
    # The schema is open to anyone: it names the models only when no token is required.
    enum_extra: dict[str, Any] = {} if tokens else {"enum": model_ids(services)}

    class AppChatRequest(ChatRequest):
        """The chat request of this app: ``model`` among the served ones, bounded extras."""

        model: str = Field(json_schema_extra=enum_extra)
        budget_tokens: Bounded(1, settings.max_budget_tokens) | None = None  # type: ignore[valid-type]
        top_k: Bounded(1, settings.max_top_k) | None = None  # type: ignore[valid-type]

    def readable_by(request: Request) -> dict[str, Service]:
        """The indexes the request's token may read (all of them without tokens)."""
        scope = tokens.scope_of_header(request.headers.get("authorization"))
        return {
            name: s
            for name, s in services.items()
            if not tokens or (scope is not None and scope.allows(name, "read"))
        }

    @api.get(
        "/v1/models",
        summary="The served indexes and their modes, as chat models",
        response_model=ModelList,
        responses=error_responses(*guard.statuses, model=models.ErrorOut),
    )
    async def list_models(request: Request) -> Response:
        readable = readable_by(request)
        created = int(first.started)
        data = [
            {"id": m, "object": "model", "created": created, "owned_by": "graphstrata"}
            for m in model_ids(readable)
        ]
        return JSONResponse({"object": "list", "data": data})

    @api.post(
        "/v1/chat/completions",
        summary="OpenAI-compatible chat completion grounded in the index (citations added)",
        response_model=ChatResponse,
        responses={
            **errors,
            200: {
                "description": "The completion, or (``stream: true``) server-sent "
                "``chat.completion.chunk`` events ending with ``data: [DONE]``",
                "content": {"text/event-stream": {"schema": SSE_SCHEMA}},
            },
        },
    )
    async def chat_completions(body: AppChatRequest, request: Request) -> Response:
        name = body.model.partition(":")[0]
        if name in services:  # the right first: a mode error lists the index's modes
            tokens.require(request.headers.get("authorization"), name, "read")
        service, mode = resolve_model(services, body.model, readable_by(request))
        users = [i for i, m in enumerate(body.messages) if m.role == "user"]
        last = users[-1] if users else len(body.messages) - 1
        # The query: the last user message (else the last message), cut to the query limit.
        question = body.messages[last].text()[:max_chars]
        service.check_query(question)
        history = [
            (m.role, m.text()) for m in body.messages[:last] if m.role in ("user", "assistant")
        ]
        max_tokens = body.max_completion_tokens or body.max_tokens or 256
        async with service.slots.hold():
            start = time.perf_counter()
            result = await service.runner.retrieve(
                question, mode, body.budget_tokens, body.top_k, {}
            )
            answer = await service.runner.run_answer(
                service.index.answer_result, question, result, history, max_tokens
            )
            service.metrics.query_seconds.labels(f"chat:{mode}").observe(
                time.perf_counter() - start
            )
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        if body.stream:
            include_usage = bool(body.stream_options and body.stream_options.include_usage)
            return StreamingResponse(
                until_disconnect(chunks(completion_id, created, body.model, answer, include_usage)),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache"},
            )
        return JSONResponse(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": created,
                "model": body.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer.text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": answer.usage,
                "citations": answer.citations,
            }
        )

    return api


async def chunks(
    completion_id: str, created: int, model: str, answer: Answer, include_usage: bool
) -> AsyncIterator[bytes]:
    """The server-sent events of a streamed completion.

    A first chunk with the assistant role, one chunk per word piece of the answer, a last
    chunk with ``finish_reason: "stop"`` and the ``citations``, a usage chunk when asked
    (``stream_options.include_usage``), then ``data: [DONE]``.
    """

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        return sse(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra,
            }
        )

    yield chunk({"role": "assistant", "content": ""})
    for piece in stream_pieces(answer.text):
        yield chunk({"content": piece})
    yield chunk({}, "stop", citations=answer.citations)
    if include_usage:
        yield sse(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": answer.usage,
            }
        )
    yield sse("[DONE]")
