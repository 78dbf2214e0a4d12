"""A full CPU index build of the sample corpus through the ``openai`` backend, pointed at the
loopback fake server (tests/helpers/fake_openai_server.py), with the hashing embedder.

It shows that every LLM answer of a build comes through the backend given to the index
(calls and tokens in the report equal what the server answered; the extractive backend is
never built nor called), that a rebuild is served from the response cache without a single
HTTP request, and that a backend failing after its last retry aborts the operation with the
index left exactly at its previous version.

The hierarchy and heterograph components are being written beside this test: it runs the
components that exist and demands LLM calls when one that uses the LLM is present.
"""

from __future__ import annotations

import pytest

from graphstrata.bindings.api import LLM_CACHE_FILE, Index
from graphstrata.bindings.llm.extractive import ExtractiveLLM
from graphstrata.bindings.registry import make_llm
from graphstrata.engine.component import Component, ComponentView, UpdateContext
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.index import Engine
from graphstrata.engine.interfaces import LLMError
from graphstrata.engine.modes.registry import default_components
from graphstrata.engine.prompts import summarize_request
from tests.helpers.fake_openai_server import FakeOpenAIServer

pytestmark = pytest.mark.integration

#: Components that call the LLM while building (the sparse BM25 one does not).
LLM_COMPONENTS = {"hierarchy", "heterograph"}
QUESTION = "Which instruments did the Halvorsen Observatory build with Meridian Optics?"


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv
    assert not srv.overflowed


@pytest.fixture
def no_extractive(monkeypatch):
    """Building or calling the extractive backend during the test is a failure."""
    used: list[str] = []

    def forbidden_init(self, *args, **kwargs):
        used.append("constructed")
        raise AssertionError("the extractive backend was constructed")

    def forbidden_complete(self, requests):
        used.append("called")
        raise AssertionError("the extractive backend was called")

    monkeypatch.setattr(ExtractiveLLM, "__init__", forbidden_init)
    monkeypatch.setattr(ExtractiveLLM, "complete", forbidden_complete)
    return used


def spec(server: FakeOpenAIServer, options: str = "max_concurrency=4") -> str:
    return f"openai:fake-model@{server.url}?{options}"


def uses_llm(index: Index) -> bool:
    return bool(LLM_COMPONENTS & {c.name for c in index.engine.components})


def test_sample_build_goes_through_the_openai_backend_only(
    tmp_path, server, sample_docs, hashing_embedder, no_extractive
):
    index = Index.create(tmp_path / "idx", embedder=hashing_embedder, llm=spec(server))
    report = index.insert(sample_docs)

    assert report.docs_added == len(sample_docs) and report.version == 1
    if uses_llm(index):
        assert report.llm_calls > 0 and report.llm_batches > 0
    # Every fresh answer in the report is one the server gave, with the server's usage.
    assert report.llm_calls == server.seen.answered
    assert report.prompt_tokens == server.seen.prompt_tokens
    assert report.completion_tokens == server.seen.completion_tokens
    assert "unknown" not in server.seen.tasks  # only the engine's own prompts were sent
    assert server.seen.max_in_flight <= 4
    assert index.stats()["llm"] == f"openai:fake-model@{server.url}"

    for mode in index.modes:
        result = index.query(QUESTION, mode=mode, budget_tokens=800)
        assert result.nodes, f"mode {mode} found nothing"
    answered = server.seen.tasks["answer"]
    result = index.answer(QUESTION, mode="naive", budget_tokens=800)
    assert result.answer and server.seen.tasks["answer"] == answered + 1
    assert no_extractive == []


def test_a_rebuild_is_served_from_the_cache(
    tmp_path, server, sample_docs, hashing_embedder, no_extractive
):
    first = Index.create(tmp_path / "a", embedder=hashing_embedder, llm=spec(server))
    built = first.insert(sample_docs)
    server.reset()
    # A second index of the same corpus reading the first one's cache: the same prompts,
    # so nothing is asked again (deterministic chunking, hyperplanes, partitions).
    cached_llm = make_llm(spec(server), cache_path=tmp_path / "a" / LLM_CACHE_FILE)
    second = Index.create(tmp_path / "b", embedder=hashing_embedder, llm=cached_llm)
    rebuilt = second.insert(sample_docs)
    assert server.seen.requests == 0
    assert rebuilt.llm_calls == 0 and rebuilt.llm_cached == built.llm_calls + built.llm_cached
    assert second.stats()["nodes"] == first.stats()["nodes"]


class SummarizeNewChunks(Component):
    """A test component that asks the LLM for one summary per new chunk and stores nothing.

    It guarantees an LLM stage inside every insert, whichever real components exist yet.
    """

    name = "summarize_probe"

    def update(self, ctx: UpdateContext, change) -> None:
        requests = [summarize_request([t], 40) for t in change.added_chunk_texts]
        ctx.llm.complete("probe", requests)

    def view(self, state, config) -> ComponentView:
        return _NoSearch()


class _NoSearch(ComponentView):
    def search(self, mode, query):  # pragma: no cover - serves no mode
        raise AssertionError("not a search component")


def test_backend_failure_aborts_the_insert_and_commits_nothing(
    tmp_path, server, sample_docs, hashing_embedder
):
    path = tmp_path / "idx"
    cfg = IndexConfig()
    llm = make_llm(spec(server, "max_retries=1&base_delay=0.01&max_delay=0.02"))
    cfg.embedder, cfg.llm = hashing_embedder.name, llm.name
    components = [*default_components(cfg), SummarizeNewChunks()]
    engine = Engine.create(path, cfg, hashing_embedder, llm, components=components)
    index = Index(engine)
    index.insert(sample_docs[:20])
    before = index.stats()
    version = index.version

    server.fail_after = 0  # the server now answers 500 to everything
    with pytest.raises(LLMError, match="no answer after 2 attempts"):
        index.insert(sample_docs[20:])
    assert server.seen.statuses[500] > 0

    assert index.version == version
    assert index.stats()["documents"] == before["documents"] == 20
    reopened = Index.open(path, embedder=hashing_embedder)
    assert reopened.version == version
    after = reopened.stats()
    for key in ("documents", "nodes", "edges", "vectors"):
        assert after[key] == before[key], key
    # The failed documents are not there; the committed ones are.
    hits = reopened.query(QUESTION, mode="naive", top_k=50).nodes
    names = {doc for hit in hits for doc in hit.docs}
    assert names and names <= {d["doc_id"] for d in sample_docs[:20]}


def test_an_interrupted_build_resumes_paying_only_for_what_was_not_answered(
    tmp_path, server, sample_docs, hashing_embedder
):
    path = tmp_path / "idx"
    cfg = IndexConfig()
    options = "max_concurrency=4&max_retries=1&base_delay=0.01&max_delay=0.02"
    llm = make_llm(spec(server, options), cache_path=path / LLM_CACHE_FILE)
    cfg.embedder, cfg.llm = hashing_embedder.name, llm.name
    components = [*default_components(cfg), SummarizeNewChunks()]
    index = Index(Engine.create(path, cfg, hashing_embedder, llm, components=components))
    server.fail_after = 25  # the server dies after 25 answers, in the middle of a stage
    with pytest.raises(LLMError):
        index.insert(sample_docs)
    assert index.version == 0 and server.seen.answered == 25

    server.fail_after = None
    server.reset()
    llm = make_llm(spec(server, options), cache_path=path / LLM_CACHE_FILE)
    engine = Engine.open(path, hashing_embedder, llm, components=components)
    report = Index(engine).insert(sample_docs)
    assert report.version == 1
    assert report.llm_cached == 25  # the answers that arrived before the failure
    assert report.llm_calls == server.seen.chat_requests == server.seen.answered
    assert report.llm_calls > 0  # and the rest was paid now
