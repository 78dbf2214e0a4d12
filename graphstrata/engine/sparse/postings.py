"""The BM25 collection of one node kind, ``KindIndex``: its postings segments
(``engine.sparse.segments``), statistics and searches (its text is analyzed by
``engine.sparse.analysis``).

The building block of ``engine.sparse.index.SparseIndex`` (whose docstring describes
the scoring, the per-kind statistics, the tokenization and the incremental updates).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from graphstrata.core.bm25 import (
    Norm,
    Postings,
    add_term_lookups,
    add_terms_lookups,
    lengths,
    top_candidates,
)
from graphstrata.core.bm25 import idf as bm25_idf
from graphstrata.engine.hashing import stable_hashes
from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.sparse.analysis import SparseQuery, analyze, query_weights
from graphstrata.engine.sparse.segments import Segment, joined_tail, term_max

__all__ = [
    "BM25_B",
    "BM25_K1",
    "KindIndex",
]

#: BM25 term-frequency saturation and length normalization (bm25s / Lucene defaults).
BM25_K1 = 1.5
BM25_B = 0.75

_local = threading.local()
#: Terms whose idf a version keeps (``KindIndex._idf``; cleared whole when full): a few MB
#: per kind, whatever the vocabulary a stream of queries names.
IDF_MEMO_MAX = 1 << 16
#: Collections whose reading of a thread's last query is kept (``KindIndex.read``): the kinds
#: of a version or two, not every version a repeated query meets.
READ_MEMO_KINDS = 16


class QueryTerms(NamedTuple):
    """A query's terms as one kind's collection reads them (``KindIndex.read``)."""

    #: The query's distinct analyzed terms that a live document here holds, with their
    #: weights, in order of first occurrence (``analysis.query_weights``).
    weights: dict[str, float]
    #: int64: the index of each of those terms among all the query's distinct terms.
    rows: np.ndarray
    #: int64: their term ids.
    tids: np.ndarray
    #: float64: their idfs here.
    idfs: np.ndarray
    #: How many distinct terms the query has in all.
    n_terms: int


class _Vocab:
    """Term -> id, append-only; shared by the versions of one index (ids are never reused)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, docs: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Term ids of each document's terms, allocating ids for new terms."""
        ids = self.ids
        with self._lock:
            for terms in docs:
                for t in terms:
                    if t not in ids:
                        ids[t] = len(ids)
        return [np.fromiter((ids[t] for t in terms), np.int64, len(terms)) for terms in docs]


def _grown(counts: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size, np.int64)
    out[: counts.size] = counts
    return out


@dataclass(frozen=True)
class KindIndex:
    """The BM25 collection of one node kind at one version (immutable; see module docstring).

    Attributes
    ----------
    vocab:
        Term (stem) -> id, shared by the versions of the collection.
    slot_ids, slot_len, slot_hash, alive:
        Per slot: the node id, its length in terms (uint16, ``core.bm25.lengths``: at least
        1, saturating), the hash of its text and whether it is live. A rewritten node gets
        a new slot; its old slot is a tombstone.
    df:
        Live document frequency of each term id known to this version.
    n_live, total_len:
        Live documents and their summed lengths (N and N · average length).
    """

    vocab: _Vocab
    segments: tuple[Segment, ...]
    slot_ids: np.ndarray
    slot_len: np.ndarray
    slot_hash: np.ndarray
    alive: np.ndarray
    df: np.ndarray
    n_live: int
    total_len: int

    # ------------------------------------------------------------------ build
    @classmethod
    def build(cls, ids: np.ndarray, texts: Sequence[str]) -> KindIndex:
        """The collection of ``texts`` (node ``ids``), tokenized once.

        Parameters
        ----------
        ids:
            int64 node ids, one per text.
        texts:
            Their texts.
        """
        empty = cls(
            vocab=_Vocab(),
            segments=(),
            slot_ids=np.zeros(0, np.int64),
            slot_len=lengths(np.zeros(0, np.int64)),
            slot_hash=np.zeros(0, np.int64),
            alive=np.zeros(0, bool),
            df=np.zeros(0, np.int64),
            n_live=0,
            total_len=0,
        )
        return empty.changed(np.zeros(0, np.int64), np.asarray(ids, np.int64), texts, None)

    def changed(
        self,
        dead_ids: np.ndarray,
        add_ids: np.ndarray,
        add_texts: Sequence[str],
        maintenance: MaintenanceConfig | None,
    ) -> KindIndex:
        """The next version: ``dead_ids`` removed, then ``add_ids`` with ``add_texts`` added.

        An added id that is live here with the same text is left as it is; with another text
        its old slot is removed first. Nothing of ``self`` is modified. The result is
        compacted into one segment when its segments or tombstones pass
        ``maintenance.postings_segments`` or ``postings_dead`` (None: a build's one segment,
        never compacted).

        Parameters
        ----------
        dead_ids:
            int64 node ids that are no longer live (ids absent here are ignored).
        add_ids, add_texts:
            New or rewritten nodes of this kind and their texts.
        """
        dead_ids = np.asarray(dead_ids, np.int64)
        add_ids = np.asarray(add_ids, np.int64)
        hashes = stable_hashes(add_texts)
        alive = self.alive
        if add_ids.size and self.n_live:
            # Rewritten rows: same text -> keep the slot, other text -> replace it.
            sorted_ids, slots = self._live_order
            pos = np.minimum(np.searchsorted(sorted_ids, add_ids), sorted_ids.size - 1)
            found = sorted_ids[pos] == add_ids
            same = found & (self.slot_hash[slots[pos]] == hashes)
            dead_ids = np.concatenate([dead_ids, add_ids[found & ~same]])
            keep = ~same
            add_ids, hashes = add_ids[keep], hashes[keep]
            add_texts = [t for t, k in zip(add_texts, keep.tolist(), strict=True) if k]
        df = self.df
        n_live, total_len = self.n_live, self.total_len
        kill = alive & np.isin(self.slot_ids, dead_ids) if dead_ids.size else None
        if kill is not None and kill.any():
            killed = np.flatnonzero(kill)
            parts = [
                killed[(killed >= seg.first) & (killed < seg.first + seg.n)]
                for seg in self.segments
            ]
            gone = np.concatenate([seg.terms_of(k) for seg, k in zip(self.segments, parts)])
            df = df - np.bincount(gone, minlength=df.size)
            alive = alive & ~kill
            n_live -= int(killed.size)
            total_len -= int(self.slot_len[killed].sum())
        segments = self.segments
        slot_ids, slot_len, slot_hash = self.slot_ids, self.slot_len, self.slot_hash
        if add_ids.size:
            term_docs = self.vocab.add([analyze(t) for t in add_texts])
            n_terms = len(self.vocab)
            seg = Segment.from_docs(slot_ids.size, term_docs, n_terms)
            lens = lengths(np.fromiter((d.size for d in term_docs), np.int64, len(term_docs)))
            df = _grown(df, n_terms) + np.bincount(seg.doc_term, minlength=n_terms)
            segments = joined_tail((*segments, seg))
            slot_ids = np.concatenate([slot_ids, add_ids])
            slot_len = np.concatenate([slot_len, lens])
            slot_hash = np.concatenate([slot_hash, hashes])
            alive = np.concatenate([alive, np.ones(add_ids.size, bool)])
            n_live += int(add_ids.size)
            total_len += int(lens.sum())
        out = KindIndex(
            self.vocab, segments, slot_ids, slot_len, slot_hash, alive, df, n_live, total_len
        )
        if "_live_order" in self.__dict__:
            out.__dict__["_live_order"] = self._advanced_order(out, add_ids)
        if "_min_len" in self.__dict__:
            # Carried, not a pass over every slot on each version's first search (a dead
            # slot's length still bounds: the bound needs no more than every live one).
            added = int(slot_len[self.slot_len.size :].min()) if add_ids.size else self._min_len
            out.__dict__["_min_len"] = min(self._min_len, added)
        dead = out.alive.size - out.n_live
        if maintenance is not None and (
            maintenance.postings_segments.should_fold(len(out.segments))
            or maintenance.postings_dead.should_fold(dead, max(out.alive.size, 1))
        ):
            out = out.compacted()
        return out

    def compacted(self) -> KindIndex:
        """The same collection with tombstones dropped and one segment (no re-tokenizing)."""
        keep = np.flatnonzero(self.alive)
        new_slot = np.full(self.alive.size, -1, np.int64)
        new_slot[keep] = np.arange(keep.size)
        slots, terms, tfs = [], [], []
        for seg in self.segments:
            seg_slots, seg_terms, seg_tfs = seg.triples()
            live = self.alive[seg_slots]
            slots.append(new_slot[seg_slots[live]])
            terms.append(seg_terms[live])
            tfs.append(seg_tfs[live])

        def cat(xs: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(xs) if xs else np.zeros(0, np.int64)

        seg = Segment.build(0, (cat(slots), cat(terms), cat(tfs)), int(keep.size), len(self.vocab))
        return KindIndex(
            vocab=self.vocab,
            segments=(seg,),
            slot_ids=self.slot_ids[keep],
            slot_len=self.slot_len[keep],
            slot_hash=self.slot_hash[keep],
            alive=np.ones(keep.size, bool),
            df=_grown(self.df, len(self.vocab)),
            n_live=self.n_live,
            total_len=self.total_len,
        )

    # ------------------------------------------------------------------ persistence
    def to_arrays(self) -> dict[str, np.ndarray]:
        """The collection as named arrays (compacted first), for :meth:`from_arrays`.

        The vocabulary is one ``uint8`` array of the terms in id order, separated by
        newlines (a term is word characters only).
        """
        compact = len(self.segments) == 1 and self.n_live == self.alive.size
        part = self if compact else self.compacted()
        seg = part.segments[0] if part.segments else Segment.from_docs(0, [], len(part.vocab))
        terms = sorted(part.vocab.ids, key=part.vocab.ids.__getitem__)
        return {
            "vocab": np.frombuffer("\n".join(terms).encode(), np.uint8),
            "term_ptr": seg.term_ptr,
            "post_slot": seg.post_slot,
            "post_tf": seg.post_tf,
            "doc_ptr": seg.doc_ptr,
            "doc_term": seg.doc_term,
            "term_max": (
                term_max(seg.term_ptr, seg.post_tf) if seg.term_max is None else seg.term_max
            ),
            "slot_ids": part.slot_ids,
            "slot_len": part.slot_len,
            "slot_hash": part.slot_hash,
            "df": part.df,
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> KindIndex:
        """The collection :meth:`to_arrays` gave (arrays are used as they are, not copied:
        memory-mapped ones stay mapped; nothing here modifies them)."""
        vocab = _Vocab()
        text = bytes(arrays["vocab"]).decode()
        if text or arrays["df"].size:
            terms = text.split("\n")
            vocab.ids = dict(zip(terms, range(len(terms)), strict=True))
        slot_ids = arrays["slot_ids"]
        # Files written before lengths were uint16 hold int64 ones (2 MB copied per 1M slots).
        slot_len = arrays["slot_len"]
        slot_len = slot_len if slot_len.dtype == np.uint16 else lengths(slot_len)
        seg = Segment(
            first=0,
            n=int(slot_ids.size),
            term_ptr=arrays["term_ptr"],
            post_slot=arrays["post_slot"],
            post_tf=arrays["post_tf"],
            doc_ptr=arrays["doc_ptr"],
            doc_term=arrays["doc_term"],
            term_max=arrays.get("term_max"),
        )
        return cls(
            vocab=vocab,
            segments=(seg,) if slot_ids.size else (),
            slot_ids=slot_ids,
            slot_len=slot_len,
            slot_hash=arrays["slot_hash"],
            alive=np.ones(slot_ids.size, bool),
            df=arrays["df"],
            n_live=int(slot_ids.size),
            total_len=int(slot_len.sum()),
        )

    # ------------------------------------------------------------------ search
    def live_ids(self) -> np.ndarray:
        """Ascending node ids of the live documents."""
        return self._live_order[0]

    @functools.cached_property
    def _live_order(self) -> tuple[np.ndarray, np.ndarray]:
        """(ascending live node ids, their slots)."""
        live = np.flatnonzero(self.alive)
        order = np.argsort(self.slot_ids[live], kind="stable")
        return self.slot_ids[live][order], live[order]

    def _advanced_order(self, out: KindIndex, add_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``out._live_order`` from this version's: the dead leave, the added (the last
        ``add_ids.size`` slots of ``out``) are merged in; no sort of every live id."""
        sorted_ids, slots = self._live_order
        keep = out.alive[slots]
        sorted_ids, slots = sorted_ids[keep], slots[keep]
        first = out.alive.size - add_ids.size
        order = np.argsort(add_ids, kind="stable")
        new_ids, new_slots = add_ids[order], first + order.astype(np.int64)
        at = np.searchsorted(sorted_ids, new_ids, side="right")
        return np.insert(sorted_ids, at, new_ids), np.insert(slots, at, new_slots)

    def read(self, query: SparseQuery) -> QueryTerms:
        """The terms of ``query`` that a live document here holds, their ids and idfs.

        Kept for this thread's last query (in each collection): a ``graph`` search reads its
        question for the BM25 list of each kind, then again for its candidates' coverage.
        """
        last: tuple[SparseQuery, dict[int, tuple[KindIndex, QueryTerms]]] | None
        last = getattr(_local, "last_read", None)
        if last is None or not (last[0] is query or last[0] == query):
            fresh: dict[int, tuple[KindIndex, QueryTerms]] = {}
            last = _local.last_read = (query, fresh)
        held = last[1].get(id(self))
        if held is not None and held[0] is self:
            return held[1]
        if len(last[1]) >= READ_MEMO_KINDS:  # one query over many versions: stay bounded
            last[1].clear()
        counts = query_weights(query)
        ids, df = self.vocab.ids, self.df
        tids = np.fromiter((ids.get(t, -1) for t in counts), np.int64, len(counts))
        live = (tids >= 0) & (tids < df.size)
        live[live] = df[tids[live]] > 0
        rows = np.flatnonzero(live)
        tids = tids[rows]
        idfs = [self._idf(t) for t in tids.tolist()]  # memoized, math.log as every path
        terms = [t for t, ok in zip(counts, live.tolist(), strict=True) if ok]
        read = QueryTerms(
            {t: counts[t] for t in terms}, rows, tids, np.asarray(idfs, np.float64), len(counts)
        )
        last[1][id(self)] = (self, read)
        return read

    @staticmethod
    def _weighted(read: QueryTerms) -> tuple[np.ndarray, np.ndarray]:
        """Term ids of a query's terms here and their weights (idf times the term's weight),
        heaviest first (then by id): the one order in which scores are summed."""
        weights = np.fromiter(read.weights.values(), np.float64, len(read.weights)) * read.idfs
        order = np.lexsort((read.tids, -weights))
        return read.tids[order], weights[order]

    def idfs(self, terms: Sequence[str]) -> np.ndarray:
        """float64: BM25's idf of each analyzed term here, NaN where no live document holds
        it (the formula of ``_idf``, over an array)."""
        ids, size = self.vocab.ids, self.df.size
        tids = np.fromiter((ids.get(t, -1) for t in terms), np.int64, len(terms))
        df = np.zeros(len(terms), np.float64)
        known = (tids >= 0) & (tids < size)
        df[known] = self.df[tids[known]]
        out = bm25_idf(df, float(self.n_live), np.log)
        out[df <= 0] = np.nan
        return out

    def holds(self, node_id: int) -> bool:
        """Whether ``node_id`` is a live document here."""
        return bool(self._live_slots(np.asarray([node_id], np.int64))[0][0])

    def _idf(self, tid: int) -> float | None:
        """BM25's idf of term ``tid``, None when no live document holds it (memoized: a
        version's statistics never change, and a query asks for each of its terms in each
        search, scoring and coverage pass)."""
        memo = self._idf_memo
        if tid in memo:
            return memo[tid]
        idf = None
        if tid < self.df.size and self.df[tid] > 0:
            idf = float(bm25_idf(float(self.df[tid]), float(self.n_live)))
        if len(memo) >= IDF_MEMO_MAX:  # queries naming the whole vocabulary stay bounded
            memo.clear()
        memo[tid] = idf
        return idf

    @functools.cached_property
    def _idf_memo(self) -> dict[int, float | None]:
        return {}

    @functools.cached_property
    def _postings(self) -> tuple[Postings, ...]:
        """Each segment's postings as ``core.bm25`` scans them."""
        return tuple(Postings(s.term_ptr, s.post_slot, s.post_tf) for s in self.segments)

    @functools.cached_property
    def _min_len(self) -> int:
        """The least slot length (dead slots included): every norm is at least its norm."""
        return int(self.slot_len.min()) if self.slot_len.size else 1

    def _bounds(self, tids: np.ndarray, k1: float, b: float) -> np.ndarray:
        """Per term, a bound of ``tf / (tf + norm)`` over its postings: its largest tf over
        the smallest norm of the collection (norm grows with the length)."""
        norm = self._norm(k1, b)
        least = norm.base + norm.per_term * self._min_len
        terms = np.asarray(tids, np.int64)
        top = np.zeros(terms.size, np.int64)
        for seg in self.segments:
            np.maximum(top, seg.max_tfs(terms), out=top)
        out = np.zeros(terms.size, np.float64)
        has = top > 0
        out[has] = top[has] / (top[has] + least)
        return out

    def _norm(self, k1: float, b: float) -> Norm:
        """BM25's length normalization of every slot (``core.bm25.Norm``: no array)."""
        return Norm.of(self.slot_len, self.total_len / float(self.n_live), k1, b)

    def term_scores(
        self, text: SparseQuery, ids: np.ndarray, k1: float = BM25_K1, b: float = BM25_B
    ) -> np.ndarray:
        """float64 ``[t, len(ids)]``: what each distinct term of ``text`` adds to each id's
        BM25 score, counted once (scale outside for a term's weight, or see
        ``SparseIndex.term_scores``).

        Rows follow the query's distinct analyzed terms in order of first occurrence; a term
        no live document here holds, and an id that is not live here, get zeros. Row sums
        times the terms' weights are :meth:`score_ids` (up to the order of the additions).
        """
        read = self.read(text)
        found, slots = self._live_slots(ids)
        out = np.zeros((read.n_terms, found.size), np.float64)
        cols = np.flatnonzero(found)
        if cols.size == 0 or read.tids.size == 0:
            return out
        order = np.argsort(slots, kind="stable")
        cand, cols = slots[order], cols[order]
        scores = np.zeros((read.tids.size, cand.size), np.float32)
        norm = self._norm(k1, b)
        for seg in self._postings:
            add_term_lookups(scores, cand, *seg, read.tids, read.idfs, *norm)
        out[np.ix_(read.rows, cols)] = scores
        return out

    def _live_slots(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bool per id: is it a live document here, the slots of the found ones)."""
        ids = np.asarray(ids, np.int64)
        sorted_ids, slots = self._live_order
        if sorted_ids.size == 0 or ids.size == 0:
            return np.zeros(ids.size, bool), np.zeros(0, np.int64)
        pos = np.minimum(np.searchsorted(sorted_ids, ids), sorted_ids.size - 1)
        found = sorted_ids[pos] == ids
        return found, slots[pos[found]]

    def score_ids(
        self, text: SparseQuery, ids: np.ndarray, k1: float = BM25_K1, b: float = BM25_B
    ) -> tuple[np.ndarray, np.ndarray]:
        """(whether each id is a live document here, its BM25 score for ``text`` or 0).

        Read from this thread's last :meth:`search` when it was for the same query (hybrid
        scores the union of its lists right after searching), else looked up in the query
        terms' postings; either way summed in the order the search uses, so an id gets the
        score a search gives it.
        """
        found, cand = self._live_slots(ids)
        out = np.zeros(found.size, np.float64)
        read = self.read(text)
        terms = read.weights
        if not (cand.size and terms):
            return found, out
        scores = np.zeros(cand.size, np.float32)
        todo = np.ones(cand.size, bool)
        last = getattr(_local, "last_search", None)
        # The search's reading of the same query here is this one (``read`` keeps it).
        if last is not None and last[0] is self and last[1] is read and last[2] == (k1, b):
            got, got_scores, incomplete = last[3:]
            at = np.minimum(np.searchsorted(got, cand), max(got.size - 1, 0))
            hit = got[at] == cand if got.size else np.zeros(cand.size, bool)
            scores[hit] = got_scores[at[hit]]
            todo = ~hit if incomplete else np.zeros(cand.size, bool)  # complete: the rest is 0
        if todo.any():
            scores[todo] = self._looked_up(read, cand[todo], k1, b)
        out[found] = scores
        return found, out

    def _looked_up(self, read: QueryTerms, cand: np.ndarray, k1: float, b: float) -> np.ndarray:
        """Scores of the slots ``cand`` by lookups in every query term's postings."""
        tids, weights = self._weighted(read)
        order = np.argsort(cand, kind="stable")
        scores = np.zeros(cand.size, np.float32)
        add_terms_lookups(scores, cand[order], self._postings, tids, weights, self._norm(k1, b))
        out = np.empty_like(scores)
        out[order] = scores
        return out

    def search(
        self,
        text: SparseQuery,
        k: int,
        k1: float = BM25_K1,
        b: float = BM25_B,
        within: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(node ids, scores) of the ``k`` best live documents with a positive score.

        Best first; equal scores in ascending node id. MaxScore (``core.bm25``): a common
        term's postings are not scanned once the rarer terms decide the top ``k``. With
        ``within`` (ascending node ids: a metadata filter) only those may be returned: the
        other slots count as dead in the top-k, the statistics are unchanged.
        """
        if k <= 0 or not self.n_live:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        read = self.read(text)
        tids, weights = self._weighted(read)
        if not tids.size:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        k = int(k)
        bounds = weights * self._bounds(tids, k1, b)
        alive = self.alive
        if within is not None:
            alive = np.zeros_like(alive)
            alive[self._live_slots(within)[1]] = True
        hit, vals, incomplete = top_candidates(
            self._postings, tids, weights, bounds, self._norm(k1, b), alive, k
        )
        # A filtered search leaves other live slots out: it is never complete for score_ids.
        incomplete = incomplete or within is not None
        _local.last_search = (self, read, (k1, b), hit, vals, incomplete)
        ids = self.slot_ids[hit]
        if ids.size > k:
            # A common word matches most of a collection: sort only the candidates scoring at
            # least the k-th best (ties at it included, so the id order of ties is exact).
            kth = np.partition(vals, ids.size - k)[ids.size - k]
            keep = vals >= kth
            ids, vals = ids[keep], vals[keep]
        order = np.lexsort((ids, -vals))[:k]
        return ids[order], vals[order]
