"""A navigable search graph made from a k-NN graph: the base layer of an HNSW index.

usearch builds an HNSW index by inserting one vector at a time, each insert a search of the
graph so far. Once the index outgrows the last-level cache every distance of those searches
reads its vector from DRAM, and the build's ``vector_index`` stage grew as ``N^1.47``
between 10k and 100k chunks (``benchmarks/results/scale.md``, the HNSW table). A kind's
k-NN graph costs ``O(n log n)`` (``core.nndescent``), and a search graph follows from it
without a single search (Vamana, Subramanya et al., NeurIPS 2019; NSG, Fu et al., VLDB
2019):

1. Each row's candidates are its k nearest and the rows that have it among theirs.
2. Robust pruning: a candidate ``c`` is kept unless a kept neighbour ``k`` is ``alpha``
   times closer to it than the row is, ``alpha * d(c, k) <= d(row, c)`` (``alpha`` 1 is
   HNSW's own heuristic; above 1 keeps more long edges).
3. The pruned edges are added in reverse and every row pruned again (so each edge a row
   keeps can also be walked back, as HNSW's inserts link both ways).
4. Every row is made reachable from the entry, the row nearest the mean (NSG's navigating
   node): a row no walk from the entry reaches gets an edge from a reachable row among its
   k nearest, or, when none is reachable (a group of duplicates whose k
   nearest are one another, a far cluster), from its nearest reachable row found by a
   search of the graph. Pruning keeps one slot of every row free, so a reachable row with
   room always exists (``_connect``).

The graph is flat (one layer, searched from the entry): usearch descends no upper layer.
Distances are ``1 - inner product`` (unit-normalized embeddings, usearch's ``ip`` metric).
Deterministic: per-row work is independent of the thread that does it, and the repair runs
in row order.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from graphstrata.core.nndescent import KnnGraph, _dot

__all__ = ["SearchGraph", "search_graph"]

#: Robust pruning's ``alpha`` (Vamana's default 1.2). Measured with a prototype of this
#: module (no reserved slot, no repair step; k-NN lists of 48 candidates) on 100k hashing
#: embeddings of the synthetic corpus' chunks, searched by usearch at ef 64 (a one-off script,
#: not kept, one run each): recall@10 0.682 at 1.0 (mean degree 3.8), 0.736 at 1.05,
#: 0.764 at 1.15, 0.771 at 1.3, 0.782 at 1.6 (degree 14.4, pruning 2.5x slower); usearch's
#: own inserts 0.679. On 51,952 MiniLM vectors (this module, code 3e25972) 1.1, 1.2 and 1.4
#: gave 0.9925, 0.9923 and 0.9924.
ALPHA = 1.2
#: Reverse candidates a row takes from the k-NN graph at most (its most similar ones).
REVERSE_CAP_FACTOR = 1
#: Candidates of a repair search (the beam of :func:`_beam_search`).
REPAIR_BEAM = 32


class SearchGraph(NamedTuple):
    """Per row its neighbours (int32 row indices, most similar first, ``-1`` after
    ``counts[row]``), and the row every search starts from."""

    neighbours: np.ndarray
    counts: np.ndarray
    entry: int


@njit(cache=True, nogil=True)
def _prune_row(
    x: np.ndarray,
    row: int,
    cand: np.ndarray,
    sims: np.ndarray,
    degree: int,
    alpha: np.float32,
    out: np.ndarray,
    out_sims: np.ndarray,
) -> int:
    """Robust pruning of one row's candidates into ``out`` (their similarities to the row
    into ``out_sims``); returns how many it kept. ``cand`` may hold duplicates and the row
    itself (both skipped)."""
    order = np.argsort(-sims, kind="mergesort")  # most similar first, ties by position
    kept = 0
    for p in order:
        c = cand[p]
        if c == row:
            continue
        dup = False
        for q in range(kept):
            if out[q] == c:
                dup = True
                break
        if dup:
            continue
        d_rc = np.float32(1.0) - sims[p]
        good = True
        for q in range(kept):
            if alpha * (np.float32(1.0) - _dot(x, c, out[q])) <= d_rc:
                good = False
                break
        if good:
            out[kept] = c
            out_sims[kept] = sims[p]
            kept += 1
            if kept == degree:
                break
    return kept


@njit(cache=True, nogil=True, parallel=True)
def _prune_all(
    x: np.ndarray,
    fwd: np.ndarray,
    fwd_sims: np.ndarray,
    rev_ptr: np.ndarray,
    rev: np.ndarray,
    rev_sims: np.ndarray,
    rev_cap: int,
    degree: int,
    alpha: np.float32,
    out: np.ndarray,
    out_sims: np.ndarray,
    counts: np.ndarray,
) -> None:
    """Every row pruned from its forward list (``-1`` padded) and its first ``rev_cap``
    reverse candidates (the most similar)."""
    w = fwd.shape[1]
    for i in prange(fwd.shape[0]):
        nr = min(rev_ptr[i + 1] - rev_ptr[i], rev_cap)
        cand = np.empty(w + nr, np.int32)
        sims = np.empty(w + nr, np.float32)
        nc = 0
        for j in range(w):
            if fwd[i, j] >= 0:
                cand[nc] = fwd[i, j]
                sims[nc] = fwd_sims[i, j]
                nc += 1
        for p in range(rev_ptr[i], rev_ptr[i] + nr):
            cand[nc] = rev[p]
            sims[nc] = rev_sims[p]
            nc += 1
        counts[i] = _prune_row(x, i, cand[:nc], sims[:nc], degree, alpha, out[i], out_sims[i])


def _reverse(indices: np.ndarray, sims: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR of the reversed edges of ``indices`` (``-1`` padded rows): per row, the rows
    that list it, most similar first (ties by ascending row)."""
    n, w = indices.shape
    src = np.repeat(np.arange(n, dtype=np.int32), w)
    dst = indices.ravel()
    s = sims.ravel()
    ok = dst >= 0
    src, dst, s = src[ok], dst[ok], s[ok]
    order = np.lexsort((src, -s, dst))
    src, dst, s = src[order], dst[order], s[order]
    ptr = np.searchsorted(dst, np.arange(n + 1)).astype(np.int64)
    return ptr, np.ascontiguousarray(src, np.int32), np.ascontiguousarray(s, np.float32)


@njit(cache=True, nogil=True)
def _reach(
    neighbours: np.ndarray,
    counts: np.ndarray,
    start: int,
    reached: np.ndarray,
    order: np.ndarray,
    size: int,
) -> int:
    """Mark every row a walk from ``start`` reaches and append the newly marked ones to
    ``order`` after its first ``size``; returns the new size (rows already marked are not
    walked again)."""
    if reached[start]:
        return size
    reached[start] = True
    order[size] = start
    top = size + 1
    p = size
    while p < top:  # ``order[size:top]`` is the walk's own queue
        v = order[p]
        p += 1
        for j in range(counts[v]):
            u = neighbours[v, j]
            if not reached[u]:
                reached[u] = True
                order[top] = u
                top += 1
    return top


@njit(cache=True, nogil=True)
def _beam_search(
    x: np.ndarray,
    neighbours: np.ndarray,
    counts: np.ndarray,
    entry: int,
    query: int,
    beam: int,
    seen: np.ndarray,
    stamp: int,
    found: np.ndarray,
) -> int:
    """Best-first search for row ``query`` from ``entry`` (what usearch's layer search
    does); the rows found, most similar first, go to ``found``; returns their count. Only
    rows reachable from ``entry`` can be found. ``seen`` holds ``stamp`` for visited rows."""
    sims = np.empty(beam, np.float32)
    expanded = np.zeros(beam, np.bool_)
    found[0] = entry
    sims[0] = _dot(x, query, entry)
    seen[entry] = stamp
    size = 1
    while True:
        best = -1
        for p in range(size):
            if not expanded[p]:
                best = p
                break
        if best < 0:
            return size
        expanded[best] = True
        v = found[best]
        for j in range(counts[v]):
            u = neighbours[v, j]
            if seen[u] == stamp:
                continue
            seen[u] = stamp
            s = _dot(x, query, u)
            if size == beam and s <= sims[size - 1]:
                continue
            pos = size if size < beam else beam - 1
            while pos > 0 and sims[pos - 1] < s:
                if pos < beam:
                    found[pos] = found[pos - 1]
                    sims[pos] = sims[pos - 1]
                    expanded[pos] = expanded[pos - 1]
                pos -= 1
            found[pos] = u
            sims[pos] = s
            expanded[pos] = False
            if size < beam:
                size += 1


@njit(cache=True, nogil=True)
def _link(neighbours: np.ndarray, counts: np.ndarray, source: int, row: int) -> None:
    neighbours[source, counts[source]] = row
    counts[source] += 1


@njit(cache=True, nogil=True)
def _nearest_with_room(
    x: np.ndarray, neighbours: np.ndarray, counts: np.ndarray, v: int, w: int
) -> int:
    """The neighbour of ``v`` most similar to ``w`` that has room, or -1."""
    degree = neighbours.shape[1]
    best = -1
    best_sim = np.float32(-np.inf)
    for j in range(counts[v]):
        u = neighbours[v, j]
        if counts[u] < degree:
            s = _dot(x, w, u)
            if s > best_sim:
                best, best_sim = u, s
    return best


@njit(cache=True, nogil=True)
def _connect(
    x: np.ndarray,
    neighbours: np.ndarray,
    counts: np.ndarray,
    entry: int,
    rev_ptr: np.ndarray,
    rev: np.ndarray,
    beam: int,
) -> tuple[int, int]:
    """Give every row a path from ``entry``; returns the edges added from a k-NN neighbour
    and after a search. Rows are taken in the order they become reachable: each offers an
    edge to the unreached rows that list it among their k nearest (``rev_ptr``/``rev``, the
    reversed k-NN graph), as HNSW links an inserted row from its neighbours; a full row
    offers its neighbour most similar to that row instead (k-NN hubs fill up). A row left unreached when none is left to offer (a group of duplicates whose k
    nearest are one another, a far cluster), lowest first, gets an edge from the most
    similar reachable row with room that a search from the entry finds (else the first
    reachable row with room), and the offers go on from it.

    Pruning left every row a free slot, so a reachable row with room always exists: the
    entry has one, and each edge added fills one slot and reaches a row with its own.

    On the S vectors of the 100k-chunk scale index (410,764) the pruned graph left 59,819
    rows unreached (a one-off script, not kept): a search from the entry for
    each took 29.3 s; offers from full rows skipped, 15.4 s (28,563 searches left); offers
    of a full row's nearest neighbour, as here, 2.7 s and no search, at a recall@10 on 100k
    hashing vectors of 0.757 against 0.768 and 0.773 (MiniLM: 0.9957 against 0.996); a
    search of 8 around a full row instead, 39.3 s."""
    n = neighbours.shape[0]
    degree = neighbours.shape[1]
    reached = np.zeros(n, np.bool_)
    order = np.empty(n, np.int32)
    size = _reach(neighbours, counts, entry, reached, order, 0)
    seen = np.zeros(n, np.int64)
    found = np.empty(beam, np.int32)
    offered = 0
    from_knn = 0
    searched = 0
    lowest = 0
    while True:
        while offered < size:
            v = order[offered]
            offered += 1
            for p in range(rev_ptr[v], rev_ptr[v + 1]):
                w = rev[p]
                if reached[w]:
                    continue
                source = (
                    v if counts[v] < degree else _nearest_with_room(x, neighbours, counts, v, w)
                )
                if source >= 0:
                    _link(neighbours, counts, source, w)
                    from_knn += 1
                    size = _reach(neighbours, counts, w, reached, order, size)
        while lowest < n and reached[lowest]:
            lowest += 1
        if lowest == n:
            return from_knn, searched
        u = lowest
        hits = _beam_search(x, neighbours, counts, entry, u, beam, seen, searched + 1, found)
        source = -1
        for p in range(hits):
            if counts[found[p]] < degree:
                source = found[p]
                break
        for v in range(n):
            if source >= 0:
                break
            if reached[v] and counts[v] < degree:
                source = v
        _link(neighbours, counts, source, u)
        searched += 1
        size = _reach(neighbours, counts, u, reached, order, size)


def _medoid(x: np.ndarray) -> int:
    """The row most similar to the mean direction (ties: the lowest row)."""
    return int(np.argmax(x @ x.mean(axis=0, dtype=np.float64).astype(np.float32)))


def search_graph(
    vectors: np.ndarray, knn: KnnGraph, degree: int, alpha: float = ALPHA
) -> SearchGraph:
    """The search graph of ``vectors`` from their k-NN graph (module docstring).

    Parameters
    ----------
    vectors : float array [n, d]
        The rows ``knn`` was built from (converted to contiguous float32).
    knn : KnnGraph
        Their k nearest others (``core.nndescent.knn_graph``).
    degree : int
        Neighbours per row at most (usearch's base-layer connectivity), at least 2: pruning
        keeps ``degree - 1`` and leaves the last slot to the repair.
    alpha : float
        Robust pruning's distance factor (``ALPHA``).

    Returns
    -------
    SearchGraph
        ``neighbours`` int32 [n, degree]; every row reachable from ``entry``.
    """
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n = x.shape[0]
    if knn.indices.shape[0] != n:
        raise ValueError("search_graph: the k-NN graph must have one row per vector")
    if degree < 2:
        raise ValueError("search_graph: degree must be at least 2 (one slot is the repair's)")
    if n == 0:
        return SearchGraph(np.zeros((0, degree), np.int32), np.zeros(0, np.int32), 0)
    a = np.float32(alpha)
    k = knn.indices.shape[1]
    kept = degree - 1  # the last slot of every row is left to the repair (``_connect``)
    # The k-NN graph reversed once: the first pruning reads each row's most similar ``k``
    # of it, the repair all of it.
    ptr, rev, rev_sims = _reverse(knn.indices, knn.sims)
    first = np.full((n, degree), -1, np.int32)
    first_sims = np.full((n, degree), -np.inf, np.float32)
    first_counts = np.zeros(n, np.int32)
    cap = max(1, REVERSE_CAP_FACTOR * k)
    _prune_all(
        x, knn.indices, knn.sims, ptr, rev, rev_sims, cap, kept, a, first, first_sims, first_counts
    )
    p2, r2, s2 = _reverse(first, first_sims)
    neighbours = np.full((n, degree), -1, np.int32)
    counts = np.zeros(n, np.int32)
    _prune_all(
        x,
        first,
        first_sims,
        p2,
        r2,
        s2,
        kept,
        kept,
        a,
        neighbours,
        np.empty_like(first_sims),
        counts,
    )
    entry = _medoid(x)
    _connect(x, neighbours, counts, entry, ptr, rev, REPAIR_BEAM)
    return SearchGraph(neighbours, counts, entry)
