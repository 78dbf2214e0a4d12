"""``GET /v1/nodes/{id}/neighbourhood`` and ``GET /v1/texts/{doc_id}``: read routes of the
web page (a node's edges in the heterograph and its chain up the hierarchy; a document's
text, reassembled from its chunks).

No ``from __future__ import annotations`` (see :mod:`graphstrata.bindings.server.routes.retrieve`).
"""

import asyncio
import re
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from graphstrata.bindings.server.auth import Guard
from graphstrata.bindings.server.errors import ApiError, error_responses
from graphstrata.bindings.server.jsonbody import JSONRoute
from graphstrata.bindings.server.models import Models
from graphstrata.bindings.server.runtime import Service
from graphstrata.engine.types import NodeKind

#: Longest text of a node in a neighbourhood (the node itself is given whole).
PREVIEW_CHARS = 300
#: A node id in a path (any other string names no node: 404).
NODE_ID = re.compile(r"^[0-9]{1,18}$")


def neighbourhood(service: Service, node_id: int, limit: int) -> dict[str, Any] | None:
    """The node, its heaviest ``limit`` edges with their other ends, and its hierarchy chain.

    Returns
    -------
    dict or None
        ``{"node", "edges", "neighbours", "chain"}``, or None when the node is not live.
    """
    state = service.engine.state
    snap = state.snapshot
    nodes = snap.nodes
    if not bool(nodes.contains([node_id])[0]):
        return None
    names = state.doc_names

    def describe(nid: int, full: bool = False) -> dict[str, Any]:
        row = int(nodes.rows([nid])[0])
        text = nodes.texts[row]
        return {
            "id": int(nid),
            "kind": NodeKind(int(nodes.kind[row])).letter,
            "layer": int(nodes.layer[row]),
            "text": text if full else text[:PREVIEW_CHARS],
            "docs": names(nodes.docs[row]),
        }

    edges = snap.edges
    src = edges.column("src").to_numpy()
    dst = edges.column("dst").to_numpy()
    touching = np.flatnonzero((src == node_id) | (dst == node_id))
    weights = edges.column("weight").to_numpy()
    touching = touching[np.argsort(-weights[touching], kind="stable")][:limit]
    kinds = edges.column("kind").to_numpy()
    out_edges, others = [], []
    for e in touching:
        a, b = int(src[e]), int(dst[e])
        out_edges.append(
            {"src": a, "dst": b, "kind": int(kinds[e]), "weight": round(float(weights[e]), 6)}
        )
        other = b if a == node_id else a
        if other not in others and bool(nodes.contains([other])[0]):
            others.append(other)
    chain, seen = [], {node_id}
    parent = int(nodes.parent[int(nodes.rows([node_id])[0])])
    while parent >= 0 and parent not in seen and bool(nodes.contains([parent])[0]):
        seen.add(parent)
        chain.append(describe(parent))
        parent = int(nodes.parent[int(nodes.rows([parent])[0])])
    return {
        "node": describe(node_id, full=True),
        "edges": out_edges,
        "neighbours": [describe(o) for o in others],
        "chain": chain,
    }


def document_text(service: Service, doc_id: str) -> dict[str, Any] | None:
    """A document's title and text (its chunks in order), or None when it is not present."""
    state = service.engine.state
    snap = state.snapshot
    docs = snap.docs
    keys = docs.column("key").to_pylist()
    ids = docs.column("doc_id").to_pylist()
    if doc_id not in ids:
        return None
    row = ids.index(doc_id)
    key = keys[row]
    nodes = snap.nodes
    chunk_ids = nodes.ids_of_kind(int(NodeKind.T))
    chunk_rows = nodes.rows(chunk_ids)
    texts = [nodes.texts[r] for r in chunk_rows if key in nodes.docs[r]]
    return {
        "doc_id": doc_id,
        "title": docs.column("title")[row].as_py() or "",
        "chunks": len(texts),
        "text": "\n\n".join(texts),
    }


def router(
    service: Service, models: Models, guard: Guard, base: str = "/v1", listed: bool = True
) -> APIRouter:
    """The node and text read routes of one index (parameters as for :func:`.retrieve.router`;
    ``base`` is where they go, ``listed`` whether the OpenAPI document lists them)."""
    api = APIRouter(
        dependencies=guard.dependencies, route_class=JSONRoute, include_in_schema=listed
    )
    errors = error_responses(404, 422, *guard.statuses, model=models.ErrorOut)
    # ``limit`` (1..500, default 50: the heaviest edges kept) is left out of the OpenAPI
    # document; a bad value is a 422.

    @api.get(
        f"{base}/nodes/{{node_id}}/neighbourhood",
        summary="A node's heterograph edges and neighbours, and its chain up the hierarchy",
        responses=errors,
    )
    async def get_neighbourhood(
        node_id: str,
        limit: Annotated[int, Query(ge=1, le=500, include_in_schema=False)] = 50,
    ) -> Response:
        if not NODE_ID.match(node_id):
            raise ApiError(404, "not_found", f"no node {node_id!r} in this version")
        loop = asyncio.get_running_loop()
        data = await loop.run_in_executor(None, neighbourhood, service, int(node_id), limit)
        if data is None:
            raise ApiError(404, "not_found", f"no node {node_id} in this version")
        return JSONResponse(data)

    @api.get(
        f"{base}/texts/{{doc_id:path}}",
        summary="A document's text, reassembled from its chunks",
        responses=error_responses(404, *guard.statuses, model=models.ErrorOut),
    )
    async def get_text(doc_id: str) -> Response:
        loop = asyncio.get_running_loop()
        data = await loop.run_in_executor(None, document_text, service, doc_id)
        if data is None:
            raise ApiError(404, "not_found", f"document {doc_id!r} is not in the index")
        return JSONResponse(data)

    return api
