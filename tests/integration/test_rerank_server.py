"""Reranking through the service: ``rerank_candidates`` in ``params``, a failing reranker is
a 200 with a warning (never a 5xx), the latency in ``/metrics`` (real uvicorn server, a
loopback rerank server, real HTTP)."""

from __future__ import annotations

import httpx
import pytest

from graphstrata.bindings.api import Index
from tests.helpers.fake_rerank_server import FakeRerankServer
from tests.helpers.servers import threaded_server

pytestmark = pytest.mark.integration


def _metric(text: str, name: str) -> float:
    lines = [ln for ln in text.splitlines() if ln.startswith((name + " ", name + "{"))]
    return float(lines[0].split()[1]) if lines else 0.0


def test_reranked_retrieval_degrades_and_is_measured(tmp_path, monkeypatch, sample_docs):
    path = tmp_path / "ix"
    Index.create(path, {"heterograph": {"enabled": False}}, embedder="hashing:64").insert(
        sample_docs[:12]
    )
    with FakeRerankServer() as reranker:
        monkeypatch.setenv("GRAPHSTRATA_EMBEDDER", "hashing:64")
        monkeypatch.setenv("GRAPHSTRATA_RERANKER", f"tei:{reranker.url}?max_retries=0")
        with (
            threaded_server(path) as (url, _app, _server),
            httpx.Client(base_url=url, timeout=60, trust_env=False) as c,
        ):
            body = {"query": "harbour ferry", "mode": "hybrid", "params": {"rerank_candidates": 5}}
            ok = c.post("/v1/retrieve", json=body)
            assert ok.status_code == 200, ok.text
            assert ok.json()["report"]["rerank"]["calls"] == 1
            reranker.push("500")
            failed = c.post("/v1/retrieve", json=body)
            assert failed.status_code == 200, failed.text
            assert "HTTP 500" in failed.json()["report"]["rerank"]["warning"]
            plain = c.post("/v1/retrieve", json={**body, "params": {}}).json()
            assert [n["id"] for n in failed.json()["nodes"]] == [n["id"] for n in plain["nodes"]]
            batch = {"queries": ["harbour", "ferry"], "mode": "naive", "params": body["params"]}
            assert c.post("/v1/retrieve/batch", json=batch).status_code == 200
            too_many = {**body, "params": {"rerank_candidates": 1001}}
            assert c.post("/v1/retrieve", json=too_many).status_code == 422
            schema = c.get("/openapi.json").json()["components"]["schemas"]
            prop = schema["RetrieveRequest"]["properties"]["params"]["properties"]
            assert prop["rerank_candidates"]["anyOf"][0]["maximum"] == 1000
            metrics = c.get("/metrics").text
            assert _metric(metrics, "graphstrata_rerank_seconds_count") == 4
            assert _metric(metrics, "graphstrata_rerank_failures_total") == 1
