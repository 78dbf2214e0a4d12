"""``POST /v1/vector_stores/{index}/search``: OpenAI's vector-store search over a served index
(docs/guide/openai.md), the shape LiteLLM and Azure implement.

The vector store is the index (its name); a file is a document (``file_id`` = its
``doc_id``). The request: ``query`` (a string, or a list of strings searched as one query),
``max_num_results`` (1 to 50, default 10), ``filters`` (OpenAI's comparison and compound
filters, translated by :mod:`graphstrata.bindings.server.openai_filters`),
``ranking_options.score_threshold`` (results scoring below it are dropped; the ranker is
the index's default search mode, ``hybrid`` where served), ``rewrite_query`` (ignored: the
query is searched as given). The answer: ``{"object": "vector_store.search_results.page",
"search_query", "data": [{"file_id", "filename", "score", "attributes", "content": [{"type":
"text", "text"}]}], "has_more": false, "next_page": null}``, one result per retrieved node and
document, best first. Errors are in OpenAI's shape.

No ``from __future__ import annotations`` (see :mod:`graphstrata.bindings.server.routes.retrieve`).
"""

from typing import Annotated, Any, Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from graphstrata.bindings.api import QueryResult
from graphstrata.bindings.server.auth import Guard
from graphstrata.bindings.server.chat_request import Integer
from graphstrata.bindings.server.errors import ApiError, error_responses
from graphstrata.bindings.server.jsonbody import JSONRoute
from graphstrata.bindings.server.models import OpenAIErrorOut
from graphstrata.bindings.server.openai_filters import translate
from graphstrata.bindings.server.routes.chat import default_mode
from graphstrata.bindings.server.routes.retrieve import RETRIEVE_ERRORS
from graphstrata.bindings.server.runtime import Service

#: Attribute values OpenAI allows (strings, numbers, booleans).
Attribute = str | float | bool


class RankingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ranker: Literal["none", "auto", "default-2024-11-15"] | None = None
    score_threshold: float | None = Field(default=None, ge=0, le=1)


class VectorStoreSearch(BaseModel):
    """The request of OpenAI's vector-store search."""

    model_config = ConfigDict(extra="forbid")
    query: str | Annotated[list[str], Field(min_length=1, max_length=16)]
    max_num_results: Integer(1, 50) = 10  # type: ignore[valid-type]
    filters: dict[str, Any] | None = None
    ranking_options: RankingOptions | None = None
    rewrite_query: bool = False

    def text(self) -> str:
        """The query to search (a list's strings joined by spaces)."""
        return self.query if isinstance(self.query, str) else " ".join(self.query)


class SearchContent(BaseModel):
    type: Literal["text"]
    text: str


class SearchResult(BaseModel):
    file_id: str
    filename: str
    score: float
    attributes: dict[str, Attribute]
    content: list[SearchContent]


class SearchPage(BaseModel):
    object: Literal["vector_store.search_results.page"]
    search_query: str | list[str]
    data: list[SearchResult]
    has_more: bool
    next_page: str | None


def results(result: QueryResult, limit: int, threshold: float | None) -> list[dict[str, Any]]:
    """The search results of a retrieval: one per node and document, best first.

    Parameters
    ----------
    result:
        The retrieval.
    limit:
        ``max_num_results``.
    threshold:
        ``score_threshold`` (None: keep all).

    Returns
    -------
    list of dict
        OpenAI's result objects; ``filename`` is the document's title (its id without one),
        ``attributes`` its metadata values that are strings, numbers or booleans.
    """
    out: list[dict[str, Any]] = []
    for hit in result.nodes:
        if threshold is not None and hit.score < threshold:
            continue
        # Hit.documents (aligned with docs) is the metadata branch's contract.
        about = dict(zip(hit.docs, hit.documents, strict=False))
        for doc in hit.docs:
            info = about.get(doc) or {}
            metadata = info.get("metadata") or {}
            out.append(
                {
                    "file_id": doc,
                    "filename": info.get("title") or doc,
                    "score": round(float(hit.score), 6),
                    "attributes": {
                        k: v for k, v in metadata.items() if isinstance(v, str | int | float)
                    },
                    "content": [{"type": "text", "text": hit.text}],
                }
            )
            if len(out) == limit:
                return out
    return out


def router(services: dict[str, Service], guard: Guard) -> APIRouter:
    """The vector-store search route over the served indexes."""
    api = APIRouter(dependencies=guard.dependencies, route_class=JSONRoute)
    statuses = sorted({400, 404, *RETRIEVE_ERRORS, *guard.statuses} - {422})

    @api.post(
        "/v1/vector_stores/{vector_store_id}/search",
        summary="OpenAI-compatible vector store search (the store is an index)",
        response_model=SearchPage,
        responses=error_responses(*statuses, model=OpenAIErrorOut),
    )
    async def search(vector_store_id: str, body: VectorStoreSearch) -> Response:
        service = services.get(vector_store_id)
        if service is None:
            raise ApiError(
                404,
                "not_found",
                f"vector store {vector_store_id!r} does not exist",
                param="vector_store_id",
            )
        text = body.text()[: service.settings.max_query_chars]
        service.check_query(text)
        mode = default_mode(service.index.modes)
        async with service.slots.hold():
            if body.filters is None:
                result = await service.runner.retrieve(text, mode, None, None, {})
            else:
                engine_filter = translate(body.filters)
                result = await service.runner.run(
                    service.index.query, text, mode, filter=engine_filter
                )
                service.runner.account([result])
        threshold = body.ranking_options.score_threshold if body.ranking_options else None
        return JSONResponse(
            {
                "object": "vector_store.search_results.page",
                "search_query": body.query,
                "data": results(result, body.max_num_results, threshold),
                "has_more": False,
                "next_page": None,
            }
        )

    return api
