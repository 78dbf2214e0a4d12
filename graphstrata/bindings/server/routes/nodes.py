"""``GET /v1/nodes/{id}/neighbourhood``, ``GET /v1/nodes?q=`` and ``GET /v1/texts/{doc_id}``:
read routes of the web page (a node's edges in the heterograph and its chain up the hierarchy,
and with a ``query`` the walk of that ``graph`` query around the node; entities and
communities found by name; a document's text, reassembled from its chunks). Every node carries
a ``label``: the words a drawing shows for it (:func:`node_label`).

No ``from __future__ import annotations`` (see :mod:`graphstrata.bindings.server.routes.retrieve`).
"""

import asyncio
import re
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from graphstrata.bindings.api import EdgeKind, NodeKind, PinnedVersion
from graphstrata.bindings.server.auth import Guard
from graphstrata.bindings.server.errors import ApiError, error_responses
from graphstrata.bindings.server.jsonbody import JSONRoute, parse_json
from graphstrata.bindings.server.models import Models
from graphstrata.bindings.server.runtime import Service

#: Longest text of a node in a neighbourhood (the node itself is given whole).
PREVIEW_CHARS = 300
#: A node id in a path (any other string names no node: 404).
NODE_ID = re.compile(r"^[0-9]{1,18}$")
#: Longest label of a node (cut at a word, with an ellipsis).
LABEL_CHARS = 48
#: Words of a relationship's phrase kept in its label (its two ends are kept whole).
RELATION_WORDS = 3
#: What ``GET /v1/nodes?q=`` searches: entity names and element titles (a title stands for
#: its element, the community it names).
LOOKUP_KINDS = (int(NodeKind.N), int(NodeKind.O))
#: Longest name ``GET /v1/nodes?q=`` looks for: a name, not a question; short enough that the
#: encoded URL of any such string (12 bytes per character at worst) stays under the server's
#: header limit, so a long one is a 422, never a 431.
LOOKUP_CHARS = 200
_TITLE_EDGE = (int(EdgeKind.ELEMENT_TITLE),)
_EDGE_KINDS = frozenset(int(k) for k in EdgeKind)


def title_of(pinned: PinnedVersion, node_id: int) -> int | None:
    """The other end of the node's element-title edge (an element's title, a title's
    element), or None."""
    for edge in pinned.heaviest_edges(node_id, 1, kinds=_TITLE_EDGE):
        other = edge["dst"] if edge["src"] == node_id else edge["src"]
        if pinned.is_live(other):
            return int(other)
    return None


def node_label(pinned: PinnedVersion, node: Mapping[str, Any]) -> str:
    """The words that name a node in a drawing: an entity's name, an element's title, an
    attribute's entity, else the first words of the node's first line (a chunk's heading)."""
    text = node["text"]
    if node["kind"] == "H":
        title = title_of(pinned, node["id"])
        if title is not None:
            text = pinned.node(title)["text"]
    elif node["kind"] == "A":  # "Entity: summary"
        text = text.split(":", 1)[0]
    first = " ".join(text.strip().lstrip("#").strip().split("\n", 1)[0].split())
    if node["kind"] == "R":  # "Source — relation words — target": both ends, the relation cut
        ends = first.split(" — ")
        if len(ends) == 3:
            words = ends[1].split()
            relation = " ".join(words[:RELATION_WORDS]) + (
                "…" if len(words) > RELATION_WORDS else ""
            )
            first = f"{ends[0]} — {relation} — {ends[2]}"
    if len(first) <= LABEL_CHARS:
        return first
    return first[: LABEL_CHARS - 1].rsplit(" ", 1)[0] + "…"


def neighbourhood(
    pinned: PinnedVersion, node_id: int, limit: int, kinds: list[int] | None = None
) -> dict[str, Any] | None:
    """The node, its heaviest ``limit`` edges (of ``kinds`` when given) with their other ends,
    and its hierarchy chain.

    Returns
    -------
    dict or None
        ``{"node", "edges", "neighbours", "chain"}``, or None when the node is not live.
    """
    if not pinned.is_live(node_id):
        return None
    out_edges = pinned.heaviest_edges(node_id, limit, kinds)
    others: list[int] = []
    for edge in out_edges:
        a, b = edge["src"], edge["dst"]
        other = b if a == node_id else a
        if other not in others and pinned.is_live(other):
            others.append(other)
    chain, seen = [], {node_id}
    parent = pinned.parent(node_id)
    while parent >= 0 and parent not in seen and pinned.is_live(parent):
        seen.add(parent)
        chain.append(describe_node(pinned, parent))
        parent = pinned.parent(parent)
    return {
        "node": describe_node(pinned, node_id, full=True),
        "edges": out_edges,
        "neighbours": [describe_node(pinned, o) for o in others],
        "chain": chain,
    }


def walk_around(
    pinned: PinnedVersion, node_id: int, trace: Mapping[str, Any], shown: set[int]
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
    live = [n for n in ends if pinned.is_live(n)]
    return {
        "entry_points": list(trace.get("entry_points", [])),
        "edges": picked,
        "nodes": [describe_node(pinned, n) for n in live],
    }


def describe_node(pinned: PinnedVersion, nid: int, full: bool = False) -> dict[str, Any]:
    """A live node's id, kind letter, layer, label, text (a preview unless ``full``) and
    docs."""
    node = pinned.node(nid)
    node["label"] = node_label(pinned, node)
    if not full:
        node["text"] = node["text"][:PREVIEW_CHARS]
    return node


def lookup(pinned: PinnedVersion, text: str, limit: int) -> list[dict[str, Any]]:
    """Entities whose name and elements whose title contain ``text`` (best matches first,
    see ``PinnedVersion.find_nodes``), described as in a neighbourhood."""
    out: list[dict[str, Any]] = []
    seen: set[int] = set()
    for nid in pinned.find_nodes(text, LOOKUP_KINDS, limit):
        found: int | None = nid
        if pinned.node(nid)["kind"] == "O":
            found = title_of(pinned, nid)
        if found is not None and found not in seen:
            seen.add(found)
            out.append(describe_node(pinned, found))
    return out


def edge_kinds(raw: list[int] | None) -> list[int] | None:
    """The ``kind`` filter of a neighbourhood: known ``EdgeKind`` values (422 otherwise)."""
    if raw is None:
        return None
    unknown = sorted(set(raw) - _EDGE_KINDS)
    if unknown:
        raise ApiError(422, "bad_request", f"unknown edge kind(s) {unknown[:10]}")
    return raw


def graph_params(service: Service, raw: str | None) -> dict[str, Any]:
    """The ``params`` query string of a traced ``graph`` query: a JSON object, checked as
    the retrieve route checks it, with ``trace`` on (422 for anything else)."""
    values = parse_json(raw, "params") if raw else {}
    if not isinstance(values, dict):
        raise ApiError(422, "bad_request", "params must be a JSON object")
    return service.check_params("graph", {**values, "trace": True})


def document_text(pinned: PinnedVersion, doc_id: str) -> dict[str, Any] | None:
    """A document's title and text (its chunks in order), or None when it is not present."""
    found = pinned.document_text(doc_id)
    if found is None:
        return None
    return {
        "doc_id": doc_id,
        "title": found["title"],
        "chunks": len(found["chunks"]),
        "chunk_ids": found["chunk_ids"],
        "text": "\n\n".join(found["chunks"]),
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
    # retrieve route's checks, slots and limits); ``kind`` (repeated: only edges of these
    # ``EdgeKind`` values, e.g. 5 and 6 for a community's members and title). The name lookup
    # (``q``: 1..200 characters, ``limit``: 1..100, default 20) is left out whole: a listed
    # string parameter is fuzzed with repeated values, which FastAPI reads as the last one,
    # and a listed route whose parameters are hidden is called without its required ``q``.
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
        kind: Annotated[list[int] | None, Query(max_length=16, **hidden)] = None,
    ) -> Response:
        if not NODE_ID.match(node_id):
            raise ApiError(404, "not_found", f"no node {node_id!r} in this version")
        kinds = edge_kinds(kind)
        if query is not None:  # bad input fails before any work
            service.check_mode("graph")
            service.check_query(query)
            checked = graph_params(service, params)
        loop = asyncio.get_running_loop()
        pinned = service.index.pinned()
        data = await loop.run_in_executor(None, neighbourhood, pinned, int(node_id), limit, kinds)
        if data is None:
            raise ApiError(404, "not_found", f"no node {node_id} in this version")
        if query is not None:
            async with service.slots.hold():
                result = await service.runner.retrieve(query, "graph", budget_tokens, None, checked)
            shown = {data["node"]["id"], *(m["id"] for m in data["neighbours"])}
            walk = walk_around(pinned, int(node_id), result.report["trace"], shown)
            returned = {h.id: h.to_dict()["score"] for h in result.nodes}
            walk.update(
                query=query,
                version=int(result.report.get("version", service.index.version)),
                retrieved=int(node_id) in returned,
                score=returned.get(int(node_id)),
            )
            data["walk"] = walk
        return JSONResponse(data)

    @api.get(
        f"{base}/nodes",
        summary="Entities and communities found by name (the web page's search box)",
        responses=errors,
        include_in_schema=False,
    )
    async def find_nodes(
        q: Annotated[str, Query(min_length=1, max_length=LOOKUP_CHARS)],
        limit: Annotated[int, Query(ge=1, le=100)] = 20,
    ) -> Response:
        loop = asyncio.get_running_loop()
        found = await loop.run_in_executor(None, lookup, service.index.pinned(), q, limit)
        return JSONResponse({"nodes": found})

    @api.get(
        f"{base}/texts/{{doc_id:path}}",
        summary="A document's text, reassembled from its chunks",
        responses=error_responses(404, *guard.statuses, model=models.ErrorOut),
    )
    async def get_text(doc_id: str) -> Response:
        loop = asyncio.get_running_loop()
        data = await loop.run_in_executor(None, document_text, service.index.pinned(), doc_id)
        if data is None:
            raise ApiError(404, "not_found", f"document {doc_id!r} is not in the index")
        return JSONResponse(data)

    return api
