"""``hybrid`` end to end on the sample corpus (hashing embedder) through the Python API."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder
from graphstrata.core.fusion import query_dense_weight, rrf, score_fusion, shingles
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.modes.hybrid import HybridParams
from graphstrata.engine.params import QueryError
from graphstrata.engine.sparse.analysis import analyze
from graphstrata.engine.sparse.index import SparseIndex
from graphstrata.engine.types import NodeKind
from tests.helpers.oracles import coverage_oracle, feedback_round

T = int(NodeKind.T)
QUESTION = "Which instruments did the Halvorsen Observatory build with Meridian Optics?"


def config() -> IndexConfig:
    cfg = IndexConfig()
    cfg.hierarchy.enabled = False
    cfg.heterograph.enabled = False
    return cfg


@pytest.fixture
def index(tmp_path, hashing_embedder, sample_docs) -> Index:
    ix = Index.create(tmp_path / "idx", config(), embedder=hashing_embedder, llm="extractive")
    ix.insert(sample_docs)
    return ix


def candidates(index: Index, question: str, k: int):
    """The two lists hybrid fuses, computed apart from the view."""
    engine = index.engine
    state = engine.state
    q = np.asarray(engine.embedder.embed([question]), np.float32)
    d_ids, d_scores = state.vectors.search(q, [T], k)
    nodes = state.snapshot.nodes
    ids = nodes.ids_of_kind(T)
    fresh = SparseIndex.from_texts(ids, [T] * ids.size, nodes.text_of(ids))  # not the view's
    s_ids, s_scores = fresh.search(question, [T], k)
    return (d_ids[0], d_scores[0]), (s_ids, s_scores), (q[0], fresh)


def fused(
    index: Index,
    question: str,
    k: int,
    method=None,
    w=None,
    rrf_k=None,
    complete=None,
    decay=None,
    docs=None,
    weight=None,
    terms=None,
):
    """The fused ranking ``hybrid`` should pack (``fused_candidates``, recomputed); unset
    arguments take the index's ``FusionConfig``."""
    cfg = index.engine.config.fusion
    method = cfg.method if method is None else method
    w = cfg.dense_weight if w is None else w
    rrf_k = cfg.rrf_k if rrf_k is None else rrf_k
    complete = cfg.complete_scores if complete is None else complete
    decay = cfg.term_decay if decay is None else decay
    docs = cfg.feedback_docs if docs is None else docs
    weight = cfg.feedback_weight if weight is None else weight
    terms = cfg.feedback_terms if terms is None else terms
    dense, sparse, (q, fresh) = candidates(index, question, k)

    def one_round(dense, vector, bm25_ids, query):
        lists = [dense, (bm25_ids, fresh.score(query, bm25_ids))]
        w_q = w
        if complete:
            union = np.union1d(dense[0], bm25_ids)
            cos = index.engine.state.snapshot.vectors.get(union) @ vector
            bm25 = fresh.score(query, union)
            # the per-query weight (its kernel has its own oracle in tests/unit/core)
            w_q = query_dense_weight(
                cos, bm25, w, cfg.adaptive, cfg.adaptive_strength, cfg.adaptive_depth
            )
            if method == "score" and decay < 1:
                parts = fresh.term_scores(query, union)
                return np.asarray(coverage_oracle(union, cos, parts, w_q, decay), np.int64)
            lists = [(union, cos), (union, bm25)]
        if method == "score":
            return score_fusion(lists, [w_q, 1 - w_q])[0]
        rankings = [i[np.lexsort((i, -np.asarray(s, np.float64)))] for i, s in lists]
        return rrf(rankings, [w_q, 1 - w_q], rrf_k)[0]

    first = one_round(dense, q, sparse[0], question)
    if docs == 0 or first.size == 0:
        return first
    fusion = dataclasses.replace(cfg, feedback_weight=weight, feedback_terms=terms)
    again = feedback_round(
        index, [T], k, q, first[:docs], fusion, dense[0], (fresh, question, sparse[0]), one_round
    )
    return first if again is None else again


def greedy(index: Index, ids, budget: int, max_overlap: float = 0.8, n: int = 5) -> list[int]:
    nodes = index.engine.state.snapshot.nodes
    out, seen, used = [], set(), 0
    for i in ids.tolist():
        t = int(nodes.tokens[nodes.rows([i])[0]])
        if used + t > budget:
            continue
        sh = shingles(nodes.text_of([i])[0], n)
        if max_overlap <= 1 and sh and len(sh & seen) >= max_overlap * len(sh):
            continue
        seen |= sh
        out.append(i)
        used += t
    return out


def test_hybrid_is_served_with_typed_params(index):
    assert "hybrid" in index.modes
    # Served with the parameter every mode takes (engine.rerank.with_rerank).
    served = index.engine.mode_params["hybrid"]
    assert served.field_names() == [*HybridParams.field_names(), "rerank_candidates"]
    assert HybridParams.field_names() == [
        "method",
        "rrf_k",
        "dense_weight",
        "adaptive",
        "adaptive_strength",
        "adaptive_depth",
        "complete_scores",
        "max_overlap",
        "term_decay",
        "feedback_docs",
        "feedback_weight",
        "feedback_terms",
        "feedback_term_weight",
    ]
    for bad in (
        {"rrf_k": -1},
        {"dense_weight": 1.5},
        {"method": "mean"},
        {"adaptive": "vote"},
        {"adaptive_strength": -1.0},
        {"adaptive_depth": 0},
        {"max_overlap": 0},
        {"term_decay": 0},
        {"term_decay": 1.5},
        {"feedback_docs": -1},
        {"feedback_weight": -0.5},
        {"feedback_weight": float("inf")},
        {"feedback_docs": 1.5},
        {"rrf_k": "60"},
        {"complete_scores": 1},
        {"nonsense": 1},
    ):
        with pytest.raises(QueryError):
            index.query(QUESTION, mode="hybrid", **bad)


@pytest.mark.parametrize("budget", [0, 300, 2000])
def test_hybrid_packs_the_fusion_of_dense_and_bm25(index, budget):
    result = index.query(QUESTION, mode="hybrid", budget_tokens=budget)
    k = index.engine.config.search.top_k
    assert [h.id for h in result.nodes] == greedy(index, fused(index, QUESTION, k), budget)
    assert all(h.kind == "T" for h in result.nodes)
    assert sum(h.tokens for h in result.nodes) <= budget
    assert all(a.score >= b.score for a, b in itertools.pairwise(result.nodes))
    report = result.report
    assert report["tokens_by_kind"] == ({"T": report["tokens"]} if result.nodes else {})
    assert report["fusion"]["method"] == index.engine.config.fusion.method
    dense, sparse, _ = candidates(index, QUESTION, k)
    assert report["fusion"]["dense"] == len(dense[0])
    assert report["fusion"]["sparse"] == len(sparse[0])
    assert report["fusion"]["feedback"] == 1  # the default takes one feedback round


def test_hybrid_params_override_the_config(index):
    want = fused(index, QUESTION, 20, method="rrf", w=0.8, rrf_k=10)
    got = index.query(QUESTION, mode="hybrid", top_k=20, method="rrf", rrf_k=10, dense_weight=0.8)
    assert [h.id for h in got.nodes] == greedy(index, want, 2000)
    want = fused(index, QUESTION, 20, method="score", w=0.3)
    got = index.query(QUESTION, mode="hybrid", top_k=20, method="score", dense_weight=0.3)
    assert [h.id for h in got.nodes] == greedy(index, want, 2000)
    for decay in (1.0, 0.5):
        want = fused(index, QUESTION, 20, method="score", decay=decay)
        got = index.query(QUESTION, mode="hybrid", top_k=20, method="score", term_decay=decay)
        assert [h.id for h in got.nodes] == greedy(index, want, 2000)
    assert got.report["fusion"]["method"] == "score"
    for docs, weight, terms in ((0, 0.3, 3), (2, 1.0, 0), (3, 0.0, 0), (1, 0.0, 3), (2, 0.3, 5)):
        want = fused(index, QUESTION, 20, docs=docs, weight=weight, terms=terms)
        got = index.query(
            QUESTION,
            mode="hybrid",
            top_k=20,
            feedback_docs=docs,
            feedback_weight=weight,
            feedback_terms=terms,
        )
        assert [h.id for h in got.nodes] == greedy(index, want, 2000)
        took = docs > 0 and (weight > 0 or terms > 0)
        assert got.report["fusion"].get("feedback", 0) == int(took)
        assert len(got.report["fusion"].get("feedback_terms", [])) == (terms if took else 0)
    for method in ("rrf", "score"):
        want = fused(index, QUESTION, 20, method=method, complete=False)
        got = index.query(QUESTION, mode="hybrid", top_k=20, method=method, complete_scores=False)
        assert [h.id for h in got.nodes] == greedy(index, want, 2000)


def test_feedback_reaches_the_passage_the_first_one_names(tmp_path):
    """A two-hop question: the second passage shares no word with the question, only a name
    with the first passage; the feedback round finds it, one round does not."""
    filler = [f"Club {i}: which winner will play for a cup of club {i}?" for i in range(12)]
    docs = [
        {"doc_id": "award.md", "text": "The 2031 Golden Boot went to Tomas Vrielink."},
        {"doc_id": "player.md", "text": "Tomas Vrielink is a striker for Ostrava Rangers."},
        *({"doc_id": f"f{i}.md", "text": t} for i, t in enumerate(filler)),
    ]
    # 1,024 hashed dimensions: few collisions, so a cosine is a count of shared words
    embedder = HashingEmbedder(1024)
    ix = Index.create(tmp_path / "hop", config(), embedder=embedder, llm="extractive")
    ix.insert(docs)
    question = "Which club did the winner of the 2031 Golden Boot play for?"
    args = {"mode": "hybrid", "top_k": 3, "budget_tokens": 4000}
    one = ix.query(question, feedback_docs=0, **args)
    two = ix.query(question, feedback_docs=1, feedback_weight=2.0, **args)
    assert ["award.md"] in [h.docs for h in one.nodes]
    assert ["player.md"] not in [h.docs for h in one.nodes]
    assert ["player.md"] in [h.docs for h in two.nodes]


def test_sparse_feedback_reaches_the_passage_the_first_one_names(tmp_path):
    """The same two hops with the dense feedback off: the best passage's rare words (the
    winner's name) join the BM25 query and bring the second passage; without them it is
    not found."""
    filler = [f"Club {i}: which winner will play for a cup of club {i}?" for i in range(12)]
    docs = [
        {"doc_id": "award.md", "text": "The 2031 Golden Boot went to Tomas Vrielink."},
        {"doc_id": "player.md", "text": "Tomas Vrielink is a striker for Ostrava Rangers."},
        *({"doc_id": f"f{i}.md", "text": t} for i, t in enumerate(filler)),
    ]
    ix = Index.create(tmp_path / "hop", config(), embedder=HashingEmbedder(1024), llm="extractive")
    ix.insert(docs)
    question = "Which club did the winner of the 2031 Golden Boot play for?"
    args = {"mode": "hybrid", "top_k": 3, "budget_tokens": 4000, "feedback_weight": 0.0}
    without = ix.query(question, feedback_terms=0, **args)
    with_terms = ix.query(question, **args)  # the default: 3 terms of the best chunk
    assert ["player.md"] not in [h.docs for h in without.nodes]
    assert ["player.md"] in [h.docs for h in with_terms.nodes]
    # the question's words are never feedback terms; the winner's name is
    terms = with_terms.report["fusion"]["feedback_terms"]
    assert {"toma", "vrielink"} <= set(terms) and not set(terms) & set(analyze(question))


def test_one_sided_hybrid_without_dedup_is_the_baseline(index):
    for method, baseline in (("dense", "naive"), ("sparse", "bm25")):
        got = index.query(QUESTION, mode="hybrid", method=method, max_overlap=2.0)
        want = index.query(QUESTION, mode=baseline)
        assert [h.id for h in got.nodes] == [h.id for h in want.nodes]


def test_hybrid_skips_a_repeated_document(tmp_path, hashing_embedder, sample_docs):
    ix = Index.create(tmp_path / "dup", config(), embedder=hashing_embedder, llm="extractive")
    doc = next(d for d in sample_docs if d["doc_id"] == "observatory/sundra_array_spectrograph.md")
    ix.insert([*sample_docs, {"doc_id": "copy.md", "text": doc["text"]}])
    query = "Sundra Array Spectrograph gratings"
    naive = ix.query(query, mode="naive", budget_tokens=4000).nodes
    texts = [h.text for h in naive]
    assert len(texts) > len(set(texts))  # the baseline spends budget on both copies
    result = ix.query(query, mode="hybrid", budget_tokens=4000)
    texts = [h.text for h in result.nodes]
    assert len(texts) == len(set(texts))
    assert result.report["fusion"]["duplicates"] >= 1
    kept = ix.query(query, mode="hybrid", budget_tokens=4000, max_overlap=2.0)
    assert len({h.text for h in kept.nodes}) < len(kept.nodes)


def test_hybrid_follows_inserts_and_deletes(index, sample_docs):
    index.query(QUESTION, mode="hybrid")  # builds the chunk postings of this version
    index.insert([{"doc_id": "new.md", "text": "The quokkaberry harvest began in Brekkvik."}])
    hits = index.query("quokkaberry harvest", mode="hybrid", method="sparse").nodes
    assert [h.docs for h in hits] == [["new.md"]]
    assert index.engine.state.views["hybrid"].sparse.built(T)  # advanced at the commit
    index.delete(["new.md"])
    assert index.query("quokkaberry", mode="hybrid", method="sparse").nodes == []
    result = index.query(QUESTION, mode="hybrid")
    want = fused(index, QUESTION, index.engine.config.search.top_k)
    assert [h.id for h in result.nodes] == greedy(index, want, 2000)


def test_hybrid_survives_reopen(tmp_path, hashing_embedder, sample_docs):
    path = tmp_path / "idx"
    ix = Index.create(path, config(), embedder=hashing_embedder, llm="extractive")
    ix.insert(sample_docs[:10])
    before = [h.id for h in ix.query(QUESTION, mode="hybrid").nodes]
    again = Index.open(path, embedder=hashing_embedder, llm="extractive")
    assert [h.id for h in again.query(QUESTION, mode="hybrid").nodes] == before


def test_every_mode_reports_tokens_by_kind(tmp_path, hashing_embedder, sample_docs):
    cfg = IndexConfig()
    cfg.heterograph.enabled = False
    ix = Index.create(tmp_path / "h", cfg, embedder=hashing_embedder, llm="extractive")
    ix.insert(sample_docs)
    for mode in ("naive", "bm25", "hybrid", "collapsed", "detailed", "summarized"):
        result = ix.query(QUESTION, mode=mode, budget_tokens=1500)
        by_kind = result.report["tokens_by_kind"]
        assert sum(by_kind.values()) == result.report["tokens"] <= 1500, mode
        for kind, tokens in by_kind.items():
            assert tokens == sum(h.tokens for h in result.nodes if h.kind == kind)


def _answers(
    index: Index, questions: list[str], mode: str = "hybrid"
) -> list[list[tuple[int, float]]]:
    return [
        [(h.id, round(h.score, 6)) for h in index.query(q, mode=mode, budget_tokens=800).nodes]
        for q in questions
    ]


def test_lists_searched_side_by_side_answer_as_one_after_the_other(index, monkeypatch):
    """The dense list on a worker thread (``PARALLEL_LISTS_MIN``), or taken back by the
    calling thread when every worker is busy: the same hits as searched in turn."""
    import threading

    import graphstrata.engine.modes.hybrid as hybrid

    questions = [QUESTION, "Meridian Optics lenses", "observatory funding council"]
    monkeypatch.setattr(hybrid, "PARALLEL_LISTS_MIN", 10**12)
    in_turn = _answers(index, questions)
    monkeypatch.setattr(hybrid, "PARALLEL_LISTS_MIN", 0)
    searched_on = []
    real = hybrid.vector_candidates

    def recorded(*args, **kwargs):
        searched_on.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(hybrid, "vector_candidates", recorded)
    for _ in range(10):  # a worker that has not started when BM25 is done is taken back
        assert _answers(index, questions) == in_turn
        if any(name.startswith("gs-dense") for name in searched_on):
            break
    assert any(name.startswith("gs-dense") for name in searched_on)
    # Every worker busy: the queries do not wait for them.
    release = threading.Event()
    pool = hybrid._pool()
    blockers = [pool.submit(release.wait) for _ in range(pool._max_workers)]
    try:
        searched_on.clear()
        assert _answers(index, questions) == in_turn
        assert not any(name.startswith("gs-dense") for name in searched_on)
        assert len(searched_on) == 2 * len(questions)
    finally:
        release.set()
        for b in blockers:
            b.result()


def test_summaries_bm25_list_is_searched_beside_the_chunks(
    tmp_path, hashing_embedder, sample_docs, monkeypatch
):
    """``collapsed`` searches chunks and summaries: the worker takes the dense lists and the
    summaries' BM25 list (the kind with fewer documents), the calling thread the chunks'
    BM25 list; the hits are those of searching all four in turn."""
    import threading

    import graphstrata.engine.modes.hybrid as hybrid

    cfg = config()
    cfg.hierarchy.enabled = True
    index = Index.create(tmp_path / "h", cfg, embedder=hashing_embedder, llm="extractive")
    index.insert(sample_docs)
    questions = [QUESTION, "Meridian Optics lenses", "observatory funding council"]
    monkeypatch.setattr(hybrid, "PARALLEL_LISTS_MIN", 10**12)
    in_turn = _answers(index, questions, "collapsed")
    nodes = index.engine.state.snapshot.nodes
    assert nodes.ids_of_kind(int(NodeKind.L)).size  # there are summaries to search
    monkeypatch.setattr(hybrid, "PARALLEL_LISTS_MIN", 0)
    kinds_on: dict[int, set[str]] = {}
    real = SparseIndex.search_kind
    worker_searched = threading.Event()

    def recorded(self, text, kind, k):
        name = threading.current_thread().name[:8]
        kinds_on.setdefault(int(kind), set()).add(name)
        if name == "gs-dense":
            worker_searched.set()
        elif int(kind) == int(NodeKind.T):
            # The caller waits (at most 5 s) for the worker to start before finishing its
            # own list: otherwise it takes back a worker's part that has not started, which
            # on a loaded machine happened in all 10 tries once (after the Ray tests).
            worker_searched.wait(5)
        return real(self, text, kind, k)

    monkeypatch.setattr(SparseIndex, "search_kind", recorded)
    for _ in range(10):  # a worker that has not started when BM25 is done is taken back
        assert _answers(index, questions, "collapsed") == in_turn
        if "gs-dense" in kinds_on.get(int(NodeKind.L), set()):
            break
    assert "gs-dense" in kinds_on[int(NodeKind.L)]
    assert kinds_on[int(NodeKind.T)] == {threading.current_thread().name[:8]}


def test_packing_reads_only_the_texts_it_compares(index, monkeypatch):
    # Of the fused candidates, only those that fit the budget when reached are read (their
    # shingles are compared), each once; the hits reuse those texts.
    index.query(QUESTION, mode="hybrid", budget_tokens=300)  # the postings are built
    nodes = index.engine.state.snapshot.nodes
    real = type(nodes).texts_at
    read: list[int] = []

    def counting(self, rows):
        read.extend(np.asarray(rows).tolist())
        return real(self, rows)

    monkeypatch.setattr(type(nodes), "texts_at", counting)
    result = index.query(QUESTION, mode="hybrid", budget_tokens=300, feedback_terms=0)
    info = result.report["fusion"]
    assert result.nodes
    assert len(read) == len(set(read)) == len(result.nodes) + info["duplicates"]
    assert len(read) < info["dense"] + info["sparse"] - info["both"]
    # sparse feedback reads the feedback candidates' texts once more (feedback_docs: 1)
    read.clear()
    again = index.query(QUESTION, mode="hybrid", budget_tokens=300)
    assert len(read) == len(again.nodes) + again.report["fusion"]["duplicates"] + 1
