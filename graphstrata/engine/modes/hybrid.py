"""``hybrid``: dense and BM25 candidates over the chunks, fused, deduplicated, packed.

For a query, the ``top_k`` nearest chunks (the ``naive`` candidates) and the ``top_k`` best
BM25 chunks (the ``bm25`` candidates, from the version's ``SparseIndex``) are fused into one
ranking (``FusionConfig.method``: a convex combination of min-max normalized scores by
default, re-ranked so that query terms matched above count less, or reciprocal-rank fusion;
``core/fusion.py``), then fused once more after a feedback round (the query vector moved
toward the best fused chunk searches again, and that chunk's heaviest terms join the BM25
query: ``FusionConfig.feedback_docs``, ``feedback_terms``; decision 0037), then packed
greedily under the budget, skipping near-duplicates of what is already packed
(``pack_distinct_hits``). The fusion defaults are measured in
benchmarks/results/retrieval.md ("Fusion choice").

``fused_candidates`` and ``fusion_config`` are shared with the hierarchy modes, which fuse
the same two lists over chunks and summaries (without the feedback round by default:
``FusionConfig.feedback_in_hierarchy``). The component keeps no state on disk; its
sparse postings are shared with the other views of the version and advanced per commit
(docs/architecture.md, "Search modes and parameters").
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import numpy as np

from graphstrata.core import sets
from graphstrata.core.fusion import (
    coverage_order,
    feedback_vector,
    query_dense_weight,
    rrf,
    score_fusion,
)
from graphstrata.engine.component import (
    ChangeSet,
    Component,
    ComponentView,
    DocNames,
    Hit,
    Query,
    UpdateContext,
    VersionState,
)
from graphstrata.engine.config import FusionConfig, IndexConfig
from graphstrata.engine.filtered import restricted_sparse, restricted_vectors
from graphstrata.engine.modes.packing import (
    pack_distinct_hits,
    record_ranked,
    vector_candidates,
)
from graphstrata.engine.params import ModeParams, params_from
from graphstrata.engine.sparse.analysis import SparseQuery, WeightedTerms, query_weights
from graphstrata.engine.sparse.index import SparseIndex
from graphstrata.engine.store import Snapshot
from graphstrata.engine.types import NodeKind
from graphstrata.engine.vectors import VectorIndex

__all__ = [
    "HybridComponent",
    "HybridParams",
    "HybridView",
    "fused_candidates",
    "fusion_config",
]

_T = int(NodeKind.T)

#: Parameters of ``hybrid``: the query fields of ``FusionConfig``.
HybridParams = params_from(
    "HybridParams", FusionConfig, doc="Parameters of ``hybrid``: the fusion fields."
)


def fusion_config(params: Any, config: FusionConfig, hierarchy: bool = False) -> FusionConfig:
    """``config`` with the fusion fields a query's parameters set (any ``ModeParams``;
    anything else, e.g. a plain dict from a test, leaves ``config`` as it is).

    For the hierarchy modes (``hierarchy``) the feedback round is off unless
    ``config.feedback_in_hierarchy`` or the query's ``feedback_docs`` turns it on.
    """
    if hierarchy and not config.feedback_in_hierarchy:
        config = dataclasses.replace(config, feedback_docs=0)
    return params.over(config) if isinstance(params, ModeParams) else config


def fused_candidates(
    snapshot: Snapshot,
    vectors: VectorIndex,
    sparse: SparseIndex,
    query: Query,
    kinds: Sequence[int],
    fusion: FusionConfig,
    report: dict[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``query.top_k`` dense and the ``query.top_k`` BM25 candidates of ``kinds``, fused.

    With ``fusion.complete_scores`` every candidate of the union gets both its cosine (from
    its stored vector) and its BM25 score, and the two complete lists are fused (RRF ranks
    them by each score); otherwise each list is fused as retrieved, a candidate missing
    from one list getting nothing from it. Score fusion of complete lists is re-ranked by
    query-term coverage (``fusion.term_decay`` below 1; ``core.fusion.coverage_order``).
    The fused methods then take a feedback round (``fusion.feedback_docs`` above 0): the
    query vector moved toward the best fused candidates (``core.fusion.feedback_vector``;
    ``feedback_weight`` 0: not moved) searches a second dense top-k; their heaviest terms
    (``SparseIndex.feedback_terms``; ``feedback_terms`` 0: none) join the BM25 query at
    ``feedback_term_weight`` each (``analysis.WeightedTerms``) for a second BM25 top-k; the
    unions of both dense and both BM25 lists, scored by the moved vector and the expanded
    query, are fused again. A round that changes neither side is not run.

    Parameters
    ----------
    snapshot, vectors, sparse:
        The version's snapshot, vector index and sparse index (which must index ``kinds``).
    query:
        The query (text, vector, ``top_k``).
    kinds:
        Node kinds searched.
    fusion:
        How to fuse (``FusionConfig``).
    report:
        When given, ``dense``, ``sparse`` and ``both`` (candidates in both lists of the
        first round) and ``feedback`` (queries that took a feedback round) are added up in
        it, ``feedback_terms`` lists the last round's added terms, and ``dense_weight`` is
        the weight the last round gave the dense list (``fusion.adaptive``: per query).

    Returns
    -------
    tuple of numpy.ndarray
        Candidate ids (int64) and fused scores (float64), best first; the first
        ``RANKED_DEPTH`` ids are kept as ``query.report["ranked"]`` (``record_ranked``).
    """
    ids, scores = _candidates(snapshot, vectors, sparse, query, kinds, fusion, report)
    record_ranked(query.report, ids)
    return ids, scores


def _candidates(
    snapshot: Snapshot,
    vectors: VectorIndex,
    sparse: SparseIndex,
    query: Query,
    kinds: Sequence[int],
    fusion: FusionConfig,
    report: dict[str, Any] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """``fused_candidates`` before the ranked list is recorded."""
    k = int(query.top_k)
    empty = np.zeros(0, np.int64), np.zeros(0, np.float64)
    if fusion.method == "dense":
        dense = vector_candidates(vectors, query.vector, kinds, k)
        _tally(report, dense, empty)
        return np.asarray(dense[0], np.int64), np.asarray(dense[1], np.float64)
    # The question analyzed once: both rounds' lists and scores, and the feedback terms.
    text = WeightedTerms.of(query.text)
    dense = sparse_list = empty
    if fusion.method == "sparse":
        sparse_list = sparse.search(text, kinds, k)
    else:
        dense, sparse_list = _both_lists(vectors, sparse, query, text, kinds, k)
    _tally(report, dense, sparse_list)
    if fusion.method == "sparse":
        return np.asarray(sparse_list[0], np.int64), np.asarray(sparse_list[1], np.float64)
    ids, scores = _fused(snapshot, sparse, text, query.vector, dense, sparse_list, fusion, report)
    top = ids[: fusion.feedback_docs]
    if top.size == 0:
        return ids, scores
    vector = query.vector
    bm25_query: SparseQuery = text
    dense_round: _Listed = dense
    sparse_round: _Listed = sparse_list
    if fusion.feedback_weight > 0.0:
        vector = feedback_vector(query.vector, snapshot.vectors.get(top), fusion.feedback_weight)
        again = vector_candidates(vectors, vector, kinds, k)[0]
        dense_round = (sets.union(dense[0], again).astype(np.int64), None)  # scored by _fused
    extra: list[str] = []
    if fusion.feedback_terms > 0:
        asked = query_weights(text)  # left out of the terms, then kept
        texts = snapshot.nodes.text_of(top)
        extra = sparse.feedback_terms(top, texts, fusion.feedback_terms, asked)
    if extra:
        bm25_query = WeightedTerms.expanded(asked, extra, fusion.feedback_term_weight)
        more = sparse.search(bm25_query, kinds, k)[0]
        sparse_round = (sets.union(sparse_list[0], more).astype(np.int64), None)
    if vector is query.vector and not extra:
        return ids, scores
    if report is not None:
        report["feedback"] = report.get("feedback", 0) + 1
        report["feedback_terms"] = extra
    return _fused(snapshot, sparse, bm25_query, vector, dense_round, sparse_round, fusion, report)


#: The dense list of a fused search is searched on a worker thread beside the BM25 list
#: (usearch and the BM25 kernels release the GIL) when the kinds searched hold at least this
#: many vectors. At a million chunks the two lists of a ``collapsed`` query took 5.9 ms one
#: after the other and 3.65 ms side by side (warm p50 of 150 queries,
#: a one-off script, not kept; whole queries: docs/architecture.md). Whole queries,
#: one process alternating (a one-off script, not kept): on the 10k-chunk scale index (11k
#: chunk and summary vectors) ``collapsed`` 5.78 -> 5.32 ms, ``hybrid`` 7.22 -> 7.00; at
#: 100k 6.97 -> 6.69 and 8.62 -> 8.46. Smaller collections were not measured and are
#: searched in turn.
PARALLEL_LISTS_MIN = 10_000
_dense_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()

_Ranked = tuple[np.ndarray, np.ndarray]
#: A list to fuse: ids and their scores, or None where ``_fused`` scores them.
_Listed = tuple[np.ndarray, np.ndarray | None]


def _tally(report: dict[str, Any] | None, dense: _Ranked, sparse_list: _Ranked) -> None:
    """Add the two first-round lists' sizes and overlap to ``report`` (when given)."""
    if report is None:
        return
    report["dense"] = report.get("dense", 0) + int(dense[0].size)
    report["sparse"] = report.get("sparse", 0) + int(sparse_list[0].size)
    both = sets.intersection(dense[0], sparse_list[0]).size
    report["both"] = report.get("both", 0) + int(both)


def _both_lists(
    vectors: VectorIndex,
    sparse: SparseIndex,
    query: Query,
    text: SparseQuery,
    kinds: Sequence[int],
    k: int,
) -> tuple[_Ranked, _Ranked]:
    """The dense (``query``'s vector) and the BM25 (``text``, its question analyzed) top-``k``
    lists of ``kinds``, side by side when large.

    The worker searches the dense lists, then the BM25 lists of every kind but the one
    with the most documents, which the calling thread searches meanwhile. On the 1M-chunk
    scale index, searched alone (warm p50s of 200 searches each, load 0.4-0.7), the chunks'
    BM25 list took 2.61 ms and the summaries' 0.47 ms (a one-off script, not kept), the two
    dense lists 0.74 + 0.69 ms at ``expansion_search`` 64 (a one-off script, not kept).
    Side by side the threads slow each other, and the gain is small: ``collapsed`` p50
    4.30 / 5.37 ms against 4.65 / 5.42 ms with both BM25 lists on the caller (two runs, one
    process alternating, a one-off script, not kept).
    The worker comes from a shared pool of one thread per core; when every worker is busy
    (a server's concurrent queries) the calling thread takes its part back and searches it
    itself, so a query never waits in the pool's queue.
    """
    if vectors.count(kinds) < PARALLEL_LISTS_MIN:
        return vector_candidates(vectors, query.vector, kinds, k), sparse.search(text, kinds, k)
    mine = max(kinds, key=lambda kind: sparse.part(kind).n_live)
    others = [kind for kind in kinds if kind != mine]
    future = _pool().submit(_worker_lists, vectors, sparse, query, text, kinds, others, k)
    found = sparse.search_kind(text, mine, k)
    if future.cancel():  # not started: every worker was busy
        dense, theirs = _worker_lists(vectors, sparse, query, text, kinds, others, k)
    else:
        dense, theirs = future.result()
    return dense, sparse.merged([found, *theirs], k)


def _worker_lists(
    vectors: VectorIndex,
    sparse: SparseIndex,
    query: Query,
    text: SparseQuery,
    kinds: Sequence[int],
    sparse_kinds: Sequence[int],
    k: int,
) -> tuple[_Ranked, list[_Ranked]]:
    """The worker's part of ``_both_lists``: the dense list of ``kinds``, then the BM25 list
    of each of ``sparse_kinds``."""
    dense = vector_candidates(vectors, query.vector, kinds, k)
    return dense, [sparse.search_kind(text, kind, k) for kind in sparse_kinds]


def _pool() -> ThreadPoolExecutor:
    global _dense_pool
    with _pool_lock:
        if _dense_pool is None:
            workers = max(1, os.cpu_count() or 1)
            _dense_pool = ThreadPoolExecutor(workers, thread_name_prefix="gs-dense")
        return _dense_pool


def _fused(
    snapshot: Snapshot,
    sparse: SparseIndex,
    text: SparseQuery,
    vector: np.ndarray,
    dense: _Listed,
    sparse_list: _Listed,
    fusion: FusionConfig,
    report: dict[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One round of ``fused_candidates``: a dense and a BM25 list fused by ``fusion``.

    A list's scores may be None (the feedback round's unions): they are then the cosines
    with ``vector`` and the BM25 scores for ``text``, computed here only when the lists are
    fused as retrieved (complete scores score every candidate anyway). With complete scores,
    the dense weight is decided for this query from the candidates' two scores
    (``core.fusion.query_dense_weight``; ``fusion.adaptive`` "off" keeps
    ``fusion.dense_weight``)."""
    w = float(fusion.dense_weight)
    d_ids, s_ids = dense[0], sparse_list[0]
    if not fusion.complete_scores:
        d_scores = dense[1] if dense[1] is not None else snapshot.vectors.get(d_ids) @ vector
        s_scores = sparse_list[1] if sparse_list[1] is not None else sparse.score(text, s_ids)
        lists = [(d_ids, d_scores), (s_ids, s_scores)]
    else:
        union = sets.union(d_ids, s_ids).astype(np.int64)
        cosines = snapshot.vectors.get(union) @ np.asarray(vector, np.float32)
        coverage = fusion.method == "score" and fusion.term_decay < 1.0
        terms = sparse.term_scores(text, union) if coverage else None
        bm25 = terms.sum(axis=0) if terms is not None else sparse.score(text, union)
        w = query_dense_weight(
            cosines,
            bm25,
            w,
            fusion.adaptive,
            float(fusion.adaptive_strength),
            int(fusion.adaptive_depth),
        )
        if report is not None:
            report["dense_weight"] = round(w, 4)
        if terms is not None:
            return coverage_order(union, cosines, terms, w, float(fusion.term_decay))
        lists = [(union, cosines), (union, bm25)]
    if fusion.method == "score":
        return score_fusion(lists, [w, 1 - w])
    rankings = [ids[np.lexsort((ids, -np.asarray(s, np.float64)))] for ids, s in lists]
    return rrf(rankings, [w, 1 - w], float(fusion.rrf_k))


class HybridView(ComponentView):
    """``hybrid`` over the chunks of one version (module docstring).

    Parameters
    ----------
    snapshot, vectors, config, doc_names:
        The version searched, its vector index, the index's config (its ``fusion`` section
        is read at query time) and the doc names.
    """

    def __init__(
        self,
        snapshot: Snapshot,
        vectors: VectorIndex,
        config: IndexConfig,
        doc_names: DocNames,
        sparse: SparseIndex,
    ):
        self.snapshot = snapshot
        self.vectors = vectors
        self.config = config
        self.doc_names = doc_names
        self.sparse = sparse

    def search(self, mode: str, query: Query) -> list[Hit]:
        """The packed fused chunks (``mode`` must be ``"hybrid"``)."""
        if mode != "hybrid":
            raise ValueError(f"the hybrid component serves 'hybrid', not {mode!r}")
        fusion = fusion_config(query.params, self.config.fusion)
        info: dict[str, Any] = {"method": fusion.method}
        vectors = restricted_vectors(self.vectors, query, self.snapshot)  # a metadata filter
        sparse = restricted_sparse(self.sparse, query)
        ids, scores = fused_candidates(self.snapshot, vectors, sparse, query, [_T], fusion, info)
        hits, duplicates = pack_distinct_hits(
            self.snapshot,
            self.doc_names,
            ids,
            scores,
            query.budget_tokens,
            fusion.max_overlap,
            fusion.shingle_words,
        )
        info["duplicates"] = int(duplicates.size)
        query.report["fusion"] = info
        return hits


class HybridComponent(Component):
    """``hybrid``: no stored state; dense + BM25 over the chunks of each version."""

    name = "hybrid"
    modes = ("hybrid",)
    sparse_kinds = (_T,)
    mode_params: ClassVar[dict[str, type[ModeParams]]] = {"hybrid": HybridParams}

    def update(self, ctx: UpdateContext, change: ChangeSet) -> None:
        """Nothing to store: the view reads the chunks and vectors of each version."""

    def view(self, state: VersionState, config: IndexConfig) -> HybridView:
        """The search view of one version (its sparse postings are built on first use)."""
        sparse = state.sparse.index([_T])
        return HybridView(state.snapshot, state.vectors, config, state.doc_names, sparse)
