"""BM25 top-k over postings lists with MaxScore pruning (exact), and lookups of given slots.

A query's terms are scored in one fixed order (the caller's, heaviest first). The first
terms' postings are scanned into an accumulator; after each term, when the bounds of the
terms not yet scanned sum to less than the k-th best partial score of a live slot, no slot
outside the scanned postings can reach the top k (its score is at most that sum), so the
remaining terms are only looked up for the slots already found (MaxScore, Turtle & Flood,
"Query evaluation: strategies and optimizations", IP&M 1995). A common word's postings run
over much of a collection: on a million chunks, scanning them was most of a query.

The result is exact: every slot that can be in the top k (ties at the k-th score included)
is returned with its full score, summed in the terms' order, so a slot gets bit for bit the
score :func:`add_lookups` gives it over all terms.

Scores are summed in float32 (each term's contribution computed in float64, then added),
as Lucene scores: the accumulator and the lengths are read at a random slot per posting,
and at a million slots float32 beside uint16 lengths (``Norm``; 7.5 MB against 18 MB for
float64 and int64) took the accumulation of the 1M scale index's queries from 1.65-3.0 ms to
0.46-1.5 ms (a one-off script, not kept). That the gain is fewer cache and TLB misses is an
inference from the sizes, not counted. The pruning tests allow for the float32 rounding
(``_slack``).

Kernels (Numba, ``cache=True``, ``nogil=True``): :func:`accumulate_terms` (scan terms' lists),
:func:`add_lookups` (galloping search of sorted slots in one list), :func:`add_term_lookups`
(the same for several terms of one CSR segment, a row each); :func:`add_terms_lookups` sums
several terms over every segment. :func:`top_candidates`
drives them; :class:`Scratch` is the accumulator a thread reuses (zeroed after each call).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from numba import njit

__all__ = [
    "MAX_LENGTH",
    "Norm",
    "Postings",
    "Scratch",
    "accumulate_terms",
    "add_lookups",
    "add_term_lookups",
    "add_terms_lookups",
    "idf",
    "lengths",
    "scratch",
    "top_candidates",
]

_local = threading.local()


def idf(df: Any, n: Any, log: Callable[[Any], Any] = math.log) -> Any:
    """BM25's idf (Lucene's, never negative) of document frequency ``df`` among ``n``
    documents: the one formula, for a scalar (``math.log``, the default) or an array
    (``np.log``).

    Examples
    --------
    >>> round(idf(1, 3), 6)  # ln(1 + 2.5 / 1.5)
    0.980829
    """
    return log(1.0 + (n - df + 0.5) / (df + 0.5))


#: The pruning test partitions the slots found so far; it runs only while the postings left
#: to scan number at least this many times those slots (else scanning them is cheaper).
PRUNE_TEST_RATIO = 4
#: ... and at least this many: scanning fewer postings costs less than the tests would
#: (a MultiHop-RAG question has ~20 terms over 8k chunks; measured in the closing note).
PRUNE_MIN_LEFT = 32768
#: The slots found are cut to those that can reach the top k (``_contenders``) once they
#: number this many times k and at least ``REDUCE_MIN``. The bounds are a choice, not
#: measured: below them the complete list is kept, which ``KindIndex.score_ids`` reuses
#: without lookups (a hybrid query scores the union of its two lists right after).
REDUCE_RATIO = 8
REDUCE_MIN = 4096


class Norm(NamedTuple):
    """BM25's length normalization of a slot, ``base + per_term * length[slot]``, i.e.
    ``k1 * (1 - b) + (k1 * b / avg_len) * len``: computed per posting from the lengths,
    so a new version (another average length) costs no pass over the collection. The
    fields are in the kernels' argument order (``*norm``)."""

    length: np.ndarray  # [n_slots], any integer type (collections keep uint16: ``lengths``)
    base: float
    per_term: float

    @classmethod
    def of(cls, length: np.ndarray, avg_len: float, k1: float, b: float) -> Norm:
        """The normalization of slots of ``length`` in a collection of ``avg_len``."""
        return cls(length, float(k1 * (1.0 - b)), float(k1 * b / avg_len))

    def at(self, slots: np.ndarray) -> np.ndarray:
        """float64 normalization of ``slots`` (the kernels' arithmetic)."""
        return self.base + self.per_term * self.length[slots].astype(np.float64)


#: Lengths are kept as uint16 and saturate here: a text of more terms counts as this many
#: (its norm is then so large that every term adds almost nothing). Lucene keeps a length
#: in one byte; this changes no score of a text under 65,536 terms.
MAX_LENGTH = 65535


def lengths(terms: np.ndarray) -> np.ndarray:
    """Slot lengths (terms per text, any integer type) as the collections keep them: uint16,
    at least 1, saturating at ``MAX_LENGTH``."""
    return np.clip(np.asarray(terms), 1, MAX_LENGTH).astype(np.uint16)


class Scratch(NamedTuple):
    """A thread's accumulator: ``acc`` is all zeros between calls."""

    acc: np.ndarray  # float32 [capacity]
    touched: np.ndarray  # int64 [capacity]: slots with a non-zero acc, first n of them


def scratch(n_slots: int) -> Scratch:
    """This thread's scratch for collections of up to ``n_slots`` slots.

    One per thread, grown as needed and shared by every collection the thread searches (it
    is zero again after each call), so a new version's first query allocates nothing.
    """
    have: Scratch | None = getattr(_local, "scratch", None)
    if have is None or have.acc.size < n_slots:
        size = max(int(n_slots * 1.25), 1024)
        have = _local.scratch = Scratch(np.zeros(size, np.float32), np.zeros(size, np.int64))
    return have


@njit(cache=True, nogil=True, inline="always")
def _contribution(
    weight: float, tf: int, length: np.ndarray, base: float, per_term: float, slot: int
) -> float:
    # One term's part of a slot's score: weight * tf / (tf + norm(slot)).
    return weight * tf / (tf + (base + per_term * length[slot]))


class Postings(NamedTuple):
    """One segment's postings as CSR: term ``t``'s slots (ascending) and term frequencies are
    ``post_slot`` / ``post_tf`` at ``term_ptr[t]:term_ptr[t + 1]``; a term past the end of
    ``term_ptr`` has none (it is newer than the segment). The fields are in the kernels'
    argument order (``*postings``)."""

    term_ptr: np.ndarray  # int64 [n_terms + 1]
    post_slot: np.ndarray  # int64 [n_postings]
    post_tf: np.ndarray  # integer [n_postings]


@njit(cache=True, nogil=True)
def accumulate_terms(
    acc: np.ndarray,
    touched: np.ndarray,
    n_touched: int,
    term_ptr: np.ndarray,
    post_slot: np.ndarray,
    post_tf: np.ndarray,
    tids: np.ndarray,
    weights: np.ndarray,
    j0: int,
    j1: int,
    length: np.ndarray,
    base: float,
    per_term: float,
) -> int:
    """Add ``weights[j] * tf / (tf + norm(slot))`` of the postings of terms ``tids[j0:j1]``
    of one segment (:class:`Postings`) to ``acc`` (float32; the contribution in float64;
    ``norm`` is ``Norm``'s ``base + per_term * length[slot]``, passed apart: as a NamedTuple
    a call on a 200-posting list took 1.3-1.9 us against 0.7-1.0 us, a one-off script, not
    kept), term after term in that order.

    Contributions are positive (``weight > 0``, ``tf >= 1``), so a slot whose ``acc`` is 0
    is new: it is appended to ``touched``. Returns the new count of touched slots.
    """
    for j in range(j0, j1):
        t = tids[j]
        if t + 1 >= term_ptr.shape[0]:
            continue
        w = weights[j]
        for i in range(term_ptr[t], term_ptr[t + 1]):
            s = post_slot[i]
            if acc[s] == 0.0:
                touched[n_touched] = s
                n_touched += 1
            acc[s] += _contribution(w, post_tf[i], length, base, per_term, s)
    return n_touched


@njit(cache=True, nogil=True)
def add_lookups(
    scores: np.ndarray,
    cand: np.ndarray,
    slots: np.ndarray,
    tf: np.ndarray,
    length: np.ndarray,
    base: float,
    per_term: float,
    weight: float,
) -> None:
    """``scores[i] += weight * tf / (tf + norm(cand[i]))`` where ``cand[i]`` is in ``slots``
    (``norm`` as in :func:`accumulate_terms`; ``scores`` float32, as ``acc`` there, so a slot's
    sum is the same bits).

    ``cand`` and ``slots`` ascending (``cand`` may repeat); a galloping search from the last
    position costs O(|cand| log(|slots| / |cand|)).
    """
    p = slots.shape[0]
    j = 0
    for i in range(cand.shape[0]):
        if j >= p:
            return
        c = cand[i]
        if slots[j] < c:
            lo, step = j, 1
            hi = lo + 1
            while hi < p and slots[hi] < c:
                lo = hi
                step *= 2
                hi = lo + step
            hi = min(hi, p)
            a, b = lo + 1, hi  # slots[lo] < c; the first slot >= c is in [a, b]
            while a < b:
                m = (a + b) >> 1
                if slots[m] < c:
                    a = m + 1
                else:
                    b = m
            j = a
        if j < p and slots[j] == c:
            scores[i] += _contribution(weight, tf[j], length, base, per_term, c)


@njit(cache=True, nogil=True)
def add_term_lookups(
    scores: np.ndarray,
    cand: np.ndarray,
    term_ptr: np.ndarray,
    post_slot: np.ndarray,
    post_tf: np.ndarray,
    tids: np.ndarray,
    weights: np.ndarray,
    length: np.ndarray,
    base: float,
    per_term: float,
) -> None:
    """:func:`add_lookups` of each term ``tids[j]`` of one CSR segment (postings of term
    ``t`` at ``term_ptr[t]:term_ptr[t + 1]``; a term past its end has none) into row ``j``
    of ``scores`` (float32 ``[len(tids), len(cand)]``), at weight ``weights[j]``.

    One call per segment instead of one per term and segment: a ``graph`` query scores
    ~440 candidates for 11-28 terms (``SparseIndex.term_scores``).
    """
    for j in range(tids.shape[0]):
        t = tids[j]
        if t + 1 >= term_ptr.shape[0]:
            continue
        a, b = term_ptr[t], term_ptr[t + 1]
        add_lookups(
            scores[j], cand, post_slot[a:b], post_tf[a:b], length, base, per_term, weights[j]
        )


def add_terms_lookups(
    scores: np.ndarray,
    cand: np.ndarray,
    segments: Sequence[Postings],
    tids: np.ndarray,
    weights: np.ndarray,
    norm: Norm,
) -> None:
    """:func:`add_lookups` of each term of ``tids`` (at ``weights``), term after term, each
    over every segment, into ``scores`` (float32, one per slot of ``cand``, ascending): a
    slot's sum gets the terms in the order a scan adds them."""
    for j in range(len(tids)):
        t = int(tids[j])
        for term_ptr, post_slot, post_tf in segments:
            if t + 1 < term_ptr.size:
                a, b = term_ptr[t], term_ptr[t + 1]
                add_lookups(scores, cand, post_slot[a:b], post_tf[a:b], *norm, float(weights[j]))


def _kth_live(acc: np.ndarray, cand: np.ndarray, alive: np.ndarray, k: int) -> float:
    """The k-th best accumulated score of a live candidate (-inf with fewer than k)."""
    part = acc[cand[alive[cand]]]
    if part.size < k:
        return -np.inf
    return float(np.partition(part, part.size - k)[part.size - k])


def _term_sizes(segments: Sequence[Postings], tids: np.ndarray) -> np.ndarray:
    """int64 per term of ``tids``: its postings over every segment."""
    sizes = np.zeros(tids.size, np.int64)
    for seg in segments:
        held = tids + 1 < seg.term_ptr.size
        t = np.where(held, tids, 0)
        sizes += np.where(held, seg.term_ptr[t + 1] - seg.term_ptr[t], 0)
    return sizes


def top_candidates(
    segments: Sequence[Postings],
    tids: np.ndarray,
    weights: np.ndarray,
    bounds: np.ndarray,
    norm: Norm,
    alive: np.ndarray,
    k: int,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Live slots that can be among the ``k`` best, with their full scores.

    Parameters
    ----------
    segments:
        The collection's postings, one :class:`Postings` per segment (disjoint slots).
    tids:
        int64: the query's term ids, in scoring order (heaviest first).
    weights:
        float64 per term: its idf times its count in the query (> 0).
    bounds:
        float64 per term: an upper bound of its contribution to any slot (``weight`` times
        a bound of ``tf / (tf + norm)`` over its postings).
    norm:
        BM25's length normalization of each slot.
    alive:
        bool per slot.
    k:
        How many best slots are wanted (>= 1).

    Returns
    -------
    tuple
        Ascending slots (int64) and their scores (float32, positive): a superset of the
        top ``k`` live slots and of every slot tied with the k-th; and whether slots were
        left out (False: the slots are every live slot with a positive score).
    """
    tids = np.asarray(tids, np.int64)
    m = tids.size
    acc, touched = scratch(alive.shape[0])
    # postings left to scan after each term: the pruning test (a partition of the slots
    # found) is only worth it while scanning the rest would cost more
    sizes = _term_sizes(segments, tids)
    left = np.append(np.cumsum(sizes[::-1])[::-1], 0)  # left[j]: postings of terms j..m-1
    # From ``quiet`` terms scanned on, no test can come (``left`` only falls): one segment's
    # remaining terms are scanned in one call, not one per term. Several segments are
    # scanned term by term, each term over all of them, so a slot's score is summed in the
    # terms' order whatever the segments.
    quiet = int(np.argmax(left < PRUNE_MIN_LEFT))
    one = len(segments) == 1
    slack = _slack(m)
    n = 0
    scanned = 0
    try:
        while scanned < m:
            end = m if one and scanned + 1 >= quiet else scanned + 1
            for seg in segments:
                n = accumulate_terms(acc, touched, n, *seg, tids, weights, scanned, end, *norm)
            scanned = end
            if (
                scanned == m
                or n < k
                or int(left[scanned]) < max(PRUNE_TEST_RATIO * n, PRUNE_MIN_LEFT)
            ):
                continue
            rest = float(bounds[scanned:].sum()) * slack
            # Unscanned terms give an unseen slot at most ``rest``; prune once that is below
            # the k-th best seen (cheap test first: the best partial is at most the scanned
            # terms' bounds).
            if rest >= float(bounds[:scanned].sum()):
                continue
            if rest < _kth_live(acc, touched[:n], alive, k):
                break
        rest = float(bounds[scanned:].sum()) if scanned < m else 0.0
        found, reduced = _contenders(acc, touched[:n], alive, k, rest, slack)
        cand = np.sort(found)
        scores = acc[cand]
    finally:
        acc[touched[:n]] = 0.0
    add_terms_lookups(scores, cand, segments, tids[scanned:], weights[scanned:], norm)
    live = alive[cand]
    return cand[live], scores[live], scanned < m or reduced


def _slack(m: int) -> float:
    """Factor a bound is inflated by against float32 rounding: a sum of m positive float32
    additions is at most ``(1 + 2**-24)**m`` times the exact sum (twice that margin)."""
    return 1.0 + (m + 1) * 2.0**-23


def _contenders(
    acc: np.ndarray, found: np.ndarray, alive: np.ndarray, k: int, rest: float, slack: float
) -> tuple[np.ndarray, bool]:
    """The slots of ``found`` that can still be among the ``k`` best, and whether any with
    a positive score was left out (``slack``: see :func:`_slack`).

    With many more slots found than ``k`` (``REDUCE_RATIO``, ``REDUCE_MIN``), a slot whose
    partial score plus ``rest`` (a bound of what the terms not scanned can add) is below
    the k-th best partial score of a live slot cannot reach the k-th best final score (at
    least that partial, contributions being positive), nor tie with it: it is dropped
    before the sort and the lookups, which otherwise ran over every slot a query's terms
    matched (five terms of 1k-20k postings each over a million chunks: ~45k slots sorted,
    looked up and mapped to ids, ~1 ms of a 3.5 ms search; a one-off script, not kept).
    (Compiled passes instead of these gathers and masks measured no faster: 3.04 / 2.55
    against 2.95 / 2.71 ms per search at 1M chunks, a one-off script, not kept.)
    """
    if found.size < max(REDUCE_RATIO * k, REDUCE_MIN):
        return found, False
    partial = acc[found]
    live = alive[found]
    live_partial = partial[live]
    if live_partial.size < k:
        return found, False
    kth = float(np.partition(live_partial, live_partial.size - k)[live_partial.size - k])
    keep = live & ((partial.astype(np.float64) + rest) * slack >= kth)
    return found[keep], True
