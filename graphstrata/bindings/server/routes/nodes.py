"""``GET /v1/nodes/{id}/neighbourhood`` and ``GET /v1/texts/{doc_id}``: read routes of the
web page (a node's edges in the heterograph and its chain up the hierarchy, and with a
``query`` the walk of that ``graph`` query around the node; a document's text, reassembled
from its chunks).

No ``from __future__ import annotations`` (see :mod:`graphstrata.bindings.server.routes.retrieve`).
"""

import asyncio
import re
from collections.abc import Mapping
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from graphstrata.bindings.server.auth import Guard
from graphstrata.bindings.server.errors import ApiError, error_responses
from graphstrata.bindings.server.jsonbody import JSONRoute, parse_json
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

    def describe(nid: int, full: bool = False) -> dict[str, Any]:
        return describe_node(service, nid, full)

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


def walk_around(
    service: Service, node_id: int, trace: Mapping[str, Any], shown: set[int]
) -> dict[str, Any]:
    """The part of a ``graph`` query's trace (``HeterographView.trace``) around one node.

    ``edges`` are the walk edges that brought the node its mass, traced back to the
    entry points (an edge into the node, then the edges into its sources, ...), and those
    that carried its mass on; ``entry_points`` are every entry point of the walk;
    ``nodes`` describes the ends of those edges and the entry points among them that are
    not in ``shown`` (the node and its neighbours), so the page can draw them.
    """
    edges = list(trace.get("walk_edges", []))
    taken = [False] * len(edges)
    frontier, seen = {node_id}, {node_id}
    for _ in range(max((e["level"] for e in edges), default=0)):  # as deep as the trace
        sources = set()
        for i, e in enumerate(edges):
            if not taken[i] and e["dst"] in frontier:
                taken[i] = True
                sources.add(e["src"])
        frontier = sources - seen
        seen |= sources
    for i, e in enumerate(edges):
        taken[i] = taken[i] or e["src"] == node_id
    picked = [e for e, t in zip(edges, taken, strict=True) if t]
    ends = dict.fromkeys(x for e in picked for x in (e["src"], e["dst"]) if x not in shown)
    nodes = service.engine.state.snapshot.nodes
    live = [n for n in ends if bool(nodes.contains([n])[0])]
    return {
        "entry_points": list(trace.get("entry_points", [])),
        "edges": picked,
        "nodes": [describe_node(service, n) for n in live],
    }


def describe_node(service: Service, nid: int, full: bool = False) -> dict[str, Any]:
    """A live node's id, kind letter, layer, text (a preview unless ``full``) and docs."""
    state = service.engine.state
    nodes = state.snapshot.nodes
    row = int(nodes.rows([nid])[0])
    text = nodes.texts[row]
    return {
        "id": int(nid),
        "kind": NodeKind(int(nodes.kind[row])).letter,
        "layer": int(nodes.layer[row]),
        "text": text if full else text[:PREVIEW_CHARS],
        "docs": state.doc_names(nodes.docs[row]),
    }


def graph_params(service: Service, raw: str | None) -> dict[str, Any]:
    """The ``params`` query string of a traced ``graph`` query: a JSON object, checked as
    the retrieve route checks it, with ``trace`` on (422 for anything else)."""
    values = parse_json(raw, "params") if raw else {}
    if not isinstance(values, dict):
        raise ApiError(422, "bad_request", "params must be a JSON object")
    return service.check_params("graph", {**values, "trace": True})


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
    max_chars = service.settings.max_query_chars
    max_budget = service.settings.max_budget_tokens
    # The web page's parameters are left out of the OpenAPI document (a bad value is a 422):
    # ``limit`` (1..500, default 50: the heaviest edges kept), and the ``graph`` query
    # whose walk around the node is added as ``walk`` (``query``, ``budget_tokens``,
    # ``params``: a JSON object of graph parameters; the query runs again, traced, with the
    # retrieve route's checks, slots and limits).
    hidden = {"include_in_schema": False}

    @api.get(
        f"{base}/nodes/{{node_id}}/neighbourhood",
        summary="A node's heterograph edges and neighbours, and its chain up the hierarchy",
        responses=errors,
    )
    async def get_neighbourhood(
        node_id: str,
        limit: Annotated[int, Query(ge=1, le=500, **hidden)] = 50,
        query: Annotated[str | None, Query(max_length=max_chars, **hidden)] = None,
        budget_tokens: Annotated[int | None, Query(ge=0, le=max_budget, **hidden)] = None,
        params: Annotated[str | None, Query(max_length=max_chars, **hidden)] = None,
    ) -> Response:
        if not NODE_ID.match(node_id):
            raise ApiError(404, "not_found", f"no node {node_id!r} in this version")
        if query is not None:  # bad input fails before any work
            service.check_mode("graph")
            service.check_query(query)
            checked = graph_params(service, params)
        loop = asyncio.get_running_loop()
        data = await loop.run_in_executor(None, neighbourhood, service, int(node_id), limit)
        if data is None:
            raise ApiError(404, "not_found", f"no node {node_id} in this version")
        if query is not None:
            async with service.slots.hold():
                result = await service.runner.retrieve(query, "graph", budget_tokens, None, checked)
            shown = {data["node"]["id"], *(m["id"] for m in data["neighbours"])}
            walk = walk_around(service, int(node_id), result.report["trace"], shown)
            returned = {h.id: h.to_dict()["score"] for h in result.nodes}
            walk.update(
                query=query,
                version=int(result.report.get("version", service.engine.version)),
                retrieved=int(node_id) in returned,
                score=returned.get(int(node_id)),
            )
            data["walk"] = walk
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
