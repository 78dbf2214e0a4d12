"""The walk of a ``graph`` query over HTTP: the trace in ``/v1/retrieve``'s report and the
walk around a node in ``/v1/nodes/{id}/neighbourhood?query=...``, with the read right, the
per-index routes and their single-index aliases (a real server in a subprocess on loopback)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from benchmarks.service.server_process import ServerHandle, server_process

pytestmark = pytest.mark.integration

ADMIN = "admin-token"
READ_A = "read-a-token"
QUESTION = "Who founded Meridian Optics?"


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory, sample_docs, hashing_embedder) -> Iterator[ServerHandle]:
    from graphstrata.bindings.api import Index
    from graphstrata.engine.config import IndexConfig

    root: Path = tmp_path_factory.mktemp("trace-http")
    Index.create(root / "a", embedder=hashing_embedder).insert(sample_docs)
    no_graph = IndexConfig()
    no_graph.heterograph.enabled = False
    Index.create(root / "b", no_graph, embedder=hashing_embedder).insert(sample_docs[:5])
    tokens = tmp_path_factory.mktemp("conf") / "tokens.json"
    tokens.write_text(json.dumps({READ_A: {"indexes": ["a"], "rights": ["read"]}}))
    with server_process(root, ["--token", ADMIN, "--tokens", str(tokens)]) as handle:
        yield handle


def _retrieve(url: str, **params: object) -> dict:
    body = {"query": QUESTION, "mode": "graph", "budget_tokens": 1200, "params": params}
    r = httpx.post(f"{url}/v1/indexes/a/retrieve", json=body, headers=auth(READ_A), timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def test_retrieve_reports_the_trace_only_on_request(served) -> None:
    plain = _retrieve(served.url)
    traced = _retrieve(served.url, trace=True)
    assert "trace" not in plain["report"]
    assert [n["id"] for n in plain["nodes"]] == [n["id"] for n in traced["nodes"]]
    trace = traced["report"]["trace"]
    assert any("exact" in e["match"] for e in trace["entry_points"])
    returned = {n["id"] for n in traced["nodes"]}
    assert {e["dst"] for e in trace["walk_edges"] if e["level"] == 1} <= returned


def test_neighbourhood_adds_the_walk_around_a_returned_node(served) -> None:
    url = served.url
    traced = _retrieve(url, trace=True)
    trace = traced["report"]["trace"]
    into = {}
    for e in trace["walk_edges"]:
        if e["level"] == 1:
            into.setdefault(e["dst"], []).append(e)
    node = next(n for n in traced["nodes"] if n["id"] in into)
    query = {"query": QUESTION, "budget_tokens": 1200, "limit": 24}
    path = f"/nodes/{node['id']}/neighbourhood"
    r = httpx.get(f"{url}/v1/indexes/a{path}", params=query, headers=auth(READ_A), timeout=60)
    assert r.status_code == 200, r.text
    hood = r.json()
    assert {"node", "edges", "neighbours", "chain", "walk"} <= set(hood)
    walk = hood["walk"]
    assert walk["query"] == QUESTION and walk["retrieved"] is True
    assert walk["score"] == pytest.approx(node["score"])
    assert walk["entry_points"] == trace["entry_points"]
    # Every edge that brought the node its mass is there, and the sources' own, one step back.
    assert all(e in walk["edges"] for e in into[node["id"]])
    sources = {e["src"] for e in into[node["id"]]}
    earlier = [e for e in trace["walk_edges"] if e["level"] == 2 and e["dst"] in sources]
    assert all(e in walk["edges"] for e in earlier)
    assert all(e in trace["walk_edges"] for e in walk["edges"])
    described = {hood["node"]["id"], *(m["id"] for m in hood["neighbours"])}
    described |= {m["id"] for m in walk["nodes"]}
    assert {x for e in walk["edges"] for x in (e["src"], e["dst"])} <= described
    assert not {m["id"] for m in walk["nodes"]} & {m["id"] for m in hood["neighbours"]}
    # The single-index route is an alias of the first index's; without a query, no walk.
    alias = httpx.get(f"{url}/v1{path}", params=query, headers=auth(ADMIN), timeout=60).json()
    assert alias["walk"] == walk and alias["edges"] == hood["edges"]
    bare = httpx.get(
        f"{url}/v1/indexes/a{path}", params={"limit": 24}, headers=auth(READ_A), timeout=60
    ).json()
    assert "walk" not in bare and bare["edges"] == hood["edges"]


def test_neighbourhood_walk_checks_its_input_and_rights(served) -> None:
    url = served.url
    node = _retrieve(url)["nodes"][0]["id"]
    path = f"/v1/indexes/a/nodes/{node}/neighbourhood"

    def get(params: dict, token: str | None = READ_A, where: str = path) -> httpx.Response:
        headers = auth(token) if token else {}
        return httpx.get(f"{url}{where}", params=params, headers=headers, timeout=60)

    assert get({"query": QUESTION}, token=None).status_code == 401
    bad = {
        "blank": {"query": "   "},
        "array params": {"query": QUESTION, "params": "[1]"},
        "bad JSON": {"query": QUESTION, "params": "{"},
        "unknown param": {"query": QUESTION, "params": '{"nope": 1}'},
        "ill-typed": {"query": QUESTION, "params": '{"ppr_iters": "2"}'},
        "budget": {"query": QUESTION, "budget_tokens": -1},
    }
    for what, params in bad.items():
        r = get(params)
        assert r.status_code == 422, (what, r.text)
    ok = get({"query": QUESTION, "params": '{"ppr_iters": 1, "trace": false}'})
    assert ok.status_code == 200 and all(e["level"] == 1 for e in ok.json()["walk"]["edges"])
    assert httpx.get(f"{url}/v1/indexes/b/stats", headers=auth(ADMIN)).status_code == 200
    b_path = "/v1/indexes/b/nodes/0/neighbourhood"
    assert get({"query": QUESTION}, token=READ_A, where=b_path).status_code == 403
    r = get({"query": QUESTION}, token=ADMIN, where=b_path)
    assert r.status_code == 400 and r.json()["error"]["code"] == "mode_unavailable"
