"""The rerank clients against a loopback server speaking each API (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import time

import pytest

from graphstrata.bindings.api import ConfigError, RerankerError
from graphstrata.bindings.rerank import RERANKER_ENV, make_reranker, resolve_reranker
from tests.helpers.fake_rerank_server import FakeRerankServer, overlap

QUERY = "harbour ferry timetable"
TEXTS = [
    "The museum opens at nine.",
    "The ferry leaves the harbour every hour; the timetable is posted at the pier.",
    "A ferry crossed the bay.",
    "Harbour ferry timetable for winter.",
]
EXPECTED = [overlap(QUERY, t) for t in TEXTS]


@pytest.fixture
def server():
    with FakeRerankServer(slow_seconds=2.0) as fake:
        yield fake


@pytest.mark.parametrize(
    ("spec", "path", "model"),
    [
        ("tei:{url}", "/rerank", None),
        ("vllm:bge-reranker@{url}", "/v1/rerank", "bge-reranker"),
        ("vllm:bge-reranker@{url}?path=/rerank", "/rerank", "bge-reranker"),
        ("cohere:rerank-v3.5@{url}", "/v2/rerank", "rerank-v3.5"),
        ("cohere:rerank-v3.5@{url}?path=/v1/rerank", "/v1/rerank", "rerank-v3.5"),
        ("jina:jina-reranker-v2@{url}", "/v1/rerank", "jina-reranker-v2"),
    ],
)
def test_every_api_shape_gives_the_scores_in_input_order(server, spec, path, model):
    reranker = make_reranker(spec.format(url=server.url))
    assert reranker.score(QUERY, TEXTS) == pytest.approx(EXPECTED)
    (seen_path, body), *_ = server.requests
    assert seen_path == path
    if model is None:  # TEI: its own body, one model per server
        assert body["texts"] == TEXTS and "documents" not in body and "model" not in body
    else:
        assert body["documents"] == TEXTS and body["model"] == model
        assert body["top_n"] == len(TEXTS)  # every score back, not the server's default few
    assert body["query"] == QUERY


def test_texts_go_in_batches(server):
    reranker = make_reranker(f"tei:{server.url}?batch_size=3")
    assert reranker.score(QUERY, TEXTS) == pytest.approx(EXPECTED)
    assert [len(body["texts"]) for _, body in server.requests] == [3, 1]


def test_a_500_is_retried_and_a_400_is_not(server):
    reranker = make_reranker(f"tei:{server.url}?max_retries=1")
    server.push("500")
    assert reranker.score(QUERY, TEXTS) == pytest.approx(EXPECTED)
    assert len(server.requests) == 2
    server.push("500", "500")
    with pytest.raises(RerankerError, match="no scores after 2 attempts; last error: HTTP 500"):
        reranker.score(QUERY, TEXTS)
    server.push("400")
    with pytest.raises(RerankerError, match="HTTP 400"):
        reranker.score(QUERY, TEXTS)
    assert len(server.requests) == 5


def test_a_slow_server_times_out(server):
    reranker = make_reranker(f"jina:m@{server.url}?timeout=0.3&max_retries=0")
    server.push("slow")
    start = time.perf_counter()
    with pytest.raises(RerankerError, match="Timeout"):
        reranker.score(QUERY, TEXTS)
    assert time.perf_counter() - start < 1.5


@pytest.mark.parametrize(
    ("outcome", "message"),
    [
        ("malformed", "unreadable rerank answer"),
        ("short", "1 of 4 texts got no score"),
        ("repeat", "bad or repeated index"),
        ("nan", "not finite"),
        ("string", "is not a number"),
    ],
)
@pytest.mark.parametrize("spec", ["tei:{url}", "cohere:m@{url}"])
def test_bad_answers_are_reranker_errors(server, spec, outcome, message):
    reranker = make_reranker(spec.format(url=server.url) + "?max_retries=0")
    server.push(outcome)
    with pytest.raises(RerankerError, match=message):
        reranker.score(QUERY, TEXTS)


def test_no_server_is_a_reranker_error():
    reranker = make_reranker("tei:http://127.0.0.1:9?timeout=1&max_retries=0")
    with pytest.raises(RerankerError, match="ConnectError"):
        reranker.score(QUERY, TEXTS)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope:http://127.0.0.1:1", "unknown reranker"),
        ("tei", "unknown reranker"),
        ("tei:ftp://x", "bad reranker URL"),
        ("tei:http://127.0.0.1:1?colour=red", "unknown option 'colour'"),
        ("tei:http://127.0.0.1:1?timeout=0", "timeout > 0"),
        ("tei:http://127.0.0.1:1?api_key=secret", "does not belong in a spec"),
        ("vllm:http://127.0.0.1:1", "needs a model name"),
        ("vllm:m", "needs a server URL"),
    ],
)
def test_bad_specs_are_clear_config_errors(spec, message):
    with pytest.raises(ConfigError, match=message):
        make_reranker(spec)


def test_which_reranker_an_index_gets():
    env = {RERANKER_ENV: "tei:http://127.0.0.1:2"}
    assert resolve_reranker(None, "", {}) is None
    assert (
        resolve_reranker(None, "tei:http://127.0.0.1:3", {}).name == "tei:http://127.0.0.1:3/rerank"
    )
    assert (
        resolve_reranker(None, "tei:http://127.0.0.1:3", env).name
        == "tei:http://127.0.0.1:2/rerank"
    )
    assert resolve_reranker("jina:m@http://h:1", "", env).name == "jina:m"
    assert resolve_reranker("", "tei:http://127.0.0.1:3", env) is None  # "" turns it off
