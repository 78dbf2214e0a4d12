"""Ollama's API over the served indexes (docs/guide/clients.md): ``GET /api/tags``,
``GET /api/version``, ``POST /api/show``, ``POST /api/chat``, ``POST /api/generate``.

Desktop clients and Open WebUI connect to "an Ollama server"; here each index is a model,
``NAME:latest`` (its default mode, as the chat API's ``NAME``) and ``NAME:MODE`` for each mode
it serves. A chat searches with the conversation and answers as ``/v1/chat/completions``
does (one grounded answer path, ``[n]`` markers, the ``Sources:`` footer unless
``"sources": false``; ``citations`` on the final object). ``stream`` defaults to true, as in
Ollama: newline-delimited JSON objects, one per word piece, then a final one with
``done: true``, ``done_reason``, the durations (nanoseconds) and the token counts. Options
read: ``num_predict`` (completion limit) and ``stop``; a structured ``format`` cannot be
honoured (400); other options, ``keep_alive``, ``think``, ``images`` and ``tools`` are
ignored. Tokens as for the other routes (``Authorization: Bearer``, which Ollama clients send
through their ``headers``); errors in Ollama's shape, ``{"error": "..."}``
(:mod:`graphstrata.bindings.server.dialects`).

No ``from __future__ import annotations`` (see :mod:`graphstrata.bindings.server.routes.retrieve`).
"""

import hashlib
import json
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from graphstrata.bindings.api import stream_pieces
from graphstrata.bindings.server.auth import Guard, TokenTable
from graphstrata.bindings.server.chat_request import (
    MAX_COMPLETION_TOKENS,
    ChatMessage,
    conversation,
)
from graphstrata.bindings.server.errors import ApiError
from graphstrata.bindings.server.events import until_disconnect
from graphstrata.bindings.server.jsonbody import JSONRoute
from graphstrata.bindings.server.routes.chat import (
    Reply,
    grounded_reply,
    model_service,
    readable_by,
)
from graphstrata.bindings.server.runtime import Service

#: The tag of an index's default mode.
LATEST = "latest"
#: Completion limit when ``options.num_predict`` is not given.
DEFAULT_PREDICT = 256


class OllamaOptions(BaseModel):
    """``options``: ``num_predict`` and ``stop`` are read, the sampling options ignored."""

    model_config = ConfigDict(extra="allow")
    num_predict: int | None = None
    stop: list[str] | None = None


class OllamaRequest(BaseModel):
    """What ``/api/chat`` and ``/api/generate`` share."""

    model_config = ConfigDict(extra="allow")
    model: str
    stream: bool = True
    format: str | dict[str, Any] | None = None
    options: OllamaOptions | None = None
    sources: bool = Field(default=True, description="Append the 'Sources:' footer.")

    def limit(self) -> int:
        """The completion limit (``num_predict``; -1 and absent: the default)."""
        asked = self.options.num_predict if self.options else None
        if asked is None or asked <= 0:
            return DEFAULT_PREDICT
        return min(asked, MAX_COMPLETION_TOKENS)


class OllamaChatRequest(OllamaRequest):
    messages: list[ChatMessage] = Field(min_length=1)


class OllamaGenerateRequest(OllamaRequest):
    prompt: str = ""
    system: str | None = None


class ShowRequest(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str | None = None
    name: str | None = None


def tags(services: dict[str, Service]) -> list[str]:
    """``NAME:latest`` and ``NAME:MODE`` for every index and mode, as Ollama names models."""
    out: list[str] = []
    for name, service in services.items():
        out += [f"{name}:{LATEST}", *(f"{name}:{m}" for m in sorted(service.index.modes))]
    return out


def chat_model(model: str) -> str:
    """An Ollama model name as the chat API's: ``NAME:latest`` and ``NAME`` are ``NAME``."""
    name, _, tag = model.partition(":")
    return name if tag in ("", LATEST) else model


def details() -> dict[str, Any]:
    """The ``details`` of a model (an index has no parameters or quantisation)."""
    return {
        "parent_model": "",
        "format": "graphstrata",
        "family": "graphstrata",
        "families": ["graphstrata"],
        "parameter_size": "",
        "quantization_level": "",
    }


def now() -> str:
    """The time as Ollama writes ``created_at`` (RFC 3339, UTC)."""
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def router(services: dict[str, Service], guard: Guard, tokens: TokenTable) -> APIRouter:
    """Ollama's routes over the served indexes.

    Parameters
    ----------
    services:
        Index name -> its service.
    guard:
        The bearer-token guard.
    tokens:
        The service's tokens: a chat needs ``read`` on the model's index; the model list
        shows the indexes the caller may read.

    Returns
    -------
    APIRouter
        The routes (not in the OpenAPI document: they follow Ollama's API, not this one's).
    """
    api = APIRouter(dependencies=guard.dependencies, route_class=JSONRoute, include_in_schema=False)
    max_chars = next(iter(services.values())).settings.max_query_chars

    def resolve(request: Request, model: str) -> tuple[Service, str]:
        if not model:
            raise ApiError(400, "bad_request", "model is required")
        return model_service(services, tokens, request, chat_model(model))

    @api.get("/api/version")
    async def version() -> Response:
        from graphstrata import __version__

        return JSONResponse({"version": __version__})

    @api.get("/api/tags")
    async def list_tags(request: Request) -> Response:
        readable = readable_by(services, tokens, request)
        models = []
        for tag in tags(readable):
            service = readable[tag.partition(":")[0]]
            modified = datetime.fromtimestamp(service.started, UTC).isoformat()
            models.append(
                {
                    "name": tag,
                    "model": tag,
                    "modified_at": modified,
                    "size": 0,
                    "digest": hashlib.sha256(f"{tag}@{service.index.version}".encode()).hexdigest(),
                    "details": details(),
                }
            )
        return JSONResponse({"models": models})

    @api.post("/api/show")
    async def show(body: ShowRequest, request: Request) -> Response:
        service, mode = resolve(request, body.model or body.name or "")
        info = {
            "general.architecture": "graphstrata",
            "graphstrata.index": service.name,
            "graphstrata.mode": mode,
            "graphstrata.version": service.index.version,
        }
        return JSONResponse(
            {
                "modelfile": "",
                "parameters": "",
                "template": "",
                "details": details(),
                "model_info": info,
                "capabilities": ["completion"],
            }
        )

    def answer_of(request: Request, body: OllamaRequest) -> tuple[Service, str]:
        service, mode = resolve(request, body.model)
        if body.format:
            raise ApiError(400, "bad_request", "format is not supported: the answer is text")
        return service, mode

    @api.post("/api/chat")
    async def chat(body: OllamaChatRequest, request: Request) -> Response:
        service, mode = answer_of(request, body)
        question, history = conversation(body.messages, max_chars)
        return await respond(body, service, mode, question, history, chat_object)

    @api.post("/api/generate")
    async def generate(body: OllamaGenerateRequest, request: Request) -> Response:
        service, mode = answer_of(request, body)
        if not body.prompt.strip():
            # Ollama answers an empty prompt by loading the model: nothing to load here.
            return JSONResponse(
                {"model": body.model, "created_at": now(), "response": "", "done": True}
                | {"done_reason": "load"}
            )
        return await respond(body, service, mode, body.prompt[:max_chars], [], generate_object)

    return api


Shape = Callable[[str, str, str], dict[str, Any]]


def chat_object(model: str, created: str, piece: str) -> dict[str, Any]:
    """One object of a chat answer, holding ``piece`` of the assistant's message."""
    return {
        "model": model,
        "created_at": created,
        "message": {"role": "assistant", "content": piece},
        "done": False,
    }


def generate_object(model: str, created: str, piece: str) -> dict[str, Any]:
    """One object of a generated answer, holding ``piece`` of the response."""
    return {"model": model, "created_at": created, "response": piece, "done": False}


async def respond(
    body: OllamaRequest,
    service: Service,
    mode: str,
    question: str,
    history: list[tuple[str, str]],
    shape: Shape,
) -> Response:
    """Answer as Ollama does: one object (``stream: false``) or NDJSON pieces then the end."""
    start = time.perf_counter_ns()
    reply = await grounded_reply(
        service,
        mode,
        question,
        history,
        max_tokens=body.limit(),
        stops=(body.options.stop or []) if body.options else [],
        sources=body.sources,
        kind="ollama",
    )
    total = time.perf_counter_ns() - start
    created = now()
    end = final(reply, total, shape is generate_object)
    if not body.stream:
        return JSONResponse(shape(body.model, created, reply.content) | end)
    return StreamingResponse(
        until_disconnect(pieces(body.model, created, reply, shape, end)),
        media_type="application/x-ndjson",
    )


def final(reply: Reply, total_ns: int, generated: bool) -> dict[str, Any]:
    """The members of the last object: done, why, durations, token counts, citations."""
    out: dict[str, Any] = {
        "done": True,
        "done_reason": "stop",
        "total_duration": total_ns,
        "load_duration": 0,
        "prompt_eval_count": reply.usage["prompt_tokens"],
        "prompt_eval_duration": 0,
        "eval_count": reply.usage["completion_tokens"],
        "eval_duration": total_ns,
        "citations": reply.citations,
    }
    if generated:
        out["context"] = []
    return out


async def pieces(
    model: str, created: str, reply: Reply, shape: Shape, end: dict[str, Any]
) -> AsyncIterator[bytes]:
    """The NDJSON lines of a streamed answer: its pieces, then the final object."""
    for piece in stream_pieces(reply.content):
        yield (json.dumps(shape(model, created, piece), ensure_ascii=False) + "\n").encode()
    yield (json.dumps(shape(model, created, "") | end, ensure_ascii=False) + "\n").encode()
