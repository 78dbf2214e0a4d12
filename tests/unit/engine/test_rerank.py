"""The rerank stage shared by every mode (``engine.rerank``, decision 0031), with a loopback
rerank server (real HTTP) behind the real client."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from graphstrata.bindings.api import Index, QueryError, SearchConfig
from graphstrata.engine.rerank import POOL_BUDGET
from tests.helpers.fake_rerank_server import FakeRerankServer, overlap

QUERY = "Which river flows through the old town and its harbour?"
BUDGET = 400
N = 6


@pytest.fixture(scope="module")
def built(tmp_path_factory, sample_docs_module):
    from graphstrata.bindings.embed.models import HashingEmbedder

    path = tmp_path_factory.mktemp("rerank") / "ix"
    Index.create(path, embedder=HashingEmbedder(64)).insert(sample_docs_module)
    return path


@pytest.fixture(scope="module")
def sample_docs_module():
    import json

    from tests.helpers import SAMPLE_JSONL

    with open(SAMPLE_JSONL, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture
def server():
    with FakeRerankServer(slow_seconds=2.0) as fake:
        yield fake


def _open(path, reranker=None, search=None) -> Index:
    return Index.open(path, embedder="hashing:64", reranker=reranker, search=search)


def _expected(pool, budget: int, n: int) -> list[str]:
    """The oracle: the top ``n`` by the server's score (ties in mode order), then the rest,
    greedily filled under ``budget``."""
    top = pool[:n]
    order = sorted(range(len(top)), key=lambda i: -overlap(QUERY, top[i].text))
    ranked = [top[i] for i in order] + pool[n:]
    out, used = [], 0
    for h in ranked:
        if used + h.tokens <= budget:
            out.append(h.text)
            used += h.tokens
    return out


def test_every_mode_packs_its_candidates_in_the_rerankers_order(built, server):
    index = _open(built, reranker=f"tei:{server.url}")
    for mode in index.modes:
        pool = index.query(QUERY, mode, budget_tokens=POOL_BUDGET).nodes
        result = index.query(QUERY, mode, budget_tokens=BUDGET, rerank_candidates=N)
        entry = result.report["rerank"]
        assert entry["calls"] == 1 and entry["candidates"] == min(N, len(pool)), mode
        assert entry["seconds"] >= 0 and entry["reranker"].startswith("tei:")
        assert "warning" not in entry
        # The server scored exactly the mode's first N candidates, in the mode's order.
        assert server.requests[-1][1]["texts"] == [h.text for h in pool[:N]], mode
        assert [h.text for h in result.nodes] == _expected(pool, BUDGET, N), mode
        assert sum(h.tokens for h in result.nodes) <= BUDGET
        reranked = [h for h in result.nodes if h.text in {p.text for p in pool[:N]}]
        assert [h.score for h in reranked] == pytest.approx(
            [overlap(QUERY, h.text) for h in reranked]
        )


@pytest.mark.parametrize(
    ("outcomes", "spec_options", "warning"),
    [
        (("500", "500"), "max_retries=1", "HTTP 500"),
        (("slow",), "timeout=0.3&max_retries=0", "Timeout"),
        (("short",), "max_retries=0", "got no score"),
        (("malformed",), "max_retries=0", "unreadable"),
    ],
)
def test_a_failing_reranker_keeps_the_modes_own_result(
    built, server, caplog, outcomes, spec_options, warning
):
    index = _open(built, reranker=f"tei:{server.url}?{spec_options}")
    for mode in ("naive", "collapsed", "graph"):
        plain = index.query(QUERY, mode, budget_tokens=BUDGET)
        server.push(*outcomes)
        with caplog.at_level(logging.WARNING, logger="graphstrata.rerank"):
            result = index.query(QUERY, mode, budget_tokens=BUDGET, rerank_candidates=N)
        assert [(h.id, h.score) for h in result.nodes] == [(h.id, h.score) for h in plain.nodes]
        entry = result.report["rerank"]
        assert warning in entry["warning"] and entry["calls"] == 1, entry
        assert any(warning in r.getMessage() for r in caplog.records), mode
        caplog.clear()


def test_rerank_candidates_is_checked_and_warns_without_a_reranker(built, server):
    index = _open(built, reranker=f"tei:{server.url}")
    for bad in (-1, 1001, True, "5", 2.5):
        with pytest.raises(QueryError, match="rerank_candidates"):
            index.query(QUERY, "hybrid", rerank_candidates=bad)
    alone = _open(built).query(QUERY, "naive", budget_tokens=BUDGET, rerank_candidates=5)
    assert "no reranker" in alone.report["rerank"]["warning"]  # the setup's fault: a warning
    assert "rerank" not in _open(built).query(QUERY, "naive").report  # off by default
    assert not server.requests


def test_the_index_config_turns_it_on_and_a_query_off(built, server):
    search = SearchConfig(reranker=f"tei:{server.url}", rerank_candidates=4)
    index = _open(built, search=search)
    assert index.query(QUERY, "hybrid").report["rerank"]["candidates"] == 4
    assert "rerank" not in index.query(QUERY, "hybrid", rerank_candidates=0).report
    assert len(server.requests) == 1
    # Configured on, but no reranker could be named: the mode's order, and a warning.
    alone = _open(built, reranker="", search=search)
    result = alone.query(QUERY, "naive", budget_tokens=BUDGET)
    assert "no reranker" in result.report["rerank"]["warning"]
    plain = _open(built).query(QUERY, "naive", budget_tokens=BUDGET)
    assert np.array_equal([h.id for h in result.nodes], [h.id for h in plain.nodes])
