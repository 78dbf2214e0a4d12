"""Postings segments of a BM25 collection: the postings of a range of slots, by term (CSR,
what a search scans) and by slot (what a removal reads), built once and never modified.

``postings.KindIndex`` holds a tuple of them (a build's one, a write's new ones, joined as a
binary counter by :func:`joined_tail`, compacted into one by maintenance).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Segment", "joined_tail", "term_max"]


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(s, e)`` for each pair (int64)."""
    lens = ends - starts
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    offsets = np.repeat(starts - (np.cumsum(lens) - lens), lens)
    return np.arange(total, dtype=np.int64) + offsets


def _forward(slots: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR by slot of (slot, value) pairs: (ptr [n + 1], values sorted by slot then value)."""
    order = np.lexsort((values, slots))
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(slots, minlength=n), out=ptr[1:])
    return ptr, values[order].astype(np.int64)


def _distinct_pairs(
    docs: Sequence[np.ndarray], width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(slot, id, count) of the distinct ids of each document."""
    n = len(docs)
    lens = np.fromiter((d.size for d in docs), np.int64, n)
    flat = np.concatenate(docs) if n else np.zeros(0, np.int64)
    slot_of = np.repeat(np.arange(n, dtype=np.int64), lens)
    pairs, counts = np.unique(slot_of * max(width, 1) + flat, return_counts=True)
    slots, ids = np.divmod(pairs, max(width, 1))
    return slots, ids, counts


@dataclass(frozen=True)
class Segment:
    """Postings of the slots ``[first, first + n)``: by term (CSR) and by slot (forward).

    ``term_ptr`` covers term ids ``< len(term_ptr) - 1``; ``post_slot`` are global slots.
    """

    first: int
    n: int
    term_ptr: np.ndarray  # int64 [n_terms + 1]
    post_slot: np.ndarray  # int64, sorted by (term, slot)
    post_tf: np.ndarray  # int32
    doc_ptr: np.ndarray  # int64 [n + 1]
    doc_term: np.ndarray  # int64, the distinct terms of each slot
    # int32 [n_terms]: each term's largest tf (0: no postings); None for a segment read
    # from a file written before it was kept (then found per term on first use).
    term_max: np.ndarray | None

    @classmethod
    def build(
        cls,
        first: int,
        postings: tuple[np.ndarray, np.ndarray, np.ndarray],
        n: int,
        n_terms: int,
    ) -> Segment:
        """From (local slot, term, tf) triples, one per distinct term of a slot."""
        slots, terms, tfs = postings
        doc_ptr, doc_term = _forward(slots, terms, n)
        by_term = np.lexsort((slots, terms))
        term_ptr = np.zeros(n_terms + 1, np.int64)
        np.cumsum(np.bincount(terms, minlength=n_terms), out=term_ptr[1:])
        post_tf = tfs[by_term].astype(np.int32)
        return cls(
            first=first,
            n=n,
            term_ptr=term_ptr,
            post_slot=slots[by_term].astype(np.int64) + first,
            post_tf=post_tf,
            doc_ptr=doc_ptr,
            doc_term=doc_term,
            term_max=term_max(term_ptr, post_tf),
        )

    @classmethod
    def from_docs(cls, first: int, term_docs: Sequence[np.ndarray], n_terms: int) -> Segment:
        """From each document's term ids (repeats = term frequency)."""
        return cls.build(first, _distinct_pairs(term_docs, n_terms), len(term_docs), n_terms)

    def triples(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every posting as (global slot, term, tf), by term then slot."""
        counts = np.diff(self.term_ptr)
        terms = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
        return self.post_slot, terms, self.post_tf

    @classmethod
    def joined(cls, a: Segment, b: Segment) -> Segment:
        """One segment of ``a``'s slots and then ``b``'s (which follow them), tombstones
        kept (the collection's ``alive`` hides them)."""
        if b.first != a.first + a.n:
            raise ValueError("postings: only adjacent segments are joined")
        (sa, ta, fa), (sb, tb, fb) = a.triples(), b.triples()
        n_terms = max(a.term_ptr.size, b.term_ptr.size) - 1
        postings = (
            np.concatenate([sa, sb]) - a.first,
            np.concatenate([ta, tb]),
            np.concatenate([fa, fb]),
        )
        return cls.build(a.first, postings, a.n + b.n, n_terms)

    def terms_of(self, slots: np.ndarray) -> np.ndarray:
        """The distinct terms of each of ``slots`` (global, inside this segment), concatenated."""
        local = slots - self.first
        return self.doc_term[_ranges(self.doc_ptr[local], self.doc_ptr[local + 1])]

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        """(slots, tfs) of one term (empty when the term is newer than the segment)."""
        if term >= self.term_ptr.size - 1:
            return self.post_slot[:0], self.post_tf[:0]
        a, b = self.term_ptr[term], self.term_ptr[term + 1]
        return self.post_slot[a:b], self.post_tf[a:b]

    def max_tfs(self, terms: np.ndarray) -> np.ndarray:
        """int64: :meth:`max_tf` of each of ``terms`` (one gather where the segment keeps
        ``term_max``)."""
        tm = self.term_max
        if tm is None:
            return np.fromiter((self.max_tf(t) for t in terms.tolist()), np.int64, terms.size)
        held = terms < tm.size
        return np.where(held, tm[np.where(held, terms, 0)] if tm.size else 0, 0).astype(np.int64)

    def max_tf(self, term: int) -> int:
        """The largest tf in the postings of ``term`` (0 when it has none)."""
        if self.term_max is not None:
            return int(self.term_max[term]) if term < self.term_max.size else 0
        known = self._max_tf.get(term)
        if known is None:
            tf = self.postings(term)[1]
            known = self._max_tf[term] = int(tf.max()) if tf.size else 0
        return known

    @functools.cached_property
    def _max_tf(self) -> dict[int, int]:
        # Not made at open for an older file: it would read every tf of the collection
        # (at a million chunks, a mapped array of hundreds of MB) before the first query.
        return {}


def term_max(term_ptr: np.ndarray, post_tf: np.ndarray) -> np.ndarray:
    """int32 [n_terms]: the largest tf of each term's postings (CSR ``term_ptr``), 0 for a
    term without postings.

    Made once per segment, where each query's BM25 bounds took the max over a term's
    postings the first time a process searched the term: O(df) per new query term. The
    gain is small, as most of that cost was the postings' page faults, which the scoring
    pays anyway: the chunks' search of first-seen queries at 1M chunks went 1.10 -> 1.02-1.07
    ms p50 (a one-off script, not kept; issue 17).
    """
    counts = np.diff(term_ptr)
    out = np.zeros(counts.size, np.int32)
    has = counts > 0
    if post_tf.size:
        # Only non-empty terms start a run, so each run is exactly one term's postings.
        out[has] = np.maximum.reduceat(post_tf, term_ptr[:-1][has])
    return out


def joined_tail(segments: tuple[Segment, ...]) -> tuple[Segment, ...]:
    """The last segments joined while the last holds at least half as many slots as the one
        before it: a binary counter over the writes' segments.

        A search reads every segment's postings of each query term, and each write adds a
        segment: left apart up to ``MaintenanceConfig.postings_segments`` (then all compacted into
    one), a million-chunk
        index searched up to 17 lists per term and kind; the first ``collapsed`` query after
        each of 30 one-document writes made 36 list scans and 91 lookups, against 4 and 15 on
        the freshly opened index (one segment) and 13 and 35 with the joining (cProfile call
        counts, a one-off script, not kept; the time per query was not compared on the same
        queries). Joined this way a collection of n slots keeps at most ``log2 n + 1`` segments, the large one
        first and untouched until the rest reach half its size, and each posting is copied
        ``O(log n)`` times over its life.
    """
    segs = list(segments)
    while len(segs) >= 2 and 2 * segs[-1].n >= segs[-2].n:
        last = segs.pop()
        segs.append(Segment.joined(segs.pop(), last))
    return tuple(segs)
