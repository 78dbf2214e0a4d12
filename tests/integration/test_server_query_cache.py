"""The query-vector cache through the real server: a repeated query is a hit in ``/metrics``
and in ``/v1/stats``; ``--query-cache 0`` turns it off."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from benchmarks.service.server_process import server_process

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, sample_docs, hashing_embedder) -> Path:
    from graphstrata.bindings.api import Index

    path = tmp_path_factory.mktemp("qcache") / "cached"
    Index.create(path, embedder=hashing_embedder).insert(sample_docs[:8])
    return path


def metric(text: str, name: str) -> float:
    match = re.search(rf"^{name}(?:{{index=\"[^\"]+\"}})? (\S+)$", text, re.MULTILINE)
    assert match, f"{name} not in /metrics"
    return float(match.group(1))


def retrieve(c: httpx.Client, query: str) -> list[int]:
    resp = c.post("/v1/retrieve", json={"query": query, "mode": "naive", "top_k": 3})
    assert resp.status_code == 200, resp.text
    return [n["id"] for n in resp.json()["nodes"]]


def test_repeated_query_is_a_cache_hit(index_dir):
    with (
        server_process(index_dir, []) as handle,
        httpx.Client(base_url=handle.url, timeout=60, trust_env=False) as c,
    ):
        first = retrieve(c, "wind turbines offshore")
        text = c.get("/metrics").text
        assert metric(text, "graphstrata_query_cache_hits_total") == 0
        assert metric(text, "graphstrata_query_cache_misses_total") == 1
        again = retrieve(c, "wind turbines offshore")
        retrieve(c, "Wind turbines offshore")  # another text: a miss
        text = c.get("/metrics").text
        assert metric(text, "graphstrata_query_cache_hits_total") == 1
        assert metric(text, "graphstrata_query_cache_misses_total") == 2
        assert metric(text, "graphstrata_query_cache_entries") == 2
        cache = c.get("/v1/stats").json()["service"]["queries"]["query_cache"]
        assert (cache["hits"], cache["misses"], cache["capacity"]) == (1, 2, 4096)
        assert cache["hit_rate"] == pytest.approx(1 / 3, abs=1e-6)
        assert first == again
    assert "query cache 1 hits, 2 misses" in handle.output


def test_cache_off_embeds_every_query(index_dir):
    with (
        server_process(index_dir, ["--query-cache", "0"]) as handle,
        httpx.Client(base_url=handle.url, timeout=60, trust_env=False) as c,
    ):
        retrieve(c, "wind turbines offshore")
        retrieve(c, "wind turbines offshore")
        text = c.get("/metrics").text
        assert metric(text, "graphstrata_query_cache_hits_total") == 0
        assert metric(text, "graphstrata_query_cache_misses_total") == 0
        stats = c.get("/v1/stats").json()["service"]["queries"]
        assert stats["query_cache"]["entries"] == 0
        assert stats["microbatch"]["items"] == 2
