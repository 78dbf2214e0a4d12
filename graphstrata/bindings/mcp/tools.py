"""The MCP tools of graphstrata, on the official SDK's ``MCPServer`` (``mcp`` 2.x).

``build_server(backend)`` registers the tools over a :class:`~.backend.Backend`; the same
server serves stdio (``graphstrata mcp``, :mod:`.stdio`) and streamable HTTP (``/mcp`` of
``graphstrata serve``). Tools:

- ``search``: retrieve a context in any mode (``budget_tokens``, ``top_k``, the mode's
  ``params``, a metadata ``filter``); each result carries its text, score, kind, node id,
  documents (and their titles, metadata and source spans where the index records them);
- ``answer``: retrieve, then answer with the index's LLM, citing the results as ``[n]``;
- ``list_documents`` / ``get_document``: the documents resource;
- ``insert_documents`` / ``delete_document``: writes (absent from a read-only server);
- ``list_indexes`` / ``stats``.

A refused or failed call is a tool error (``isError``) whose text starts with the HTTP API's
stable code (``forbidden: this token has no write right on index 'a'``), so a model can read
it and a program can match it.

No ``from __future__ import annotations``: the SDK reads the tools' signatures (the
``Context`` parameter, the argument schemas) from their evaluated annotations.
"""

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from graphstrata.bindings.extras import require
from graphstrata.bindings.mcp.backend import Backend, ToolFailure

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
else:
    _sdk = require("mcp.server.mcpserver", "mcp", "the MCP server")
    Context, MCPServer = _sdk.Context, _sdk.MCPServer
    ToolError = require("mcp.server.mcpserver.exceptions", "mcp", "the MCP server").ToolError
    types = require("mcp_types", "mcp", "the MCP server")

#: The name the server gives in its MCP ``initialize`` answer.
SERVER_NAME = "graphstrata"

INSTRUCTIONS = (
    "Graph retrieval over document indexes. Use `search` to find passages (cite their "
    "`docs`), `answer` for a grounded answer with [n] citations, `list_documents` and "
    "`get_document` to browse, `list_indexes` for the indexes and their search modes."
)

#: Largest ``wait_seconds`` a write tool accepts.
MAX_WAIT_S = 600.0


class DocumentInput(BaseModel):
    """One document to insert (the JSON documents of ``POST /v1/documents``)."""

    model_config = ConfigDict(extra="forbid")

    doc_id: str = Field(min_length=1, description="The document's id (an update replaces it)")
    text: str = Field(description="The document's text")
    title: str | None = Field(default=None, description="Its title")
    metadata: dict[str, Any] | None = Field(default=None, description="Its metadata")


Index = Annotated[
    str | None, Field(description="The index name (default: the server's first index)")
]
Mode = Annotated[
    str,
    Field(
        description="Search mode: naive, bm25, hybrid, collapsed, detailed, summarized or "
        "graph, as the index serves them (list_indexes names them)"
    ),
]
Budget = Annotated[int | None, Field(ge=1, description="Token budget of the retrieved context")]
TopK = Annotated[int | None, Field(ge=1, description="Vector candidates per node kind")]
Params = Annotated[
    dict[str, Any] | None,
    Field(description='The mode\'s parameters, e.g. {"bias_share": 0.5} for detailed'),
]
Filter = Annotated[
    dict[str, Any] | None,
    Field(
        description='Metadata filter: {field: value} or {field: {"$gte": 2020}}; operators '
        "$eq $ne $in $nin $gt $gte $lt $lte, combined with $and / $or; fields are metadata "
        "names, doc_id or title"
    ),
]
Wait = Annotated[
    float,
    Field(ge=0, le=MAX_WAIT_S, description="Seconds to wait for a queued write to finish"),
]


@contextlib.contextmanager
def _root_logging_untouched() -> Iterator[None]:
    """Keep ``MCPServer`` from configuring the process's root logger.

    Its constructor calls ``logging.basicConfig`` (a rich or stream handler at INFO on the
    root logger), which would change every log line of ``graphstrata serve``; basicConfig does
    nothing while the root logger has a handler, so one is there while the server is built.
    """
    root = logging.getLogger()
    placeholder = logging.NullHandler()
    root.addHandler(placeholder)
    try:
        yield
    finally:
        root.removeHandler(placeholder)


def _caller(ctx: Context) -> str | None:
    """The ``Authorization`` header of the HTTP request that carried this call (None on
    stdio)."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None)
    return None if headers is None else headers.get("authorization")


def build_server(backend: Backend, name: str = SERVER_NAME) -> "MCPServer[Any]":
    """The MCP server whose tools call ``backend`` (see the module's docstring).

    Parameters
    ----------
    backend:
        Where the work happens and who may do it (:class:`~.backend.LocalBackend` or the
        HTTP service's); without ``backend.writes`` the write tools are not offered.
    name:
        The server's name in its ``initialize`` answer.

    Returns
    -------
    MCPServer
        Run it with ``run_stdio_async()`` or serve ``streamable_http_app()``.
    """
    with _root_logging_untouched():
        server: MCPServer[Any] = MCPServer(name, instructions=INSTRUCTIONS, log_level="WARNING")
    reads = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writes = types.ToolAnnotations(read_only_hint=False, destructive_hint=True)

    async def call(coro: Any) -> Any:
        try:
            return await coro
        except ToolFailure as exc:
            raise ToolError(str(exc)) from exc

    @server.tool(annotations=reads)
    async def search(
        query: Annotated[str, Field(min_length=1, description="The question or keywords")],
        ctx: Context,
        mode: Mode = "naive",
        budget_tokens: Budget = None,
        top_k: TopK = None,
        params: Params = None,
        filter: Filter = None,
        index: Index = None,
    ) -> dict[str, Any]:
        """Retrieve the passages, entities, relations and summaries relevant to a query.

        Returns the results best first, each with its text, score, node kind (T chunk,
        S semantic unit, N entity, R relationship, A attribute, H high-level element,
        L summary), node id and the documents it comes from.
        """
        result = await call(
            backend.search(
                _caller(ctx), index, query, mode, budget_tokens, top_k, params or {}, filter
            )
        )
        return {"index": result["index"], "mode": mode, "results": result["nodes"]}

    @server.tool(annotations=reads)
    async def answer(
        query: Annotated[str, Field(min_length=1, description="The question")],
        ctx: Context,
        mode: Mode = "naive",
        budget_tokens: Budget = None,
        top_k: TopK = None,
        params: Params = None,
        filter: Filter = None,
        max_tokens: Annotated[int, Field(ge=1, le=8192, description="Answer length")] = 256,
        index: Index = None,
    ) -> dict[str, Any]:
        """Answer a question from the index with its LLM, citing the retrieved results as
        [1], [2], ...; returns the answer, its citations and the retrieved results."""
        result = await call(
            backend.answer(
                _caller(ctx),
                index,
                query,
                mode,
                budget_tokens,
                top_k,
                params or {},
                filter,
                max_tokens,
            )
        )
        return {
            "index": result["index"],
            "mode": mode,
            "answer": result.get("answer"),
            "citations": result.get("citations", []),
            "results": result["nodes"],
        }

    @server.tool(annotations=reads)
    async def list_documents(
        ctx: Context,
        offset: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int, Field(ge=1, le=1000)] = 50,
        query: Annotated[str | None, Field(description="Text the title or id contains")] = None,
        filter: Filter = None,
        index: Index = None,
    ) -> dict[str, Any]:
        """A page of the index's documents: id, title, metadata, status, chunks, version."""
        return dict(
            await call(backend.documents(_caller(ctx), index, offset, limit, query, filter))
        )

    @server.tool(annotations=reads)
    async def get_document(
        doc_id: Annotated[str, Field(min_length=1)], ctx: Context, index: Index = None
    ) -> dict[str, Any]:
        """One document's id, title, metadata, status, chunk count, version and source."""
        return dict(await call(backend.document(_caller(ctx), index, doc_id)))

    @server.tool(annotations=reads)
    async def list_indexes(ctx: Context) -> dict[str, Any]:
        """The indexes this server serves to the caller, with their search modes."""
        return {"indexes": await call(backend.indexes(_caller(ctx)))}

    @server.tool(annotations=reads)
    async def stats(ctx: Context, index: Index = None) -> dict[str, Any]:
        """The index's statistics: documents, nodes per kind, edges, version, backends."""
        return dict(await call(backend.stats(_caller(ctx), index)))

    if backend.writes:

        @server.tool(annotations=writes)
        async def insert_documents(
            documents: Annotated[list[DocumentInput], Field(min_length=1)],
            ctx: Context,
            wait_seconds: Wait = 30.0,
            index: Index = None,
        ) -> dict[str, Any]:
            """Insert or update documents (an unchanged document is a no-op). Returns the
            operation's status: succeeded, failed, or queued/running if it did not finish
            within wait_seconds."""
            docs = [d.model_dump(exclude_none=True) for d in documents]
            return dict(await call(backend.insert(_caller(ctx), index, docs, wait_seconds)))

        @server.tool(annotations=writes)
        async def delete_document(
            doc_id: Annotated[str, Field(min_length=1)],
            ctx: Context,
            wait_seconds: Wait = 30.0,
            index: Index = None,
        ) -> dict[str, Any]:
            """Delete a document and everything derived from it. Returns the operation's
            status as insert_documents does."""
            return dict(await call(backend.delete(_caller(ctx), index, doc_id, wait_seconds)))

    return server
