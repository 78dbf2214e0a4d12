"""Where a framework retriever's results come from: an ``Index`` in this process, or a
``graphstrata serve`` over HTTP; and the metadata each result carries.

Both sources take the same options (:class:`SearchOptions`) and return the hits as the HTTP
API's JSON (``QueryResult.to_dict()["nodes"]``), so the LangChain and LlamaIndex retrievers
build their objects from one shape whatever the source.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from graphstrata.bindings.api import Index


class RetrievalError(RuntimeError):
    """The service refused or failed a retrieval; the message has its status and code."""


def query_kwargs(params: dict[str, Any], filter: dict[str, Any] | None) -> dict[str, Any]:
    """The keyword arguments of ``Index.query``/``answer``: the mode's ``params``, plus
    ``filter`` only when one was given (an index without filter support then refuses it as
    an unknown parameter instead of silently ignoring it)."""
    return params if filter is None else {**params, "filter": filter}


@dataclass(frozen=True)
class SearchOptions:
    """The options of every retrieval of a retriever (those of ``POST /v1/retrieve``).

    Attributes
    ----------
    mode:
        The search mode.
    budget_tokens, top_k:
        Token budget and vector candidates per kind (None: the index's defaults).
    params:
        The mode's parameters.
    filter:
        A metadata filter (the filter syntax of ``Index.query``), or None.
    """

    mode: str = "naive"
    budget_tokens: int | None = None
    top_k: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    filter: dict[str, Any] | None = None

    def body(self, query: str) -> dict[str, Any]:
        """The JSON body of ``POST /v1/retrieve`` for ``query`` (unset members left out)."""
        out: dict[str, Any] = {"query": query, "mode": self.mode}
        if self.budget_tokens is not None:
            out["budget_tokens"] = self.budget_tokens
        if self.top_k is not None:
            out["top_k"] = self.top_k
        if self.params:
            out["params"] = self.params
        if self.filter is not None:
            out["filter"] = self.filter
        return out


class Source(Protocol):
    """Retrieves the hits of one query."""

    def retrieve(self, query: str, options: SearchOptions) -> list[dict[str, Any]]:
        """The hits, best first (``QueryResult.to_dict()["nodes"]``)."""
        ...

    async def aretrieve(self, query: str, options: SearchOptions) -> list[dict[str, Any]]:
        """:meth:`retrieve` for an event loop."""
        ...


class LocalSource:
    """Hits from an :class:`Index` opened in this process (``Index.query``).

    Parameters
    ----------
    index:
        The open index.
    """

    def __init__(self, index: Index):
        self.index = index

    def retrieve(self, query: str, options: SearchOptions) -> list[dict[str, Any]]:
        result = self.index.query(
            query,
            options.mode,
            options.budget_tokens,
            options.top_k,
            **query_kwargs(options.params, options.filter),
        )
        return list(result.to_dict()["nodes"])

    async def aretrieve(self, query: str, options: SearchOptions) -> list[dict[str, Any]]:
        # The engine's search is blocking work: a worker thread keeps the loop free.
        return await asyncio.to_thread(self.retrieve, query, options)


class HttpSource:
    """Hits from a ``graphstrata serve`` (``POST /v1/retrieve``).

    Parameters
    ----------
    url:
        The service's base URL (``http://127.0.0.1:8000``).
    token:
        Its bearer token (the read right is enough), or None for an open service.
    index:
        A served index's name (``/v1/indexes/{index}/retrieve``), or None for the default.
    timeout:
        Seconds per request.
    """

    def __init__(
        self, url: str, token: str | None = None, index: str | None = None, timeout: float = 60.0
    ):
        base = url.rstrip("/")
        self.endpoint = (
            f"{base}/v1/retrieve" if index is None else (f"{base}/v1/indexes/{index}/retrieve")
        )
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.timeout = timeout

    def retrieve(self, query: str, options: SearchOptions) -> list[dict[str, Any]]:
        response = httpx.post(
            self.endpoint, json=options.body(query), headers=self.headers, timeout=self.timeout
        )
        return _hits(response)

    async def aretrieve(self, query: str, options: SearchOptions) -> list[dict[str, Any]]:
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            response = await client.post(
                self.endpoint, json=options.body(query), headers=self.headers
            )
        return _hits(response)


def _hits(response: httpx.Response) -> list[dict[str, Any]]:
    """The hits of a retrieval's response, or :class:`RetrievalError` with its error."""
    if response.status_code != 200:
        try:
            error = response.json()["error"]
            detail = f"{error['code']}: {error['message']}"
        except (ValueError, KeyError, TypeError):
            detail = response.text[:200]
        raise RetrievalError(f"{response.request.url}: HTTP {response.status_code} {detail}")
    return list(response.json()["nodes"])


def make_source(
    index: Index | None = None,
    url: str | None = None,
    token: str | None = None,
    index_name: str | None = None,
    timeout: float = 60.0,
) -> Source:
    """The source of a retriever: exactly one of ``index`` and ``url``.

    Raises
    ------
    ValueError
        When neither or both are given.
    """
    if (index is None) == (url is None):
        raise ValueError("give either index (an open graphstrata Index) or url (a service)")
    if index is not None:
        return LocalSource(index)
    assert url is not None
    return HttpSource(url, token, index_name, timeout)


#: Hit members that are not metadata (the text is the content; the id is ``node_id``).
_NOT_METADATA = ("text", "id")


def hit_metadata(hit: dict[str, Any]) -> dict[str, Any]:
    """A hit's metadata for a framework's document or node.

    Parameters
    ----------
    hit:
        One hit of ``QueryResult.to_dict()["nodes"]``.

    Returns
    -------
    dict
        ``node_id``, ``score``, ``kind``, ``layer``, ``tokens``, ``docs`` (the cited document
        ids), ``documents`` (their titles and metadata) and ``spans`` (where in them the text
        is) when the hit has them, and ``source``: the first cited document (LangChain's
        conventional key).
    """
    meta = {"node_id": hit["id"], **{k: v for k, v in hit.items() if k not in _NOT_METADATA}}
    docs = hit.get("docs") or []
    if docs:
        meta["source"] = docs[0]
    return meta
