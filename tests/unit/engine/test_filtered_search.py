"""Metadata filters in every mode, against oracles (decision 0025, "Measurement").

One index of 200 synthetic documents (every component; hashing embedder, extractive LLM;
every vector kind below ``vector_exact_below``, so unfiltered vector searches are exact).
Oracles, per mode:

* ``naive``: an index built from the matching documents only (the same chunks and vectors:
  chunking and embedding are per document), and the oracle view below;
* ``bm25``, ``hybrid``, ``collapsed``, ``detailed``, ``summarized``: the same view searching
  without a filter through *oracle indexes*: an unfiltered search asked for every node of
  the kinds, its results restricted to the allowed nodes (computed here from ``matches``
  over each document, by the rule of ``engine.allowed``), then cut to k. This is the
  definition: a filter selects, BM25 statistics and fusion are those of the whole index
  (an index of the matching documents only would change the BM25 idf, so it is not the
  oracle there);
* ``graph``: every returned node is allowed, a filter keeping everything returns the
  unfiltered hits, and the walk's entry lists equal the oracle indexes' lists.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from graphstrata.bindings.api import Index
from graphstrata.engine.allowed import ANY_DOC_KINDS
from graphstrata.engine.component import Query
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.filtered import FilteredVectors
from graphstrata.engine.filters import matches, parse_filter
from graphstrata.engine.params import QueryError
from graphstrata.engine.sparse.index import SparseIndex
from graphstrata.engine.types import NodeKind
from graphstrata.engine.vectors import VectorIndex
from tests.helpers.filter_corpus import corpus

N_DOCS = 200
QUESTIONS = (
    "Who calibrated the telescope of the Halvorsen Observatory?",
    "Which spectrograph did Ada Morrow repair near Kestrel lake?",
)
FILTERS = {
    "one document (0.5%)": {"doc_id": "doc-0007"},
    "years 2000-2003 (~11%)": {"year": {"$gte": 2000, "$lt": 2004}},
    "half": {"source": {"$in": ["news", "blog"]}},
    "or of tags and dates": {"$or": [{"tags": "optics"}, {"published": {"$lt": "1995-01-01"}}]},
    "not": {"$and": [{"source": {"$nin": ["wiki"]}}, {"year": {"$ne": 1990}}]},
}
ORACLE_MODES = ("naive", "bm25", "hybrid", "collapsed", "detailed", "summarized")


@pytest.fixture(scope="module")
def index(tmp_path_factory, hashing_embedder) -> Index:
    ix = Index.create(
        tmp_path_factory.mktemp("filters") / "idx",
        IndexConfig(),
        embedder=hashing_embedder,
        llm="extractive",
    )
    ix.insert(corpus(N_DOCS))
    return ix


def allowed_ids(index: Index, flt: dict, kinds) -> np.ndarray:
    """The allowed nodes of ``kinds``, from ``matches`` over each document's record."""
    snap = index.engine.state.snapshot
    keep = {
        d["key"]
        for d in snap.docs.to_pylist()
        if matches({**json.loads(d["metadata"]), "doc_id": d["doc_id"], "title": d["title"]}, flt)
    }
    nodes = snap.nodes
    ids = nodes.ids_of_kind(*kinds)
    out = []
    for node, kind, keys in zip(ids, nodes.kind[nodes.rows(ids)], nodes.docs_of(ids), strict=True):
        hits = [k in keep for k in keys]
        if any(hits) if int(kind) in ANY_DOC_KINDS else bool(hits) and all(hits):
            out.append(int(node))
    return np.asarray(out, np.int64)


class OracleVectors(VectorIndex):
    """Every vector of the kinds searched without a filter, then restricted and cut to k."""

    def __init__(self, inner: VectorIndex, index: Index, flt: dict):
        vars(self).update(vars(inner))
        self.inner, self.index, self.flt = inner, index, flt

    def search(self, queries, kinds, k):
        ids, sims = self.inner.search(queries, kinds, self.inner.count(kinds))
        allowed = allowed_ids(self.index, self.flt, kinds)
        keep = [np.isin(i, allowed) for i in ids]
        return [i[m][:k] for i, m in zip(ids, keep, strict=True)], [
            s[m][:k] for s, m in zip(sims, keep, strict=True)
        ]


class OracleSparse(SparseIndex):
    """Every BM25 match of a kind without a filter, then restricted and cut to k."""

    def __init__(self, inner: SparseIndex, index: Index, flt: dict):
        super().__init__(inner.parts, inner.kinds, inner.k1, inner.b)
        self.index, self.flt = index, flt

    def search_kind(self, text, kind, k, within=None):
        ids, scores = SparseIndex.search_kind(self, text, kind, 1 << 20)
        keep = np.isin(ids, allowed_ids(self.index, self.flt, [kind]))
        return ids[keep][:k], scores[keep][:k]


def oracle_hits(index: Index, mode: str, question: str, flt: dict, top_k: int | None = None):
    """The hits of ``mode``'s view searching the oracle indexes, without a filter."""
    engine = index.engine
    view = copy.copy(engine.state.views[mode])
    if hasattr(view, "vectors"):
        view.vectors = OracleVectors(view.vectors, index, flt)
    if hasattr(view, "sparse"):
        view.sparse = OracleSparse(view.sparse, index, flt)
    vector = np.asarray(engine.embedder.embed([question]), np.float32)[0]
    cfg = engine.config.search
    query = Query(
        question,
        vector,
        cfg.budget_tokens,
        top_k or cfg.top_k,
        engine.parse_params(mode, {}),
        None,
        {},
    )
    return view.search(mode, query)


def same_hits(got, expected) -> None:
    assert [(h.id, h.kind, h.docs) for h in got] == [(h.id, h.kind, h.docs) for h in expected]
    np.testing.assert_allclose([h.score for h in got], [h.score for h in expected], rtol=1e-5)


@pytest.mark.parametrize("mode", ORACLE_MODES)
@pytest.mark.parametrize("name", list(FILTERS))
def test_each_mode_equals_its_oracle(index, mode, name):
    flt = FILTERS[name]
    for question in QUESTIONS:
        got = index.query(question, mode, filter=flt)
        assert got.nodes, (mode, name)
        same_hits(got.nodes, oracle_hits(index, mode, question, flt))
        allowed = set(allowed_ids(index, flt, [int(k) for k in NodeKind]).tolist())
        assert {h.id for h in got.nodes} <= allowed
        assert got.report["filter"]["documents"] == sum(
            matches({**d["metadata"], "doc_id": d["doc_id"], "title": d["title"]}, flt)
            for d in corpus(N_DOCS)
        )


def test_naive_equals_an_index_of_the_matching_documents(index, tmp_path, hashing_embedder):
    flt = FILTERS["years 2000-2003 (~11%)"]
    cfg = IndexConfig()
    cfg.hierarchy.enabled = cfg.heterograph.enabled = False
    only = Index.create(tmp_path / "only", cfg, embedder=hashing_embedder, llm="extractive")
    only.insert([d for d in corpus(N_DOCS) if matches({**d["metadata"], **d}, flt)])
    for question in QUESTIONS:
        got = index.query(question, "naive", filter=flt, top_k=8)
        expected = only.query(question, "naive", top_k=8)
        assert [(h.text, h.docs) for h in got.nodes] == [(h.text, h.docs) for h in expected.nodes]
        np.testing.assert_allclose(
            [h.score for h in got.nodes], [h.score for h in expected.nodes], rtol=1e-5
        )
        assert len(got.nodes) == 8  # candidates of other documents took no slot


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_both_vector_methods_equal_the_oracle(index, share):
    """Exact over the allowed rows (share 1) and the widened ANN search (share 0)."""
    state = index.engine.state
    for name, flt in FILTERS.items():
        allowed = state.doc_names.allowed(parse_filter(flt), share)
        filtered = FilteredVectors(state.vectors, allowed, state.snapshot)
        oracle = OracleVectors(state.vectors, index, flt)
        q = np.asarray(index.engine.embedder.embed(list(QUESTIONS)), np.float32)
        for kinds in ([int(NodeKind.T)], [int(NodeKind.T), int(NodeKind.L)], [int(NodeKind.S)]):
            got, want = filtered.search(q, kinds, 7), oracle.search(q, kinds, 7)
            for g, w in zip(got[0], want[0], strict=True):
                assert g.tolist() == w.tolist(), (name, kinds)
            assert set(filtered.methods.values()) == {"exact" if share else "ann"}


def test_graph_mode_keeps_to_the_filter(index):
    everything = {"year": {"$gte": 0}}
    for question in QUESTIONS:
        plain = index.query(question, "graph")
        same_hits(index.query(question, "graph", filter=everything).nodes, plain.nodes)
        for name, flt in FILTERS.items():
            got = index.query(question, "graph", filter=flt)
            allowed = set(allowed_ids(index, flt, [int(k) for k in NodeKind]).tolist())
            assert got.nodes, name
            assert {h.id for h in got.nodes} <= allowed, name
            for hit in got.nodes:
                assert all(matches({**d["metadata"], **d}, flt) for d in hit.documents)
            trace = index.query(question, "graph", filter=flt, trace=True).report["trace"]
            walked = {e["id"] for e in trace["entry_points"]}
            walked |= {e[end] for e in trace["walk_edges"] for end in ("src", "dst")}
            assert walked <= allowed, name
            view = index.engine.state.views["graph"]
            oracle = copy.copy(view)
            oracle.vectors = OracleVectors(view.vectors, index, flt)
            oracle.sparse = OracleSparse(view.sparse, index, flt)
            vector = np.asarray(index.engine.embedder.embed([question]), np.float32)[0]
            query = Query(
                question, vector, 2000, 50, index.engine.parse_params("graph", {}), None, {}
            )
            filtered = copy.copy(query)
            filtered.allowed = index.engine.state.doc_names.allowed(parse_filter(flt), 0.05)
            for (gp, gs), (op, osc) in zip(
                view._vector_lists(filtered, 10), oracle._vector_lists(query, 10), strict=True
            ):
                assert gp.tolist() == op.tolist()
                np.testing.assert_allclose(gs, osc, rtol=1e-5)
            for (gp, _), (op, _) in zip(
                view._sparse_lists(question, 10, filtered),
                oracle._sparse_lists(question, 10),
                strict=True,
            ):
                assert gp.tolist() == op.tolist()


def test_every_hit_carries_its_documents(index):
    meta = {d["doc_id"]: d for d in corpus(N_DOCS)}
    for mode in index.modes:
        for hit in index.query(QUESTIONS[0], mode).nodes:
            assert [d["doc_id"] for d in hit.documents] == hit.docs
            for d in hit.documents:
                assert d["title"] == meta[d["doc_id"]]["title"]
                assert d["metadata"] == meta[d["doc_id"]]["metadata"]
            assert hit.to_dict()["documents"] == hit.documents


def test_filters_in_batches_and_answers(index):
    flt = FILTERS["one document (0.5%)"]
    results = index.query_batch(list(QUESTIONS), "hybrid", filter=flt)
    assert all({h.docs[0] for h in r.nodes} == {"doc-0007"} for r in results)
    answer = index.answer(QUESTIONS[0], "naive", filter=flt)
    assert {h.docs[0] for h in answer.nodes} == {"doc-0007"}
    assert index.query(QUESTIONS[0], "naive", filter={"year": 1800}).nodes == []
    with pytest.raises(QueryError, match="unknown operator"):
        index.query(QUESTIONS[0], "naive", filter={"year": {"$like": 1}})


def test_a_summary_citing_a_sample_is_never_allowed(index):
    """A summary at ``summary_docs_max`` cites a sample of its documents (decision 0011)."""
    state = index.engine.state
    every = state.doc_names.allowed(parse_filter({}), 0.05)
    capped = state.doc_names.allowed(parse_filter({}), 0.05, summary_docs_max=12)
    lay, chunk = int(NodeKind.L), int(NodeKind.T)
    summaries = every.ids([lay])
    cited = [len(d) for d in state.snapshot.nodes.docs_of(summaries)]
    assert summaries.size and max(cited) >= 12 and min(cited) < 12
    kept = [i for i, c in zip(summaries.tolist(), cited, strict=True) if c < 12]
    assert capped.ids([lay]).tolist() == kept
    assert capped.ids([chunk]).tolist() == every.ids([chunk]).tolist()
    assert every.documents == N_DOCS
