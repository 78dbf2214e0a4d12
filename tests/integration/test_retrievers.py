"""The LangChain and LlamaIndex retrievers against the real packages: over an index in the
process and over a live loopback ``graphstrata serve`` with a read-only token, sync and
async."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.servers import threaded_server

pytestmark = pytest.mark.integration

READER = "reader-token"
WRITER = "writer-token"


@pytest.fixture(scope="module")
def index_path(tmp_path_factory, sample_docs, hashing_embedder) -> Path:
    from graphstrata.bindings.api import Index

    path = tmp_path_factory.mktemp("retrievers") / "sample"
    index = Index.create(path, embedder=hashing_embedder)
    index.insert(sample_docs[:8])
    index.close()
    return path


@pytest.fixture(scope="module")
def index(index_path) -> Iterator[Any]:
    from graphstrata.bindings.api import Index

    opened = Index.open(index_path)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def url(index_path) -> Iterator[str]:
    tokens = {READER: {"rights": ["read"]}, WRITER: {"rights": ["write"]}}
    with threaded_server(index_path, tokens=tokens) as (served, _, _):
        yield served


@pytest.fixture
def passage(sample_docs) -> str:
    return sample_docs[0]["text"][:300]


def check_metadata(meta: dict[str, Any]) -> None:
    assert {"score", "kind", "node_id", "docs", "layer", "tokens", "source"} <= set(meta)
    assert meta["source"] == meta["docs"][0]
    assert isinstance(meta["node_id"], int)


# ------------------------------------------------------------------ LangChain
def langchain_retrievers(index, url) -> list[Any]:
    pytest.importorskip("langchain_core")
    from graphstrata.bindings.integrations.langchain import GraphstrataRetriever

    return [
        GraphstrataRetriever(index=index, mode="bm25", top_k=5),
        GraphstrataRetriever(url=url, token=READER, mode="bm25", top_k=5),
        GraphstrataRetriever(url=url, token=READER, index_name="sample", mode="bm25", top_k=5),
    ]


def test_langchain_retriever_over_an_index_and_the_service(index, url, passage, sample_docs):
    from langchain_core.documents import Document

    results = []
    for retriever in langchain_retrievers(index, url):
        docs = retriever.invoke(passage)
        assert docs and all(isinstance(d, Document) for d in docs)
        assert sample_docs[0]["doc_id"] in docs[0].metadata["docs"]
        check_metadata(docs[0].metadata)
        assert docs[0].page_content
        assert docs[0].id == str(docs[0].metadata["node_id"])
        results.append([(d.page_content, d.metadata["node_id"]) for d in docs])
        # the async path (an httpx.AsyncClient over HTTP) returns the same documents
        adocs = asyncio.run(retriever.ainvoke(passage))
        assert [(d.page_content, d.metadata["node_id"]) for d in adocs] == results[-1]
    # the same search, wherever it runs
    assert results[0] == results[1] == results[2]


def test_langchain_retriever_options_reach_the_search(index, passage):
    pytest.importorskip("langchain_core")
    from graphstrata.bindings.integrations.langchain import GraphstrataRetriever

    small = GraphstrataRetriever(index=index, mode="naive", budget_tokens=60).invoke(passage)
    large = GraphstrataRetriever(index=index, mode="naive", budget_tokens=2000).invoke(passage)
    assert sum(d.metadata["tokens"] for d in small) <= 60
    assert len(large) > len(small)
    with pytest.raises(ValueError, match="either index"):
        GraphstrataRetriever()
    with pytest.raises(Exception, match="no-such-mode"):
        GraphstrataRetriever(index=index, mode="no-such-mode").invoke(passage)


def test_a_token_without_the_read_right_is_refused(url, passage):
    pytest.importorskip("langchain_core")
    from graphstrata.bindings.integrations.langchain import GraphstrataRetriever
    from graphstrata.bindings.integrations.source import RetrievalError

    with pytest.raises(RetrievalError, match="HTTP 403 forbidden"):
        GraphstrataRetriever(url=url, token=WRITER).invoke(passage)
    with pytest.raises(RetrievalError, match="HTTP 401 unauthorized"):
        asyncio.run(GraphstrataRetriever(url=url).ainvoke(passage))


# ------------------------------------------------------------------ LlamaIndex
def test_llamaindex_retriever_over_an_index_and_the_service(index, url, passage, sample_docs):
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

    from graphstrata.bindings.integrations.llamaindex import GraphstrataRetriever

    results = []
    for retriever in (
        GraphstrataRetriever(index, mode="bm25", top_k=5),
        GraphstrataRetriever(url=url, token=READER, mode="bm25", top_k=5),
    ):
        nodes = retriever.retrieve(passage)
        assert nodes and all(isinstance(n, NodeWithScore) for n in nodes)
        assert all(isinstance(n.node, TextNode) for n in nodes)
        first = nodes[0]
        assert first.score == first.node.metadata["score"]
        assert sample_docs[0]["doc_id"] in first.node.metadata["docs"]
        check_metadata(first.node.metadata)
        # an LLM sees the text with the cited documents, not the bookkeeping
        shown = first.node.get_content(metadata_mode=MetadataMode.LLM)
        assert "docs:" in shown and "node_id" not in shown and first.node.text in shown
        results.append([(n.node.text, n.score) for n in nodes])
        anodes = asyncio.run(retriever.aretrieve(passage))
        assert [(n.node.text, n.score) for n in anodes] == results[-1]
    assert results[0] == results[1]


def test_retrievers_pass_a_filter(index, url, passage, sample_docs):
    pytest.importorskip("langchain_core")
    from graphstrata.bindings.integrations.langchain import GraphstrataRetriever

    wanted = sample_docs[1]["doc_id"]
    for retriever in (
        GraphstrataRetriever(index=index, filter={"doc_id": wanted}),
        GraphstrataRetriever(url=url, token=READER, filter={"doc_id": wanted}),
    ):
        docs = retriever.invoke(passage)
        assert docs and all(d.metadata["docs"] == [wanted] for d in docs)
        assert all(d.metadata["documents"][0]["doc_id"] == wanted for d in docs)
