"""The HTTP service, end to end: the real server in a subprocess on a loopback port.

Every endpoint, auth on and off, body and query limits, 429 under saturation, and concurrent
document inserts while queries run (no query ever sees a half-committed version). All traffic
goes to 127.0.0.1 with bounded request counts.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.service.server_process import ServerHandle, server_process

pytestmark = pytest.mark.integration

TOKEN = "s3cret-token"
BODY_LIMIT = 65_536


# ---------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def base_index(tmp_path_factory, sample_docs, hashing_embedder) -> Path:
    """The sample corpus, indexed once with the 64-d hashing embedder (copied per server)."""
    from graphstrata.bindings.api import Index

    path = tmp_path_factory.mktemp("server") / "base"
    index = Index.create(path, embedder=hashing_embedder)
    index.insert(sample_docs)
    return path


def copy_index(base: Path, name: str) -> Path:
    dst = base.parent / name
    shutil.copytree(base, dst)
    return dst


@pytest.fixture(scope="module")
def server(base_index) -> Iterator[ServerHandle]:
    """Auth off; small body limit; a 20 ms batching window so concurrent queries batch."""
    args = ["--max-body-bytes", str(BODY_LIMIT), "--microbatch-wait-ms", "20"]
    with server_process(copy_index(base_index, "main"), args) as handle:
        yield handle
    assert "served " in handle.output  # the shutdown report


@pytest.fixture(scope="module")
def guarded(base_index) -> Iterator[ServerHandle]:
    """Token from GRAPHSTRATA_TOKEN; one retrieval slot; one pending document operation."""
    args = ["--max-concurrency", "1", "--max-pending-operations", "1"]
    env = {"GRAPHSTRATA_TOKEN": TOKEN}
    with server_process(copy_index(base_index, "guarded"), args, env=env) as handle:
        yield handle


def client(handle: ServerHandle, token: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=handle.url, headers=headers, timeout=60, trust_env=False)


def error_code(resp: httpx.Response) -> str:
    assert resp.headers["content-type"].startswith("application/json"), resp.text
    return resp.json()["error"]["code"]


def wait_operation(c: httpx.Client, op_id: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        op = c.get(f"/v1/operations/{op_id}").json()
        if op["status"] in ("succeeded", "failed", "cancelled"):
            return op
        time.sleep(0.05)
    raise AssertionError(f"operation {op_id} did not finish")


# ---------------------------------------------------------------------------- reads
@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_everything_from_the_server(server, guarded, page):
    """Offline: the pages name no other host, and each file they load is served here (open
    without a token, as /openapi.json is)."""
    for handle in (server, guarded):
        with client(handle) as c:
            html = c.get(page)
            assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
            assert "//" not in html.text.replace("<!DOCTYPE html>", "")  # no scheme, no host
            assets = re.findall(r'(?:src|href)="([^"]+)"', html.text)
            assert len(assets) >= 2 and all(a.startswith("/docs-assets/") for a in assets)
            assert "/openapi.json" in html.text and c.get("/openapi.json").status_code == 200
            for asset in assets:
                got = c.get(asset)
                assert got.status_code == 200 and len(got.content) > 1000, asset
                kind = "image/png" if asset.endswith(".png") else "text/"
                assert got.headers["content-type"].startswith(kind)


def test_health_and_openapi(server):
    with client(server) as c:
        health = c.get("/healthz").json()
        assert health["status"] == "ok" and health["version"] == 1
        assert "naive" in health["modes"]
        paths = c.get("/openapi.json").json()["paths"]
    for path in (
        "/v1/retrieve",
        "/v1/retrieve/batch",
        "/v1/answer",
        "/v1/documents",
        "/v1/documents/{doc_id}",
        "/v1/operations/{op_id}",
        "/v1/stats",
        "/metrics",
        "/healthz",
    ):
        assert path in paths, path


def test_retrieve_matches_the_engine_in_every_mode(server, base_index, sample_docs):
    """The service returns exactly what ``Index.query`` returns (QueryResult.to_dict)."""
    from graphstrata.bindings.api import Index

    local = Index.open(base_index)
    known = {d["doc_id"] for d in sample_docs}
    question = "Which instruments did the Halvorsen Observatory build with Meridian Optics?"
    with client(server) as c:
        modes = c.get("/healthz").json()["modes"]
        assert set(modes) == set(local.modes)
        for mode in modes:
            resp = c.post(
                "/v1/retrieve", json={"query": question, "mode": mode, "budget_tokens": 400}
            )
            assert resp.status_code == 200, resp.text
            body = resp.json()
            expected = local.query(question, mode=mode, budget_tokens=400).to_dict()
            assert body["nodes"] == expected["nodes"], mode
            assert body["nodes"], mode
            report = body["report"]
            assert report["mode"] == mode and report["version"] == 1
            assert report["tokens"] == sum(n["tokens"] for n in body["nodes"]) <= 400
            for node in body["nodes"]:
                assert set(node) == {
                    "id",
                    "kind",
                    "layer",
                    "text",
                    "score",
                    "tokens",
                    "docs",
                    "documents",
                    "spans",
                }
                assert set(node["docs"]) <= known


def test_batch_retrieve_equals_single_retrieves(server):
    queries = ["lidar smoke layer", "mayor of Brekkvik", "Kjell Telescope mirror"]
    with client(server) as c:
        resp = c.post(
            "/v1/retrieve/batch",
            json={"queries": queries, "mode": "naive", "budget_tokens": 300, "top_k": 20},
        )
        assert resp.status_code == 200, resp.text
        results = resp.json()["results"]
        assert len(results) == len(queries)
        for q, r in zip(queries, results, strict=True):
            single = c.post(
                "/v1/retrieve",
                json={"query": q, "mode": "naive", "budget_tokens": 300, "top_k": 20},
            ).json()
            assert r["nodes"] == single["nodes"]


def test_answer_returns_answer_and_context(server):
    with client(server) as c:
        resp = c.post(
            "/v1/answer",
            json={"query": "What did the Sundra Aerosol Lidar track?", "budget_tokens": 300},
        )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert isinstance(body["answer"], str) and body["answer"].strip()
    assert body["nodes"] and body["report"]["mode"] == "naive"
    assert body["report"]["llm_calls"] >= 1


def test_concurrent_queries_are_embedded_together(server):
    n = 12
    barrier = threading.Barrier(n)
    statuses: list[int] = []

    def one(i: int) -> None:
        with client(server) as c:
            barrier.wait()
            resp = c.post("/v1/retrieve", json={"query": f"observatory telescope {i}"})
            statuses.append(resp.status_code)

    with client(server) as c:
        before = c.get("/v1/stats").json()["service"]["queries"]["microbatch"]
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with client(server) as c:
        after = c.get("/v1/stats").json()["service"]["queries"]["microbatch"]
    assert statuses == [200] * n
    assert after["items"] - before["items"] == n
    # 12 queries arriving together inside a 20 ms window take fewer than 12 embedding calls.
    assert after["batches"] - before["batches"] < n
    assert after["max_batch"] >= 2


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"query": "   "}, 422, "bad_request"),
        ({}, 422, "bad_request"),
        ({"query": "x" * 4097}, 422, "bad_request"),
        ({"query": "ok", "budget_tokens": -1}, 422, "bad_request"),
        ({"query": "ok", "top_k": 0}, 422, "bad_request"),
        ({"query": "ok", "params": {"mode": "graph"}}, 422, "bad_request"),
        ({"query": "ok", "params": {"nonsense": 1}}, 422, "bad_request"),
        ({"query": "ok", "params": []}, 422, "bad_request"),
        ({"query": "ok", "unknown": 1}, 422, "bad_request"),
        ({"query": "ok", "mode": "no-such-mode"}, 400, "mode_unavailable"),
        ({"query": "lone \ud800 surrogate"}, 422, "bad_request"),
    ],
    ids=[
        "blank",
        "missing",
        "too-long",
        "budget",
        "top_k",
        "reserved-param",
        "unknown-param",
        "params-not-object",
        "extra",
        "mode",
        "surrogate",
    ],
)
def test_bad_retrieve_requests_get_json_errors(server, body, status, code):
    content = json.dumps(body).encode()  # ASCII escapes, so a lone surrogate survives
    with client(server) as c:
        resp = c.post("/v1/retrieve", content=content, headers={"content-type": "application/json"})
    assert resp.status_code == status, resp.text
    assert error_code(resp) == code
    assert resp.json()["error"]["message"]


def test_mode_params_are_typed_and_named_in_errors(server, base_index):
    """Unknown or ill-typed ``params`` are 422 naming the allowed parameters, checked per mode."""
    from graphstrata.bindings.api import Index

    mode_params = Index.open(base_index).engine.mode_params
    with client(server) as c:
        schema = c.get("/openapi.json").json()["components"]["schemas"]
        for mode, cls in mode_params.items():
            allowed = cls.field_names()
            resp = c.post(
                "/v1/retrieve", json={"query": "lidar", "mode": mode, "params": {"nonsense": 1}}
            )
            assert resp.status_code == 422, resp.text
            assert error_code(resp) == "bad_request"
            message = resp.json()["error"]["message"]
            assert "nonsense" in message and "allowed parameters" in message
            assert all(name in message for name in allowed), (mode, message)
        if "detailed" in mode_params:
            ok = {"query": "lidar", "mode": "detailed", "params": {"bias_share": 0.5}}
            assert c.post("/v1/retrieve", json=ok).status_code == 200
            assert c.post("/v1/answer", json=ok).status_code == 200
            for bad in ({"bias_share": "0.5"}, {"bias_share": True}, {"bias_share": 2.0}):
                for path, body in (
                    ("/v1/retrieve", {"query": "lidar", "mode": "detailed", "params": bad}),
                    ("/v1/answer", {"query": "lidar", "mode": "detailed", "params": bad}),
                    (
                        "/v1/retrieve/batch",
                        {"queries": ["lidar"], "mode": "detailed", "params": bad},
                    ),
                ):
                    resp = c.post(path, json=body)
                    assert resp.status_code == 422, (path, bad, resp.text)
                    assert error_code(resp) == "bad_request" and "bias_share" in resp.text
    # The documented schema of ``params`` is generated from the same classes.
    for name in ("RetrieveRequest", "BatchRetrieveRequest"):
        params = schema[name]["properties"]["params"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        expected = {f for cls in mode_params.values() for f in cls.field_names()}
        assert set(params["properties"]) == expected
    if "detailed" in mode_params:
        assert "bias_share" in schema["RetrieveRequest"]["properties"]["params"]["properties"]


def test_malformed_json_unknown_routes_and_methods(server):
    with client(server) as c:
        resp = c.post(
            "/v1/retrieve", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert resp.status_code == 422 and error_code(resp) == "bad_request"
        resp = c.get("/v1/nothing-here")
        assert resp.status_code == 404 and error_code(resp) == "not_found"
        resp = c.put("/v1/retrieve", json={"query": "x"})
        assert resp.status_code == 405 and error_code(resp) == "method_not_allowed"
        resp = c.get("/v1/operations/does-not-exist")
        assert resp.status_code == 404 and error_code(resp) == "not_found"
        resp = c.delete("/v1/documents/never-inserted")
        assert resp.status_code == 404 and error_code(resp) == "not_found"


def test_oversized_bodies_are_refused(server):
    big_query = {"query": "lidar " * (BODY_LIMIT // 5)}
    payload = json.dumps(big_query).encode()
    assert len(payload) > BODY_LIMIT
    with client(server) as c:
        # With Content-Length: refused before the body is read.
        resp = c.post("/v1/retrieve", content=payload, headers={"content-type": "application/json"})
        assert resp.status_code == 413 and error_code(resp) == "payload_too_large"
    with client(server) as c:
        # Chunked (no Content-Length): refused once the limit is crossed.
        def chunks() -> Iterator[bytes]:
            for i in range(0, len(payload), 8192):
                yield payload[i : i + 8192]

        resp = c.post(
            "/v1/documents", content=chunks(), headers={"content-type": "application/x-ndjson"}
        )
        assert resp.status_code == 413 and error_code(resp) == "payload_too_large"
    with client(server) as c:
        # The service is still healthy and a body under the limit is served.
        assert c.post("/v1/retrieve", json={"query": "lidar"}).status_code == 200


# ---------------------------------------------------------------------------- error mapping
@pytest.fixture
def in_process(base_index) -> Iterator[tuple[Any, Any]]:
    """The app in this process (so a test can break the engine), with its open index."""
    from fastapi.testclient import TestClient

    from graphstrata.bindings.api import Index
    from graphstrata.bindings.server import ServerSettings, create_app

    index = Index.open(base_index)
    app = create_app(base_index, index=index, settings=ServerSettings(microbatch_wait_ms=0))
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c, index


def test_an_engine_defect_is_a_500_with_a_logged_error_id(in_process, monkeypatch, caplog):
    """A ValueError/TypeError that is not a QueryError is a bug, not bad input: 500, not 422."""
    c, index = in_process

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("vectors of the wrong shape")

    monkeypatch.setattr(index.engine, "query_vectors", broken)
    for path, body in (
        ("/v1/retrieve", {"query": "lidar"}),
        ("/v1/retrieve/batch", {"queries": ["lidar", "ferry"]}),
        ("/v1/answer", {"query": "lidar"}),
    ):
        caplog.clear()
        with caplog.at_level("ERROR", logger="graphstrata.server"):
            resp = c.post(path, json=body)
        assert resp.status_code == 500, (path, resp.text)
        error = resp.json()["error"]
        assert error["code"] == "internal" and error["error_id"] in error["message"]
        logged = [r for r in caplog.records if error["error_id"] in r.getMessage()]
        assert logged and logged[0].exc_info is not None, path
        assert logged[0].exc_info[0] is ValueError
        assert "wrong shape" not in error["message"]  # the details stay in the log
    monkeypatch.undo()
    assert c.post("/v1/retrieve", json={"query": "lidar"}).status_code == 200


def test_backend_failures_are_502_and_timeouts_504(in_process, monkeypatch):
    from graphstrata.engine.interfaces import EmbedderError, LLMError

    c, index = in_process
    failure: list[Exception] = []

    def embed(texts: Any) -> Any:
        raise failure[0]

    def complete(*args: Any, **kwargs: Any) -> Any:
        raise failure[0]

    monkeypatch.setattr(index.engine.embedder, "embed", embed)
    failure[:] = [EmbedderError("hashing: HTTP 500 from the embedding server")]
    resp = c.post("/v1/retrieve", json={"query": "lidar"})
    assert resp.status_code == 502 and error_code(resp) == "backend_error", resp.text
    assert resp.json()["error"]["error_id"]
    failure[:] = [EmbedderError("no embeddings after 3 attempts; last error: ReadTimeout: ")]
    for path, body in (
        ("/v1/retrieve", {"query": "lidar"}),
        ("/v1/retrieve/batch", {"queries": ["lidar", "ferry"]}),
    ):
        resp = c.post(path, json=body)
        assert resp.status_code == 504 and error_code(resp) == "backend_timeout", resp.text
    monkeypatch.undo()

    monkeypatch.setattr(index.engine.llm, "complete", complete)
    failure[:] = [LLMError("openai:m: HTTP 400 from http://127.0.0.1:1/v1: context too long")]
    resp = c.post("/v1/answer", json={"query": "lidar"})
    assert resp.status_code == 502 and error_code(resp) == "backend_error", resp.text
    try:
        raise LLMError("the model did not answer") from TimeoutError("read timed out")
    except LLMError as exc:
        failure[:] = [exc]
    resp = c.post("/v1/answer", json={"query": "lidar"})
    assert resp.status_code == 504 and error_code(resp) == "backend_timeout", resp.text
    monkeypatch.undo()
    assert c.post("/v1/answer", json={"query": "lidar"}).status_code == 200


# ---------------------------------------------------------------------------- documents
def test_document_lifecycle(server):
    doc = {
        "doc_id": "news/zeppelin.md",
        "title": "The Zeppelin Harbour",
        "text": "The Zeppelin Harbour of Brekkvik moors quartzite zeppelins beside the ferry pier. "
        "Every quartzite zeppelin is inspected by the harbour master before it leaves.",
    }
    with client(server) as c:
        resp = c.post("/v1/documents", json=[doc])
        assert resp.status_code == 202, resp.text
        op = resp.json()
        assert op["status"] in ("queued", "running", "succeeded") and op["document_count"] == 1
        assert op["documents"]["news/zeppelin.md"] in ("queued", "indexed")
        assert resp.headers["location"] == f"/v1/operations/{op['id']}"
        done = wait_operation(c, op["id"])
        assert done["status"] == "succeeded", done
        version = done["report"]["version"]
        assert done["report"]["docs_added"] == 1

        status = c.get("/v1/documents/news/zeppelin.md").json()
        assert status["status"] == "committed" and status["present"]
        assert status["version"] == version and status["chunks"] >= 1
        assert status["title"] == "The Zeppelin Harbour"

        hits = c.post("/v1/retrieve", json={"query": "quartzite zeppelin harbour"}).json()
        assert hits["report"]["version"] >= version
        assert any("news/zeppelin.md" in n["docs"] for n in hits["nodes"])

        # JSONL upload of two more documents.
        lines = [
            {"doc_id": "news/a.md", "text": "Quartzite gliders land on the frozen lake."},
            {"doc_id": "news/b.md", "text": "The glider club of Brekkvik was founded in 1990."},
        ]
        body = "\n".join(json.dumps(x) for x in lines).encode()
        resp = c.post(
            "/v1/documents", content=body, headers={"content-type": "application/x-ndjson"}
        )
        assert resp.status_code == 202, resp.text
        assert wait_operation(c, resp.json()["id"])["report"]["docs_added"] == 2
        assert c.get("/v1/documents/news/a.md").json()["present"]

        # Delete: the document disappears from status and from every retrieval.
        resp = c.delete("/v1/documents/news/zeppelin.md")
        assert resp.status_code == 202
        deleted = wait_operation(c, resp.json()["id"])
        assert deleted["status"] == "succeeded" and deleted["report"]["docs_deleted"] == 1
        assert c.get("/v1/documents/news/zeppelin.md").status_code == 404
        for mode in c.get("/healthz").json()["modes"]:
            hits = c.post("/v1/retrieve", json={"query": "quartzite zeppelin", "mode": mode}).json()
            assert all("news/zeppelin.md" not in n["docs"] for n in hits["nodes"]), mode


@pytest.mark.parametrize(
    ("content", "ctype", "status"),
    [
        (b'[{"doc_id": "x", "text": "  "}]', "application/json", 422),
        (b'[{"doc_id": "x", "text": "a"}, {"doc_id": "x", "text": "b"}]', "application/json", 422),
        (b'{"doc_id": "x", "text": "not a list"}', "application/json", 422),
        (b"[]", "application/json", 422),
        (b'{"doc_id": "x"}\n', "application/x-ndjson", 422),
        (b"not json\n", "application/x-ndjson", 422),
        (b"doc_id,text\nx,y\n", "text/csv", 415),
    ],
    ids=[
        "blank-text",
        "duplicate-id",
        "not-a-list",
        "empty",
        "ndjson-missing-text",
        "ndjson-bad",
        "csv",
    ],
)
def test_invalid_documents_are_refused_before_queueing(server, content, ctype, status):
    with client(server) as c:
        pending_before = c.get("/v1/stats").json()["service"]["operations"]
        resp = c.post("/v1/documents", content=content, headers={"content-type": ctype})
        assert resp.status_code == status, resp.text
        assert error_code(resp) == "bad_request"
        pending_after = c.get("/v1/stats").json()["service"]["operations"]
    assert pending_after == pending_before  # nothing was queued


def test_stats_and_metrics(server):
    with client(server) as c:
        c.post("/v1/retrieve", json={"query": "ferry timetable", "mode": "naive"})
        stats = c.get("/v1/stats").json()
        metrics = c.get("/metrics")
    index = stats["index"]
    assert "path" not in index  # no filesystem layout leaks out
    assert index["nodes"]["T"] > 0 and index["documents"] >= 30
    service = stats["service"]
    assert service["queries"]["queries"] >= 1 and service["auth"] is False
    assert metrics.status_code == 200
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    assert 'graphstrata_requests_total{endpoint="/v1/retrieve",method="POST",status="200"}' in text
    # Every per-index series names its index (issue 47): the server serves "main".
    assert 'graphstrata_query_seconds_bucket{index="main",le="0.001",mode="naive"}' in text
    assert f'graphstrata_index_version{{index="main"}} {float(index["version"])}' in text
    assert f'graphstrata_nodes{{index="main",kind="T"}} {float(index["nodes"]["T"])}' in text
    assert "graphstrata_embed_batch_size_count" in text


def test_served_process_applies_the_server_thread_budget(server):
    with client(server) as c:
        threads = c.get("/v1/stats").json()["service"]["queries"]["threads"]
    budget = threads["budget"]
    assert budget["role"] == "server"
    assert (budget["blas"], budget["numba"], budget["torch"]) == (1, 1, 1)
    pool = min(8, max(1, budget["cores"] - 1))
    assert threads["search_pool"] == budget["search_pool"] == pool
    assert budget["onnx"] == max(1, budget["cores"] - pool)


# ---------------------------------------------------------------------------- auth and limits
def test_bearer_token_guards_every_v1_route(guarded):
    with client(guarded) as anon, client(guarded, "wrong") as wrong, client(guarded, TOKEN) as ok:
        assert anon.get("/healthz").status_code == 200  # open for load balancers
        for method, path, body in (
            ("POST", "/v1/retrieve", {"query": "lidar"}),
            ("POST", "/v1/retrieve/batch", {"queries": ["lidar"]}),
            ("POST", "/v1/answer", {"query": "lidar"}),
            ("POST", "/v1/documents", [{"doc_id": "a", "text": "b"}]),
            ("DELETE", "/v1/documents/city/ferry.md", None),
            ("GET", "/v1/documents/city/ferry.md", None),
            ("GET", "/v1/operations/x", None),
            ("GET", "/v1/stats", None),
            ("GET", "/metrics", None),
        ):
            for c in (anon, wrong):
                resp = c.request(method, path, json=body)
                assert resp.status_code == 401, (method, path, resp.text)
                assert error_code(resp) == "unauthorized"
                assert resp.headers["www-authenticate"] == "Bearer"
        assert ok.post("/v1/retrieve", json={"query": "lidar"}).status_code == 200
        assert ok.get("/v1/documents/city/ferry.md").json()["present"]
        assert ok.get("/v1/stats").json()["service"]["auth"] is True
        assert ok.get("/metrics").status_code == 200


def hold_slot(handle: ServerHandle, queries: list[str], result: dict[str, int]) -> None:
    """Send one long batch retrieval (it holds a retrieval slot while it runs)."""
    with client(handle, TOKEN) as c:
        resp = c.post("/v1/retrieve/batch", json={"queries": queries, "top_k": 5})
        result["status"] = resp.status_code


def test_saturation_answers_429_with_retry_after(guarded):
    """One retrieval slot: while a long batch holds it, other retrievals get 429 at once."""
    long_queries = [f"{i} " + "lidar observatory telescope ferry " * 120 for i in range(256)]
    seen: list[httpx.Response] = []
    with client(guarded, TOKEN) as c:
        for _attempt in range(5):
            result: dict[str, int] = {}
            holder = threading.Thread(target=hold_slot, args=(guarded, long_queries, result))
            holder.start()
            while holder.is_alive() and c.get("/v1/stats").json()["service"]["in_flight"] < 1:
                time.sleep(0.002)
            while holder.is_alive():
                resp = c.post("/v1/retrieve", json={"query": "lidar"})
                assert resp.status_code in (200, 429), resp.text
                seen.append(resp)
                if resp.status_code == 429:
                    break
            holder.join()
            assert result["status"] == 200
            if any(r.status_code == 429 for r in seen):
                break
        refused = [r for r in seen if r.status_code == 429]
        assert refused, "no request was refused while the only slot was held"
        assert refused[0].headers["retry-after"] == "1"
        assert error_code(refused[0]) == "overloaded"
        # Once the slot is free again, requests are served.
        assert c.post("/v1/retrieve", json={"query": "lidar"}).status_code == 200
        metrics = c.get("/metrics").text
    assert re.search(r'graphstrata_rejected_total\{index="[^"]+",what="query"\}', metrics)


def test_writer_queue_is_bounded(guarded):
    docs = [[{"doc_id": f"bulk/{i}/{j}", "text": f"Bulk document {i} {j} " * 200} for j in range(20)]
            for i in range(4)]  # fmt: skip
    with client(guarded, TOKEN) as c:
        statuses = []
        accepted = []
        for batch in docs:
            resp = c.post("/v1/documents", json=batch)
            statuses.append(resp.status_code)
            if resp.status_code == 202:
                accepted.append(resp.json()["id"])
            else:
                assert error_code(resp) == "overloaded"
                assert resp.headers["retry-after"] == "1"
        assert statuses[0] == 202 and 429 in statuses
        for op_id in accepted:
            assert wait_operation(c, op_id)["status"] == "succeeded"


# ---------------------------------------------------------------------------- consistency
def test_concurrent_inserts_never_expose_a_half_committed_version(base_index, sample_docs):
    """Readers run while the writer commits; each answer is one committed version, whole.

    For every response: its version is one the writer committed (or the initial one), the
    version never goes back for a reader, and every cited document exists in that version.
    """
    steps: list[tuple[str, Any]] = [
        ("insert", [{"doc_id": f"live/{i}", "text": f"The zeppelin harbour log {i}: quartzite "
                     f"zeppelin number {i} moored at the lidar pier. " * 3}])
        for i in range(5)
    ]  # fmt: skip
    steps.insert(2, ("delete", "climate/aerosol_lidar.md"))
    steps.append(("delete", "live/0"))
    docs_at: dict[int, set[str]] = {1: {d["doc_id"] for d in sample_docs}}
    stop = threading.Event()
    failures: list[str] = []
    seen: list[tuple[int, int, list[str]]] = []  # (reader, version, docs)

    with server_process(copy_index(base_index, "live"), ["--microbatch-wait-ms", "2"]) as srv:
        with client(srv) as c:
            modes = [m for m in c.get("/healthz").json()["modes"] if m != "bm25"][:3]

        def reader(r: int) -> None:
            last = 0
            with client(srv) as c:
                while not stop.is_set() and len(seen) < 3000:
                    mode = modes[len(seen) % len(modes)]
                    resp = c.post(
                        "/v1/retrieve",
                        json={"query": "quartzite zeppelin lidar pier", "mode": mode},
                    )
                    if resp.status_code != 200:
                        failures.append(resp.text)
                        return
                    body = resp.json()
                    version = body["report"]["version"]
                    if version < last:
                        failures.append(f"reader {r} went back from v{last} to v{version}")
                    last = version
                    cited = sorted({d for n in body["nodes"] for d in n["docs"]})
                    seen.append((r, version, cited))

        readers = [threading.Thread(target=reader, args=(r,)) for r in range(4)]
        for t in readers:
            t.start()
        current = set(docs_at[1])
        with client(srv) as c:
            for kind, payload in steps:
                if kind == "insert":
                    resp = c.post("/v1/documents", json=payload)
                    current |= {d["doc_id"] for d in payload}
                else:
                    resp = c.delete(f"/v1/documents/{payload}")
                    current -= {payload}
                assert resp.status_code == 202, resp.text
                op = wait_operation(c, resp.json()["id"])
                assert op["status"] == "succeeded", op
                docs_at[op["report"]["version"]] = set(current)
                time.sleep(0.1)  # let the readers query this version
        stop.set()
        for t in readers:
            t.join()

    assert not failures, failures[:3]
    assert len(docs_at) == len(steps) + 1
    versions_seen = {v for _, v, _ in seen}
    assert versions_seen <= set(docs_at), versions_seen - set(docs_at)
    assert len(versions_seen) >= 3, "the readers did not overlap the writes"
    for _, version, cited in seen:
        missing = set(cited) - docs_at[version]
        assert not missing, f"v{version} cites documents it does not hold: {missing}"
    live_hits = [cited for _, v, cited in seen if v >= docs_at_version(docs_at, "live/1")]
    assert any("live/1" in cited for cited in live_hits)


def docs_at_version(docs_at: dict[int, set[str]], doc_id: str) -> int:
    return min(v for v, docs in docs_at.items() if doc_id in docs)


# ---------------------------------------------------------------------------- serve_load
def test_serve_load_benchmark(base_index, tmp_path):
    """``benchmarks/service/serve_load.py`` (once ``graphstrata bench serve``) starts the
    server on loopback and reports every cell."""
    import subprocess
    import sys

    from tests.helpers import REPO

    out = tmp_path / "bench.json"
    cmd = [
        sys.executable, "-m", "benchmarks.service.serve_load",
        str(copy_index(base_index, "bench")), "--requests", "40", "--concurrency", "1,4",
        "--modes", "naive,no-such-mode", "--json", "--out", str(out),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report == json.loads(out.read_text())
    assert report["modes"] == ["naive"] and report["skipped_modes"] == ["no-such-mode"]
    assert "no-such-mode" in proc.stderr  # said so
    assert [(r["mode"], r["concurrency"]) for r in report["results"]] == [
        ("naive", 1),
        ("naive", 4),
    ]
    for r in report["results"]:
        assert r["ok"] == r["requested"] == 40 and r["errors"] == {}
        assert 0 < r["p50_ms"] <= r["p95_ms"] <= r["p99_ms"]
        assert r["rps"] > 0 and r["server_queries"] == 40
        assert r["server_cpu_ms_per_request"] > 0
    assert report["server_report"][0].startswith("served ")
