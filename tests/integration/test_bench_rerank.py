"""``benchmarks/quality/rerank.py``: each mode is scored alone and reranked (a loopback
rerank server, real HTTP), the reranker's cost and failures are counted, and the table is
written."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.rerank import make_reranker
from graphstrata.evaluation import ChunkMap, as_qa_items
from tests.helpers.fake_rerank_server import FakeRerankServer

pytestmark = pytest.mark.integration


def test_modes_are_scored_alone_and_reranked(tmp_path, sample_docs):
    from benchmarks.quality import rerank

    config = {"heterograph": {"enabled": False}}
    index = Index.create(tmp_path / "ix", config, embedder="hashing:64")
    index.insert(sample_docs[:10])
    doc = sample_docs[0]
    fact = doc["text"].split(". ")[0]
    items = as_qa_items(
        [
            {"id": str(i), "question": q, "gold_doc_ids": [doc["doc_id"]], "gold_facts": [fact]}
            for i, q in enumerate([fact, doc["title"] or fact, "an unrelated question"])
        ]
    )
    engine = index.engine
    vectors = np.asarray(engine.embedder.embed([q.question for q in items]), np.float32)
    chunk_map = ChunkMap.from_snapshot(engine.state.snapshot)
    with FakeRerankServer() as server:
        engine.reranker = make_reranker(f"tei:{server.url}?max_retries=0")
        server.push("500")  # the first reranked query fails and keeps the mode's order
        data = rerank.compare(engine, items, vectors, chunk_map, ["naive", "graph"], 300, 5)
        assert len(server.requests) == 3  # one call per reranked question
    assert list(data) == ["naive"]  # graph is not served by this index
    alone, reranked = data["naive"]["alone"], data["naive"]["reranked"]
    assert alone["rerank_ms_p50"] is None and alone["rerank_failures"] == 0
    assert reranked["rerank_ms_p50"] >= 0 and reranked["rerank_failures"] == 1
    assert reranked["questions"] == alone["questions"] == 3
    for run in (alone, reranked):
        assert 0.0 <= run["evidence_token_recall"] <= 1.0
        assert set(rerank.MEASURES) <= set(run)
    header = dict.fromkeys(("command", "machine", "reranker", "load_before", "load_after"), "x")
    table = rerank.markdown({"sample": data}, {**header, "candidates": 5, "budget": 300})
    assert table.count("| sample | naive |") == 2


def test_evidence_token_recall_counts_content_words():
    from benchmarks.quality.rerank import evidence_token_recall

    assert evidence_token_recall(["The ferries leave Brekkvik."], ["ferry leaving Brekkvik"]) == 1.0
    assert evidence_token_recall(["nothing here"], ["ferry Brekkvik"]) == 0.0
    assert evidence_token_recall(["text"], []) is None
