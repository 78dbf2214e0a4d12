"""OpenAI-compatible ``POST /v1/chat/completions`` and ``GET /v1/models`` (docs/guide/openai.md).

``model`` names the index (``NAME``) or the index and a search mode (``NAME:MODE``; the
default mode is ``hybrid`` where the index serves it, else ``naive``). The request is
:class:`~graphstrata.bindings.server.chat_request.ChatRequest` (every OpenAI member accepted;
what cannot be honoured is a 400). The search query is the conversation's
(``conversation_query``: the last user message completed from the earlier user turns); the
retrieved nodes, numbered, go into the one answer prompt with the earlier turns, and the
index's LLM answers with ``[n]`` markers. The content ends with a ``Sources:`` footer of the
cited references (``"sources": false`` leaves it out); ``citations`` on the response (and on
the last chunk of a stream) lists the cited nodes only, and the ``X-Graphstrata-Citations``
header carries them in short (LangChain keeps headers with ``include_response_headers``).
Extension fields: ``budget_tokens``, ``top_k``, ``sources``. ``stream: true`` answers
server-sent events of ``chat.completion.chunk`` objects ending with ``data: [DONE]``; the
streamed content is the non-streamed content, piece by piece. Errors are in OpenAI's shape
(:mod:`graphstrata.bindings.server.dialects`).

No ``from __future__ import annotations`` (see :mod:`graphstrata.bindings.server.routes.retrieve`).
"""

import json
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field

from graphstrata.bindings.api import citations, conversation_query, sources_footer, stream_pieces
from graphstrata.bindings.server.auth import Guard, TokenTable
from graphstrata.bindings.server.chat_request import (
    ChatRequest,
    Integer,
    conversation,
    cut_at_stop,
    refuse_unsupported,
)
from graphstrata.bindings.server.errors import ApiError, error_responses
from graphstrata.bindings.server.events import SSE_SCHEMA, sse, until_disconnect
from graphstrata.bindings.server.jsonbody import JSONRoute
from graphstrata.bindings.server.models import Citation, Models, OpenAIErrorOut
from graphstrata.bindings.server.routes.retrieve import RETRIEVE_ERRORS
from graphstrata.bindings.server.runtime import Service

#: Preferred default search modes of a chat model that names no mode, best first.
DEFAULT_MODES = ("hybrid", "naive")
#: Largest ``X-Graphstrata-Citations`` header (HTTP clients cap a response's head near
#: 16 KiB; the whole citations are in the body).
MAX_HEADER_BYTES = 8192


class ChatResponseMessage(BaseModel):
    role: Literal["assistant"]
    content: str
    refusal: None = None


class ChatChoice(BaseModel):
    index: int
    message: ChatResponseMessage
    logprobs: None = None
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
        404 ``model_not_found`` for an index not served, 400 ``mode_unavailable`` for a mode
        not served by the index.
    """
    name, sep, mode = model.partition(":")
    service = services.get(name)
    if service is None:
        shown = model_ids(services if readable is None else readable)
        raise ApiError(
            404,
            "model_not_found",
            f"model {model!r} does not exist; served: {shown}",
            param="model",
        )
    if not sep:
        return service, default_mode(service.index.modes)
    service.check_mode(mode)
    return service, mode


def readable_by(
    services: dict[str, Service], tokens: TokenTable, request: Request
) -> dict[str, Service]:
    """The indexes the request's token may read (all of them without tokens)."""
    scope = tokens.scope_of_header(request.headers.get("authorization"))
    return {
        name: s
        for name, s in services.items()
        if not tokens or (scope is not None and scope.allows(name, "read"))
    }


def model_service(
    services: dict[str, Service], tokens: TokenTable, request: Request, model: str
) -> tuple[Service, str]:
    """The index and mode of a chat ``model`` the caller may read (:func:`resolve_model`).

    Raises
    ------
    ApiError
        403 when the token may not read the index (checked first, so a mode error lists the
        index's modes only to a reader), 404 and 400 as :func:`resolve_model`.
    """
    name = model.partition(":")[0]
    if name in services:
        tokens.require(request.headers.get("authorization"), name, "read")
    return resolve_model(services, model, readable_by(services, tokens, request))


@dataclass
class Reply:
    """A grounded chat reply: its content, the citations of its markers and the usage."""

    content: str
    citations: list[dict[str, Any]]
    usage: dict[str, int]


async def grounded_reply(
    service: Service,
    mode: str,
    question: str,
    history: list[tuple[str, str]],
    *,
    max_tokens: int,
    budget_tokens: int | None = None,
    top_k: int | None = None,
    stops: Sequence[str] = (),
    sources: bool = True,
    kind: str = "chat",
) -> Reply:
    """Search with the conversation, answer with the index's LLM, cite (chat and Ollama).

    Parameters
    ----------
    service, mode:
        The index and the search mode.
    question, history:
        The last user message and the earlier turns (``chat_request.conversation``).
    max_tokens:
        The completion limit.
    budget_tokens, top_k:
        The retrieval's (None: the index's).
    stops:
        Stop sequences: the answer ends before the first one.
    sources:
        Append the ``Sources:`` footer of the cited references.
    kind:
        The metrics label prefix (``chat``, ``ollama``).

    Returns
    -------
    Reply
        The content (answer, then the footer), the citations of the markers it holds.
    """
    query = conversation_query(question, history, service.settings.max_query_chars)
    service.check_query(query)
    async with service.slots.hold():
        start = time.perf_counter()
        result = await service.runner.retrieve(query, mode, budget_tokens, top_k, {})
        answer = await service.runner.run_answer(
            service.index.answer_result, question, result, history, max_tokens, query
        )
        service.metrics.query_seconds.labels(f"{kind}:{mode}").observe(time.perf_counter() - start)
    text = cut_at_stop(answer.text, list(stops))
    cited = answer.citations if text == answer.text else citations(result.nodes, text)
    footer = sources_footer(cited) if sources else ""
    return Reply(text + footer, cited, answer.usage)


def citations_header(cited: list[dict[str, Any]]) -> str:
    """The citations in short for the ``X-Graphstrata-Citations`` header: a JSON list of
    ``{marker, doc_id, node_id, title, pages}`` in ASCII, as many as fit in
    :data:`MAX_HEADER_BYTES`."""
    short: list[dict[str, Any]] = []
    for c in cited:
        pages = sorted({sp["page"] for sp in c["spans"] if sp.get("page") is not None})
        item = {k: c[k] for k in ("marker", "doc_id", "node_id", "title")} | {"pages": pages}
        if len(json.dumps([*short, item])) > MAX_HEADER_BYTES:
            break
        short.append(item)
    return json.dumps(short)


def router(
    services: dict[str, Service], models: Models, guard: Guard, tokens: TokenTable
) -> APIRouter:
    """The chat completion and model list routes of one app.

    Parameters
    ----------
    services:
        Index name -> its service, the first one first.
    models:
        The first index's request/response models.
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
    statuses = sorted({400, 404, *RETRIEVE_ERRORS, *guard.statuses} - {422})
    errors = error_responses(*statuses, model=OpenAIErrorOut)
    first = next(iter(services.values()))
    settings = first.settings
    max_chars = settings.max_query_chars
    # The schema is open to anyone: it names the models only when no token is required.
    enum_extra: dict[str, Any] = {} if tokens else {"enum": model_ids(services)}

    class AppChatRequest(ChatRequest):
        """The chat request of this app: ``model`` among the served ones, bounded extras."""

        model: str = Field(json_schema_extra=enum_extra)
        budget_tokens: Integer(1, settings.max_budget_tokens) | None = None  # type: ignore[valid-type]
        top_k: Integer(1, settings.max_top_k) | None = None  # type: ignore[valid-type]

    @api.get(
        "/v1/models",
        summary="The served indexes and their modes, as chat models",
        response_model=ModelList,
        responses=error_responses(*guard.statuses, model=OpenAIErrorOut),
    )
    async def list_models(request: Request) -> Response:
        readable = readable_by(services, tokens, request)
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
        service, mode = model_service(services, tokens, request, body.model)
        refuse_unsupported(body)
        question, history = conversation(body.messages, max_chars)
        reply = await grounded_reply(
            service,
            mode,
            question,
            history,
            max_tokens=body.completion_limit(),
            budget_tokens=body.budget_tokens,
            top_k=body.top_k,
            stops=body.stop_sequences(),
            sources=body.sources,
        )
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        headers = {"X-Graphstrata-Citations": citations_header(reply.citations)}
        if body.stream:
            include_usage = bool(body.stream_options and body.stream_options.include_usage)
            return StreamingResponse(
                until_disconnect(chunks(completion_id, created, body.model, reply, include_usage)),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", **headers},
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
                        "message": {"role": "assistant", "content": reply.content, "refusal": None},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": reply.usage,
                "citations": reply.citations,
            },
            headers=headers,
        )

    return api


async def chunks(
    completion_id: str, created: int, model: str, reply: Reply, include_usage: bool
) -> AsyncIterator[bytes]:
    """The server-sent events of a streamed completion.

    A first chunk with the assistant role, one chunk per word piece of the content, a last
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
    for piece in stream_pieces(reply.content):
        yield chunk({"content": piece})
    yield chunk({}, "stop", citations=reply.citations)
    if include_usage:
        yield sse(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": reply.usage,
            }
        )
    yield sse("[DONE]")
