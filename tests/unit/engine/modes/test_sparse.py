"""The ``bm25`` baseline: tokenization, ranking, packing, and per-version rebuilds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from graphstrata.bindings.llm.extractive import ExtractiveLLM
from graphstrata.engine.component import Query
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.index import Engine
from graphstrata.engine.modes.bm25 import BM25Chunks, SparseComponent, make_tokenizer

TEXTS = [
    "The observatory was running a new spectrograph.",
    "Meridian Optics polishes lenses in Brekkvik.",
    "A ferry crosses the fjord every morning.",
    "the and of",  # stop words only: no term at all
]


def test_tokenizer_lowercases_stems_and_drops_stop_words():
    tok = make_tokenizer()
    (words,) = tok.tokenize(
        ["The Observatories are RUNNING in 2023 a"], return_as="string", show_progress=False
    )
    assert words == ["observatori", "run", "2023"]


def test_bm25_ranks_matching_chunk_first_through_stemming():
    index = BM25Chunks(TEXTS)
    rows, scores = index.search("observatories run spectrographs", k=10)
    assert rows.tolist() == [0]  # only chunk 0 shares a term; zero scores are dropped
    assert scores[0] > 0
    rows, _ = index.search("lenses polished by Meridian", k=10)
    assert rows[0] == 1


def test_bm25_returns_nothing_without_a_shared_term():
    index = BM25Chunks(TEXTS)
    for text in ("zebra quagga", "the and of", ""):
        rows, scores = index.search(text, k=10)
        assert rows.size == 0 and scores.size == 0
    assert BM25Chunks([]).search("anything", k=5)[0].size == 0


def test_bm25_k_is_capped_by_the_corpus():
    rows, _ = BM25Chunks(TEXTS).search("observatory ferry lenses", k=100)
    assert sorted(rows.tolist()) == [0, 1, 2]


def _engine(tmp_path, hashing_embedder) -> Engine:
    config = IndexConfig()
    config.hierarchy.enabled = False
    config.heterograph.enabled = False
    return Engine.create(
        tmp_path / "idx", config, hashing_embedder, ExtractiveLLM(), components=[SparseComponent()]
    )


def test_component_serves_bm25_under_the_budget(tmp_path, hashing_embedder, sample_docs):
    engine = _engine(tmp_path, hashing_embedder)
    engine.insert(sample_docs)
    assert "bm25" in engine.modes
    result = engine.query(
        "Meridian Optics gratings Sundra spectrograph", mode="bm25", budget_tokens=450
    )
    hits = result.nodes
    assert hits and all(h.kind == "T" for h in hits)
    assert sum(h.tokens for h in hits) <= 450
    assert hits[0].docs == ["observatory/sundra_array_spectrograph.md"]
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    assert engine.query("Meridian", mode="bm25", budget_tokens=0).nodes == []
    # the sparse component stores nothing: only chunk nodes, no edges, no state
    stats = engine.stats()
    assert set(stats["nodes"]) == {"T"} and stats["edges"] == 0


def test_search_does_not_use_the_query_vector(tmp_path, hashing_embedder, sample_docs):
    engine = _engine(tmp_path, hashing_embedder)
    engine.insert(sample_docs)
    view = engine.state.views["bm25"]
    query = Query("Tomas Veld lens grinder", np.zeros(0, np.float32), 300, 20, {}, None, {})
    hits = view.search("bm25", query)
    assert hits and hits[0].docs == ["optics/meridian_founding.md"]


def test_each_version_sees_its_own_chunks(tmp_path, hashing_embedder, sample_docs):
    engine = _engine(tmp_path, hashing_embedder)
    engine.insert(sample_docs)
    assert engine.query("quokkaberry", mode="bm25").nodes == []
    engine.insert([{"doc_id": "new.md", "text": "The quokkaberry harvest began in Brekkvik."}])
    hits = engine.query("quokkaberry", mode="bm25").nodes
    assert [h.docs for h in hits] == [["new.md"]]
    engine.delete(["new.md"])
    assert engine.query("quokkaberry", mode="bm25").nodes == []


def test_unknown_mode_is_refused(tmp_path, hashing_embedder, sample_docs):
    engine = _engine(tmp_path, hashing_embedder)
    engine.insert(sample_docs[:2])
    query = Query("x", np.zeros(0, np.float32), 100, 5, {}, None, {})
    with pytest.raises(ValueError, match="bm25"):
        engine.state.views["bm25"].search("naive", query)
