"""Turning ranked node ids into hits: vector candidates, citations, greedy budget packing.

Every mode ends here, so every mode cites and packs the same way (docs/architecture.md,
"Query path"). ``pack_hits`` is the plain greedy fill of the baselines (``naive``,
``bm25``); ``pack_distinct_hits`` also skips near-duplicates (``core.fusion.pack_distinct``):
a candidate at least ``max_overlap`` of whose word ``shingle_words``-grams already occur in
the texts packed before it, such as an extractive summary that repeats a packed chunk, or a
chunk whose text a packed summary already holds, costs no budget and is not returned.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import overload

import numpy as np

from graphstrata.core.budget import pack
from graphstrata.core.fusion import pack_distinct, shingles
from graphstrata.engine.component import DocNames, Hit
from graphstrata.engine.ingest.spans import hit_spans
from graphstrata.engine.store import NodeTable, Snapshot
from graphstrata.engine.types import NodeKind
from graphstrata.engine.vectors import VectorIndex

__all__ = [
    "DocNames",
    "ShingleMemo",
    "make_hits",
    "pack_distinct_hits",
    "pack_hits",
    "record_ranked",
    "vector_candidates",
]

#: Each kind's letter (``NodeKind.letter``) by its number.
_LETTERS = {int(k): k.letter for k in NodeKind}
#: How many of a mode's ranked candidates (its list before packing, best first) a query's
#: report keeps as ``ranked``: the rank metrics of ``graphstrata.evaluation.ranking``
#: (Recall@k, Hits@k, MRR@10 up to k = 20) read them; 20 ints cost nothing per query.
RANKED_DEPTH = 20


def record_ranked(report: dict, ids: np.ndarray | Sequence[int]) -> None:
    """Keep the first ``RANKED_DEPTH`` of ``ids`` (a mode's ranked candidates, before
    packing) as ``report["ranked"]``; a mode that ranks twice (``detailed``: its favoured
    side, then the other) keeps its first list."""
    report.setdefault("ranked", [int(i) for i in np.asarray(ids)[:RANKED_DEPTH].tolist()])


def make_hits(
    snapshot: Snapshot,
    doc_names: DocNames,
    ids: np.ndarray,
    scores: np.ndarray,
    texts: Sequence[str] | None = None,
    rows: np.ndarray | None = None,
) -> list[Hit]:
    """Hits for ``ids`` in the given order (no packing).

    Parameters
    ----------
    snapshot:
        The version the ids are live in.
    doc_names:
        That version's doc names, for the citations.
    ids, scores:
        Node ids and their scores, in the order wanted.
    texts:
        Their texts when the caller has read them already (default: read here).
    rows:
        Their rows in ``snapshot.nodes`` when the caller has them (default: looked up;
        a lookup of ~100 ids among a million took 40-80 us per call under the line
        profiler, a one-off script, not kept).
    """
    if len(ids) == 0:
        return []
    nodes = snapshot.nodes
    rows = nodes.rows(ids) if rows is None else rows
    texts = nodes.texts_at(rows) if texts is None else texts
    docs = nodes.docs_at(rows)
    documents = doc_names.documents(docs)
    letters = [_LETTERS[k] for k in nodes.kind[rows].tolist()]
    names = [doc_names(d) for d in docs]
    spans = hit_spans(doc_names.records.layouts, ids, letters, docs, names, texts)
    # Columns read once as Python values: a graph query returns ~30 hits.
    columns = (
        np.asarray(ids).tolist(),
        letters,
        nodes.layer[rows].tolist(),
        texts,
        np.asarray(scores, np.float64).tolist(),
        nodes.tokens[rows].tolist(),
        names,
        documents,
        spans,
    )
    return [
        Hit(id=i, kind=k, layer=la, text=tx, score=sc, tokens=tk, docs=dn, documents=dd, spans=sp)
        for i, k, la, tx, sc, tk, dn, dd, sp in zip(*columns, strict=True)
    ]


def pack_hits(
    snapshot: Snapshot, doc_names: DocNames, ids: np.ndarray, scores: np.ndarray, budget: int
) -> list[Hit]:
    """Greedy-pack ranked nodes under ``budget`` tokens (``core.budget.pack``).

    Parameters
    ----------
    snapshot, doc_names:
        As for ``make_hits``.
    ids, scores:
        Candidates, best first.
    budget:
        Token budget of the packed hits.
    """
    ids = np.asarray(ids, dtype=np.int64)
    if ids.size == 0:
        return []
    rows = snapshot.nodes.rows(ids)
    chosen = pack(np.asarray(scores, dtype=np.float64), snapshot.nodes.tokens[rows], int(budget))
    return make_hits(
        snapshot, doc_names, ids[chosen], np.asarray(scores)[chosen], rows=rows[chosen]
    )


def vector_candidates(
    vectors: VectorIndex, vector: np.ndarray, kinds: Sequence[int], k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest nodes of ``kinds`` to ``vector`` (a query's): (ids, cosines), best
    first."""
    ids, scores = vectors.search(np.asarray(vector, np.float32)[None, :], kinds, k)
    return ids[0], scores[0]


class ShingleMemo:
    """Shingles of texts, computed once per (text, n) and kept up to ``max_entries``.

    Keyed by the text itself, so entries stay valid across versions (a node rewritten with
    another text simply has another key); cleared whole when full. Thread-safe.

    Parameters
    ----------
    max_entries:
        Entries kept before the memo is cleared.
    """

    def __init__(self, max_entries: int = 200_000):
        self.max_entries = int(max_entries)
        self._memo: dict[tuple[str, int], frozenset[int]] = {}
        self._lock = threading.Lock()

    def get(self, text: str, n: int) -> frozenset[int]:
        """``core.fusion.shingles(text, n)``, memoized."""
        key = (text, int(n))
        found = self._memo.get(key)
        if found is None:
            found = shingles(text, n)
            with self._lock:
                if len(self._memo) >= self.max_entries:
                    self._memo.clear()
                self._memo[key] = found
        return found


#: The memo every view shares (texts repeat across the versions and views of one process).
SHINGLES = ShingleMemo()


class _LazyShingles(Sequence[frozenset[int]]):
    """The shingles of candidate texts, each text read from the table when the packer
    first reads its shingles: of a fused query's ~100 candidates, the ~13 that fit a 2,000
    token budget are read (reading all 100 texts was 0.5-0.7 ms of a 1M-chunk ``collapsed``
    query under line_profiler, a one-off script, not kept)."""

    def __init__(self, nodes: NodeTable, rows: np.ndarray, n: int, memo: ShingleMemo):
        self._nodes, self._rows, self._n, self._memo = nodes, rows, n, memo
        self._texts: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def text(self, i: int) -> str:
        """The text of candidate ``i`` (read once)."""
        found = self._texts.get(i)
        if found is None:
            found = self._texts[i] = self._nodes.texts_at(self._rows[i : i + 1])[0]
        return found

    @overload
    def __getitem__(self, i: int) -> frozenset[int]: ...
    @overload
    def __getitem__(self, i: slice) -> list[frozenset[int]]: ...
    def __getitem__(self, i: int | slice) -> frozenset[int] | list[frozenset[int]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self._memo.get(self.text(i), self._n)


def pack_distinct_hits(
    snapshot: Snapshot,
    doc_names: DocNames,
    ids: np.ndarray,
    scores: np.ndarray,
    budget: int,
    max_overlap: float,
    shingle_words: int,
    packed_before: Sequence[Hit] = (),
    memo: ShingleMemo = SHINGLES,
) -> tuple[list[Hit], np.ndarray]:
    """Greedy-pack ranked nodes under ``budget``, skipping near-duplicates (module docstring).

    Parameters
    ----------
    snapshot, doc_names:
        As for ``make_hits``.
    ids, scores:
        Candidates (any order; packed by descending score, ties in input order).
    budget:
        Token budget of the packed hits.
    max_overlap:
        Share of a candidate's shingles already packed that makes it a duplicate; above 1
        nothing is a duplicate and this is ``pack_hits``.
    shingle_words:
        Words per shingle.
    packed_before:
        Hits packed earlier for the same query (another share of its budget): candidates
        that repeat them are duplicates too.
    memo:
        Where shingles are memoized.

    Returns
    -------
    tuple
        The packed hits in rank order, and the ids (int64) of the candidates skipped as
        duplicates.
    """
    ids = np.asarray(ids, dtype=np.int64)
    if ids.size == 0:
        return [], ids
    nodes = snapshot.nodes
    rows = nodes.rows(ids)
    lazy = _LazyShingles(nodes, rows, shingle_words, memo)
    before = [memo.get(h.text, shingle_words) for h in packed_before] if max_overlap <= 1 else []
    chosen, duplicates = pack_distinct(
        np.asarray(scores, np.float64), nodes.tokens[rows], lazy, int(budget), max_overlap, before
    )
    texts = [lazy.text(i) for i in chosen.tolist()]
    hits = make_hits(
        snapshot, doc_names, ids[chosen], np.asarray(scores)[chosen], texts, rows[chosen]
    )
    return hits, ids[duplicates]
