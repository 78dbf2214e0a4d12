"""``SparseIndex``: BM25 over the texts of nodes of several kinds, advanced per commit.

Every sparse search of the engine goes through this one index: the ``bm25`` baseline (T),
``hybrid`` (T), the hierarchy modes (T and L) and ``graph``'s BM25 entry points.

Scoring
    Lucene's BM25 variant exactly as ``bm25s`` computes it (k1 = 1.5, b = 0.75 by default):
    ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` and a document's score is the sum over
    the query's terms of ``idf · tf / (tf + k1 · (1 - b + b · len / avg_len))``. A text
    with no term at all has length 1 (``bm25s`` gives it one empty token), so it counts in
    N and in the average length, and never matches; a text of over 65,535 terms counts as
    that long (``core.bm25.MAX_LENGTH``). Each term's part is computed in float64 and the
    sums in float32, as bm25s and Lucene sum (``core.bm25``: faster at a million chunks);
    scores equal bm25s' float32 sums within 2e-6 relative (tested), and results equal
    ``bm25s``' ``retrieve`` except the order of exactly equal scores (ascending node id
    here).

Statistics per kind
    N, the document frequencies and the average length are computed *per kind*: the chunks
    form one BM25 collection, the summaries another, and so on. A kind's scores are then
    exactly the scores of a BM25 index built over that kind alone (the oracle test compares
    them with ``bm25s``), unaffected by how many nodes of other kinds exist; a search over
    several kinds merges the per-kind lists by score.

Tokenization
    ``analyze``: lower-cased, words of ``\\b\\w\\w+\\b``, bm25s' English stop words removed,
    each word stemmed with the Snowball English stemmer (PyStemmer), the same tokens as
    ``engine.modes.bm25.make_tokenizer`` gives (tested). A query is read as ``bm25s``
    reads it: query terms absent from a kind are dropped, and a repeated term counts each
    time (its score is added once per occurrence, like Lucene's repeated clauses). A query
    may also be given as terms with weights (``analysis.WeightedTerms``: ``hybrid``'s
    feedback round), a term's score then multiplied by its weight.

Incremental updates
    A kind's postings (``engine/sparse/postings.py``, ``KindIndex``) live in immutable
    *segments* (``engine/sparse/segments.py``: CSR by term, with a forward index by
    document for the deletes).
    ``SparseParts.advanced(snapshot, delta, maintenance)`` derives the parts
    of the next version from this one and the committed ``Delta`` without re-tokenizing any
    unchanged text: deleted nodes become tombstones (their document frequencies and lengths
    leave the statistics), new or re-written texts form a new small segment, and a node row
    rewritten with the same text (e.g. a new ``parent``) is left alone. The last segments
    are joined while the last holds at least half as many slots as the one before it (a
    binary counter, ``segments.joined_tail``: ``O(log n)`` segments, each posting copied
    ``O(log n)`` times). When tombstones exceed a quarter of the slots or there are more
    than ``MaintenanceConfig.postings_segments`` allows, the kind is compacted into one segment (from the
    postings, still without re-tokenizing).
    Term ids are never reused (a term of deleted texts stays in the vocabulary). Versions
    share unchanged arrays; nothing of an older version is modified, so readers pinned to it
    keep a consistent index.

Sharing
    The per-kind parts are built lazily, on the first search that needs them, and shared by
    every ``SparseIndex`` of the same version through its ``SparseParts``, which the
    engine's state holds (bm25, hybrid, hierarchy and graph views of one version hold one
    copy of the chunk postings) and advances with each commit.

(docs/architecture.md, "Search modes and parameters".)
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.sparse.analysis import (
    STEMMER_LANGUAGE,
    STOPWORDS_EN,
    TOKEN_PATTERN,
    SparseQuery,
    analyze,
    has_words,
    query_weights,
)
from graphstrata.engine.sparse.cache import cached_part, save_part
from graphstrata.engine.sparse.postings import BM25_B, BM25_K1, KindIndex
from graphstrata.engine.store import Delta, Snapshot
from graphstrata.engine.store.arrow_numpy import arrow_of, numpy_of

__all__ = [
    "BM25_B",
    "BM25_K1",
    "STEMMER_LANGUAGE",
    "STOPWORDS_EN",
    "TOKEN_PATTERN",
    "KindIndex",
    "SparseIndex",
    "SparseParts",
    "analyze",
    "save_committed_parts",
]


# ---------------------------------------------------------------------- one version's parts
class SparseParts:
    """The BM25 collections of one version, one per node kind: each built on first use and
    shared by every :class:`SparseIndex` of the version (``engine.state.EngineState``
    holds it; the views take their indexes from it with :meth:`index`).

    Parameters
    ----------
    snapshot:
        The version. ``None`` only for collections given whole (``SparseIndex.from_texts``).
    maintenance:
        Its ``postings_*`` policies compact a kind as versions advance it.
    kinds:
        The kinds the version's components search (the sparse cache saves them).
    parts:
        Collections already made for this version (each must hold its live ids).
    """

    def __init__(
        self,
        snapshot: Snapshot | None,
        maintenance: MaintenanceConfig,
        kinds: Sequence[int] = (),
        parts: dict[int, KindIndex] | None = None,
    ):
        self.snapshot = snapshot
        self.maintenance = maintenance
        self.kinds = tuple(sorted({int(k) for k in kinds}))
        self._parts: dict[int, KindIndex] = dict(parts or {})
        self._lock = threading.Lock()
        self._building: dict[int, threading.Lock] = {}

    @classmethod
    def seeded(
        cls,
        snapshot: Snapshot,
        maintenance: MaintenanceConfig,
        kinds: Sequence[int],
        parts: dict[int, KindIndex],
    ) -> SparseParts:
        """The parts of ``snapshot`` starting from ``parts`` (as :func:`save_committed_parts`
        makes them for the version committed), each that has the snapshot's live ids."""
        kept = {
            int(kind): part
            for kind, part in parts.items()
            if np.array_equal(part.live_ids(), snapshot.nodes.ids_of_kind(kind))
        }
        return cls(snapshot, maintenance, kinds, kept)

    def index(self, kinds: Sequence[int], k1: float = BM25_K1, b: float = BM25_B) -> SparseIndex:
        """A BM25 index over ``kinds`` of this version, sharing these parts."""
        return SparseIndex(self, kinds, k1, b)

    def peek(self, kind: int) -> KindIndex | None:
        """The part of ``kind`` if it was built already, else None (nothing is built)."""
        return self._parts.get(int(kind))

    def get(self, kind: int) -> KindIndex:
        """The part of ``kind``: built once (from the sparse cache or the texts), the other
        callers waiting for it."""
        kind = int(kind)
        part = self._parts.get(kind)
        if part is not None:
            return part
        with self._lock:
            lock = self._building.setdefault(kind, threading.Lock())
        with lock:  # one builder per kind; the others wait for its result
            part = self._parts.get(kind)
            if part is None:
                snapshot = self.snapshot
                if snapshot is None:
                    part = KindIndex.build(np.zeros(0, np.int64), [])
                else:
                    part = _build_part(snapshot, kind, self.maintenance)
                self._parts[kind] = part  # one assignment: readers see it whole
            return part

    def advanced(
        self,
        snapshot: Snapshot,
        delta: Delta | None,
        maintenance: MaintenanceConfig,
        *,
        seeded: dict[int, KindIndex] | None = None,
    ) -> SparseParts:
        """The parts of ``snapshot``, the version committed after this one's.

        Parts built here are advanced now from ``delta`` (the committed ``Delta``: its node
        rows and tombstones), re-tokenizing only new or changed texts; the others stay lazy.
        Without a delta the changes are read from ``snapshot`` (rows newer than this
        version, ids no longer live). An advanced part that disagrees with ``snapshot`` on
        which nodes are live is rebuilt from ``snapshot`` (never expected; a safety net).
        ``seeded``: parts the commit made already (``save_committed_parts``), taken as they
        are (``seeded``).
        """
        out = SparseParts.seeded(snapshot, maintenance, self.kinds, seeded or {})
        built = {k: p for k, p in list(self._parts.items()) if out.peek(k) is None}
        if built:
            change = _Change.of(self.snapshot, snapshot, delta)
            for kind, part in built.items():
                out._parts[kind] = _advance_part(part, kind, snapshot, change, maintenance)
        return out


# ---------------------------------------------------------------------- the index
class SparseIndex:
    """BM25 over the live nodes of ``kinds`` of one version (see the module docstring).

    Parameters
    ----------
    parts:
        The version's collections (:class:`SparseParts`), shared with its other indexes.
    kinds:
        Node kinds indexed (``engine.types.NodeKind`` values).
    k1, b:
        BM25 parameters.
    """

    def __init__(
        self, parts: SparseParts, kinds: Sequence[int], k1: float = BM25_K1, b: float = BM25_B
    ):
        self.parts = parts
        self.kinds = tuple(dict.fromkeys(int(k) for k in kinds))
        self.k1 = float(k1)
        self.b = float(b)

    @classmethod
    def from_texts(
        cls,
        ids: Sequence[int],
        kinds: Sequence[int],
        texts: Sequence[str],
        k1: float = BM25_K1,
        b: float = BM25_B,
    ) -> SparseIndex:
        """An index over given texts (no snapshot): node ``ids`` of ``kinds``, one per text."""
        ids_a = np.asarray(ids, np.int64)
        kinds_a = np.asarray(kinds, np.int64)
        if not ids_a.size == kinds_a.size == len(texts):
            raise ValueError("from_texts: ids, kinds and texts must have equal length")
        parts = {}
        for kind in dict.fromkeys(kinds_a.tolist()):
            rows = np.flatnonzero(kinds_a == kind)
            parts[int(kind)] = KindIndex.build(ids_a[rows], [texts[i] for i in rows.tolist()])
        given = SparseParts(None, MaintenanceConfig(), list(parts), parts)
        return cls(given, list(parts), k1, b)

    # ------------------------------------------------------------------ parts
    def part(self, kind: int) -> KindIndex:
        """The collection of one indexed kind, built on first use (shared per version)."""
        kind = int(kind)
        if kind not in self.kinds:
            raise ValueError(f"kind {kind} is not in this sparse index (kinds {self.kinds})")
        return self.parts.get(kind)

    def built(self, kind: int) -> bool:
        """Whether the part of ``kind`` exists already (no build is triggered)."""
        return self.parts.peek(kind) is not None

    # ------------------------------------------------------------------ search
    def search(
        self, text: SparseQuery, kinds: Sequence[int], k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best live nodes of ``kinds`` with a positive BM25 score for ``text``.

        Parameters
        ----------
        text:
            The query: a text, or terms with weights (``analysis.WeightedTerms``).
        kinds:
            Kinds to search (each must be indexed); scores are per-kind BM25.
        k:
            How many to return at most.

        Returns
        -------
        tuple of numpy.ndarray
            Node ids (int64) and scores (float32), best first; equal scores in ascending id.
        """
        return self.merged([self.search_kind(text, kind, k) for kind in kinds], k)

    def search_kind(
        self, text: SparseQuery, kind: int, k: int, within: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`search` over one kind; :meth:`merged` joins such lists (searched on other
        threads, say) into what :meth:`search` over their kinds returns. ``within``: only
        these ascending node ids may be returned (a metadata filter; the statistics stay
        the whole kind's)."""
        k = int(k)
        if k <= 0 or not has_words(text):
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        return self.part(kind).search(text, k, self.k1, self.b, within)

    @staticmethod
    def merged(
        found: Sequence[tuple[np.ndarray, np.ndarray]], k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best of per-kind lists: best first, equal scores in ascending id (so the
        order of the lists does not matter)."""
        if len(found) == 1:
            return found[0]
        if not found:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        ids = np.concatenate([f[0] for f in found])
        scores = np.concatenate([f[1] for f in found])
        order = np.lexsort((ids, -scores.astype(np.float64)))[: int(k)]
        return ids[order], scores[order]

    def score(self, text: SparseQuery, ids: np.ndarray) -> np.ndarray:
        """BM25 score of each of ``ids`` for ``text`` in its own kind (0 when it shares no
        term with the query or is not a live node of an indexed kind); float32."""
        ids = np.asarray(ids, np.int64)
        out = np.zeros(ids.size, np.float64)
        if not has_words(text) or ids.size == 0:
            return out.astype(np.float32)
        todo = np.ones(ids.size, bool)
        for kind in self.kinds:
            found, scores = self.part(kind).score_ids(text, ids[todo], self.k1, self.b)
            where = np.flatnonzero(todo)[found]
            out[where] = scores[found]
            todo[where] = False
            if not todo.any():
                break
        return out.astype(np.float32)

    def term_scores(
        self, text: SparseQuery, ids: np.ndarray, kinds: Sequence[int] | None = None
    ) -> np.ndarray:
        """float64 ``[t, len(ids)]``: each distinct query term's part of each id's BM25 score.

        Rows follow the query's distinct analyzed terms in order of first occurrence (a row
        is the term times its weight: a text's repeated term counts each time); each id is
        scored in its own kind, as by :meth:`score`, whose values the column sums are (up to
        float32 rounding). ``kinds``: only ids of these indexed kinds are scored (the others
        get zeros; default: all).
        """
        ids = np.asarray(ids, np.int64)
        counts = query_weights(text)
        out = np.zeros((len(counts), ids.size), np.float64)
        if not counts or ids.size == 0:
            return out
        for kind in self.kinds if kinds is None else [k for k in self.kinds if k in kinds]:
            out += self.part(kind).term_scores(text, ids, self.k1, self.b)
        return out * np.fromiter(counts.values(), np.float64, len(counts))[:, None]

    def feedback_terms(
        self, ids: np.ndarray, texts: Sequence[str], m: int, exclude: Collection[str] = ()
    ) -> list[str]:
        """The ``m`` analyzed terms of the best candidates' texts with the most weight, for
        sparse pseudo-relevance feedback (RM3-like, Abdul-Jaleel et al. 2004).

        A term's weight is the sum over the texts of ``tf / length * idf / rank``: its share
        of the text, times its idf in the text's own kind (the kind that holds its id), over
        the text's rank (from 1). Terms in ``exclude`` (the query's own) and terms no live
        document of the kind holds are left out; equal weights go by term.

        Parameters
        ----------
        ids, texts:
            The candidates, best first, and their texts.
        m:
            How many terms at most.
        exclude:
            Analyzed terms never returned.

        Returns
        -------
        list of str
            Up to ``m`` terms, heaviest first.
        """
        if len(ids) != len(texts):
            raise ValueError("feedback_terms: ids and texts must have equal length")
        weight: dict[str, float] = {}
        by_kind = [self.part(kind) for kind in self.kinds]
        for rank, (node, text) in enumerate(zip(np.asarray(ids).tolist(), texts), start=1):
            part = next((p for p in by_kind if p.holds(node)), None)
            terms = analyze(text)
            if part is None or not terms:
                continue
            counts = Counter(t for t in terms if t not in exclude)
            names = list(counts)
            tf = np.fromiter(counts.values(), np.float64, len(names))
            parts = tf / len(terms) * part.idfs(names) / rank
            for term, x in zip(names, parts.tolist(), strict=True):
                if x == x:  # NaN: no live document here holds the term
                    weight[term] = weight.get(term, 0.0) + x
        return sorted(weight, key=lambda t: (-weight[t], t))[: max(int(m), 0)]


@dataclass(frozen=True)
class _Change:
    """What one commit changed in the node table: rewritten or new rows, tombstones."""

    rows: pa.Table  # id, kind, text of new or rewritten live rows
    dead: np.ndarray

    @classmethod
    def of(cls, before: Snapshot | None, after: Snapshot, delta: Delta | None) -> _Change:
        if delta is not None:
            return cls.of_delta(delta)
        since = before.version if before is not None else -1
        before_ids = before.nodes.ids if before is not None else np.zeros(0, np.int64)
        return cls.since(since, before_ids, after)

    @classmethod
    def of_delta(cls, delta: Delta) -> _Change:
        rows = delta.nodes.select(["id", "kind", "text"])
        dead = delta.dead_nodes
        if dead.size and rows.num_rows:
            rows = rows.filter(pc.invert(pc.is_in(rows.column("id"), arrow_of(dead))))
        return cls(rows, dead)

    @classmethod
    def since(cls, version: int, live_then: np.ndarray, after: Snapshot) -> _Change:
        """Rows of ``after`` newer than ``version``; ids of ``live_then`` no longer live."""
        rows = after.nodes.newer_than(version)
        dead = live_then[~after.nodes.contains(live_then)]
        return cls(rows.select(["id", "kind", "text"]), dead)


def _build_part(snapshot: Snapshot, kind: int, maintenance: MaintenanceConfig) -> KindIndex:
    """``kind``'s collection for ``snapshot``: from the sparse cache when the manifest has
    one (brought to the snapshot's version), else tokenized from every text."""
    cached = cached_part(snapshot, kind)
    if cached is not None:
        part, version = cached
        change = _Change.since(version, part.live_ids(), snapshot)
        return _advance_part(part, kind, snapshot, change, maintenance, rebuild=_texts_part)
    return _texts_part(snapshot, kind, maintenance)


def _texts_part(snapshot: Snapshot, kind: int, maintenance: MaintenanceConfig) -> KindIndex:
    nodes = snapshot.nodes
    ids = nodes.ids_of_kind(kind)
    return KindIndex.build(ids, nodes.text_of(ids))


def _advance_part(
    part: KindIndex,
    kind: int,
    snapshot: Snapshot | None,
    change: _Change,
    maintenance: MaintenanceConfig,
    rebuild: Callable[[Snapshot, int, MaintenanceConfig], KindIndex] = _build_part,
) -> KindIndex:
    """``part`` with ``change`` applied; rebuilt by ``rebuild`` when its live ids are not
    ``snapshot``'s (never expected: a safety net; no check without a snapshot)."""
    rows = change.rows
    kinds = numpy_of(rows.column("kind"))
    ids = numpy_of(rows.column("id")).astype(np.int64)
    mine = kinds == kind
    # A row of another kind whose id was of this kind: the node changed kind.
    dead = np.concatenate([change.dead, ids[~mine]])
    texts = rows.filter(arrow_of(mine)).column("text").to_pylist() if mine.any() else []
    advanced = part.changed(dead, ids[mine], texts, maintenance)
    if snapshot is not None and not np.array_equal(
        advanced.live_ids(), snapshot.nodes.ids_of_kind(kind)
    ):
        return rebuild(snapshot, kind, maintenance)
    return advanced


# ---------------------------------------------------------------------- the sparse cache
def save_committed_parts(
    previous: SparseParts,
    delta: Delta | None,
    kinds: Sequence[int],
    path_of: Callable[[int], Path],
) -> tuple[dict[int, Path], dict[int, KindIndex]]:
    """Save the collections of ``kinds`` of the version ``delta`` commits on ``previous``.

    Each is ``previous``'s collection (built now if it was not, from the cache or the
    texts) with the delta applied, before the version exists (its files are recorded by the
    same commit).

    Parameters
    ----------
    previous:
        The parts of the version the delta was prepared on.
    delta:
        What the commit writes; None when it changes no node (compaction).
    kinds:
        The kinds to save.
    path_of:
        The file to write for a kind.

    Returns
    -------
    tuple of dict
        The file written per kind, and the collections (for ``SparseParts.seeded``).
    """
    change = _Change.of_delta(delta) if delta is not None else None
    files: dict[int, Path] = {}
    parts: dict[int, KindIndex] = {}
    for kind in kinds:
        before = previous.get(int(kind))
        parts[int(kind)] = (
            _advance_part(before, int(kind), None, change, previous.maintenance)
            if change
            else before
        )
        files[int(kind)] = path_of(int(kind))
        save_part(parts[int(kind)], files[int(kind)])
    return files, parts
