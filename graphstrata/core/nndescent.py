"""Approximate k-nearest-neighbour graph of one vector set: random projection forest + NN-descent.

The heterograph's semantic edges of a large batch (a build: every new node a query against
every other) are a k-NN *graph*, not a set of independent searches. Building an HNSW index
and searching it with every vector (usearch) measured ``N^1.47`` between 10k and 100k
chunks (``benchmarks/results/scale.md``: 22 s to 664 s): on high-dimensional data every
insertion walks further as the graph grows. This module follows pynndescent (Dong et al.,
WWW 2011; McInnes' pynndescent): a few random projection trees give every point a first
neighbour list from its leaves (``O(n log n)``), then NN-descent rounds compare the
neighbours of each point's neighbours (``O(n m^2)`` a round, rounds bounded by
``log2 n``). Measured (``benchmarks/scale/scale.py ann``, hashing embeddings, 200k vectors): 118 s
against 552 s for HNSW, recall@16 0.66 against 0.72; the 100k-chunk build's stage took 398 s
(HNSW took 664 s on a machine ~3x faster; not run on the same one).

Similarity is the inner product (the vectors are unit-normalized embeddings); the trees
split by angle. The result is deterministic: every random choice is a hash of the seed and
the indices involved, and each row's heap receives its updates in a fixed order whatever the
number of threads.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import get_num_threads, njit, prange

from graphstrata.core.sampling import mix64

__all__ = ["KnnGraph", "graph_edges", "knn_graph"]

#: Random projection trees: each gives every point the other points of its leaf as
#: candidates. pynndescent grows the count with ``sqrt(n)``; a fixed count keeps the forest
#: ``O(n log n)`` and NN-descent recovers the rest (recall measured by
#: ``benchmarks/scale/scale.py ann``).
N_TREES = 6
#: Points per leaf at most (pynndescent: ``max(10, n_neighbors)``; 2 m here, since the
#: leaves are the only candidates the first round starts from).
LEAF_FACTOR = 2
#: Each row keeps this many times ``m`` neighbours while descending and returns its best
#: ``m``: on 50k hashing embeddings of the synthetic corpus' chunks and sentences (m 16,
#: one-off runs) lists of m reached recall@16 0.51, of 2m 0.72-0.77, of 3m 0.84;
#: ``benchmarks/scale/scale.py ann`` at 50k: 0.825 in 24.7 s, HNSW 0.829 in 73.9 s.
LIST_FACTOR = 3
#: Candidates per point and round, new and old each (pynndescent: ``min(60, n_neighbors)``;
#: with lists of 2m, 32 gave 0.72 and 48 0.77 in the runs above).
MAX_CANDIDATES = 48
#: A round that changes fewer than this share of the ``n m`` entries ends the descent
#: (pynndescent's ``delta``).
DELTA = 0.001
#: Rows whose local joins are generated before their updates are applied. A row makes at
#: most ``c (c - 1) / 2 + c^2`` updates of 12 bytes (c = ``MAX_CANDIDATES``): 3,432 and
#: ~170 MB for the block at the defaults.
BLOCK_ROWS = 4096

#: An empty slot of a candidate heap: above every packed key (``_push_key``).
_EMPTY_KEY = np.uint64(0xFFFFFFFFFFFFFFFF)
#: The row half of a packed key.
_LOW32 = np.uint64(0xFFFFFFFF)


class KnnGraph(NamedTuple):
    """Per row: its neighbours' row indices (int32, -1 where missing) and similarities
    (float32, ``-inf`` where missing), most similar first."""

    indices: np.ndarray
    sims: np.ndarray


# ---------------------------------------------------------------------- helpers
@njit(cache=True, nogil=True, inline="always")
def _mix(a: np.uint64) -> np.uint64:
    """One splitmix64 step: the golden-ratio increment, then ``core.sampling.mix64``."""
    return np.uint64(mix64(a + np.uint64(0x9E3779B97F4A7C15)))


@njit(cache=True, nogil=True, inline="always")
def _hash3(seed: np.uint64, a: int, b: int) -> np.uint64:
    return _mix(_mix(seed ^ np.uint64(a)) + np.uint64(b))


@njit(cache=True, nogil=True, fastmath=True, inline="always")
def _dot(x: np.ndarray, a: int, b: int) -> np.float32:
    s = np.float32(0.0)
    for t in range(x.shape[1]):
        s += x[a, t] * x[b, t]
    return s


@njit(cache=True, nogil=True)
def _push(
    indices: np.ndarray,
    sims: np.ndarray,
    flags: np.ndarray,
    row: int,
    s: float | np.float32,
    j: int,
) -> int:
    """Offer neighbour ``j`` at similarity ``s`` to ``row``'s min-heap (root: the worst kept
    neighbour); a new entry is flagged new. Returns 1 when the heap changed."""
    if s <= sims[row, 0]:
        return 0
    m = indices.shape[1]
    for t in range(m):
        if indices[row, t] == j:
            return 0
    # Replace the root and sift it down.
    pos = 0
    while True:
        left = 2 * pos + 1
        if left >= m:
            break
        right = left + 1
        child = left
        if right < m and sims[row, right] < sims[row, left]:
            child = right
        if sims[row, child] >= s:
            break
        sims[row, pos] = sims[row, child]
        indices[row, pos] = indices[row, child]
        flags[row, pos] = flags[row, child]
        pos = child
    sims[row, pos] = s
    indices[row, pos] = j
    flags[row, pos] = 1
    return 1


# ---------------------------------------------------------------------- forest
@njit(cache=True, nogil=True, fastmath=True)
def _rp_tree(x: np.ndarray, leaf_size: int, seed: np.uint64) -> tuple[np.ndarray, np.ndarray]:
    """One angular random projection tree: ``(order, bounds)``, the leaves being
    ``order[bounds[i]:bounds[i + 1]]``. A node splits by the hyperplane halfway (in angle)
    between two of its points picked by hash; a split that sends everything one way halves
    the node instead."""
    n, d = x.shape
    order = np.arange(n).astype(np.int64)
    margins = np.empty(n, np.float32)
    normal = np.empty(d, np.float32)
    bounds = [0]
    stack = [(0, n)]
    node = 0
    while len(stack):
        start, end = stack.pop()
        size = end - start
        if size <= leaf_size:
            bounds.append(end)
            continue
        node += 1
        h = _hash3(seed, node, size)
        a = order[start + np.int64(h % np.uint64(size))]
        b = order[start + np.int64((h >> np.uint64(32)) % np.uint64(size))]
        na = np.float32(0.0)
        nb = np.float32(0.0)
        for t in range(d):
            na += x[a, t] * x[a, t]
            nb += x[b, t] * x[b, t]
        na = np.float32(1.0) / max(np.sqrt(na), np.float32(1e-12))
        nb = np.float32(1.0) / max(np.sqrt(nb), np.float32(1e-12))
        for t in range(d):
            normal[t] = x[a, t] * na - x[b, t] * nb
        n_left = 0
        for i in range(start, end):
            p = order[i]
            s = np.float32(0.0)
            for t in range(d):
                s += x[p, t] * normal[t]
            margins[i] = s
            if s < 0:
                n_left += 1
        if n_left == 0 or n_left == size:
            mid = start + size // 2
        else:
            # Stable partition: left side first, in the order the node had them.
            tmp = order[start:end].copy()
            lo = start
            hi = start + n_left
            for i in range(size):
                if margins[start + i] < 0:
                    order[lo] = tmp[i]
                    lo += 1
                else:
                    order[hi] = tmp[i]
                    hi += 1
            mid = start + n_left
        # The right half first onto the stack, so leaves come out left to right.
        stack.append((mid, end))
        stack.append((start, mid))
    return order, np.array(bounds, dtype=np.int64)


@njit(cache=True, nogil=True, parallel=True)
def _rp_forest(
    x: np.ndarray, leaf_size: int, seeds: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One :func:`_rp_tree` per seed, the trees built side by side (each reads ``x`` only):
    ``orders`` [trees, n], ``bounds`` [trees, n + 1] and each tree's bound count."""
    n = x.shape[0]
    n_trees = seeds.size
    orders = np.empty((n_trees, n), np.int64)
    bounds = np.zeros((n_trees, n + 1), np.int64)
    counts = np.zeros(n_trees, np.int64)
    for t in prange(n_trees):
        order, tree_bounds = _rp_tree(x, leaf_size, seeds[t])
        orders[t] = order
        bounds[t, : tree_bounds.size] = tree_bounds
        counts[t] = tree_bounds.size
    return orders, bounds, counts


@njit(cache=True, nogil=True, parallel=True, fastmath=True)
def _leaf_join(
    x: np.ndarray,
    order: np.ndarray,
    bounds: np.ndarray,
    indices: np.ndarray,
    sims: np.ndarray,
    flags: np.ndarray,
) -> None:
    """Every pair of points sharing a leaf, offered to both. The leaves of one tree are
    disjoint, so each row is written by one thread."""
    for leaf in prange(bounds.size - 1):
        lo = bounds[leaf]
        hi = bounds[leaf + 1]
        for i in range(lo, hi):
            p = order[i]
            for j in range(i + 1, hi):
                q = order[j]
                s = _dot(x, p, q)
                _push(indices, sims, flags, p, s, q)
                _push(indices, sims, flags, q, s, p)


@njit(cache=True, nogil=True, parallel=True, fastmath=True)
def _seed_lists(
    x: np.ndarray, init: np.ndarray, indices: np.ndarray, sims: np.ndarray, flags: np.ndarray
) -> None:
    """Each row's given neighbours (``-1``: none) offered to its own heap only, so each row
    is written by one thread; NN-descent's reverse candidates reach the others."""
    for i in prange(init.shape[0]):
        for t in range(init.shape[1]):
            j = init[i, t]
            if j >= 0 and j != i:
                _push(indices, sims, flags, i, _dot(x, i, j), j)


# ---------------------------------------------------------------------- descent
@njit(cache=True, nogil=True, inline="always")
def _push_key(keys: np.ndarray, row: int, key: np.uint64, j: int) -> None:
    """Offer packed ``key`` (priority in the high 32 bits, ``j`` in the low) to ``row``'s
    max-heap of the smallest keys (root: the largest kept; empty slots are ``_EMPTY_KEY``).
    A row keeps each candidate once, with the key it was first accepted with."""
    if key >= keys[row, 0]:
        return
    c = keys.shape[1]
    low = np.uint64(j)
    for t in range(c):
        if (keys[row, t] & _LOW32) == low:
            return
    pos = 0
    while True:
        left = 2 * pos + 1
        if left >= c:
            break
        child = left
        if left + 1 < c and keys[row, left + 1] > keys[row, left]:
            child = left + 1
        if keys[row, child] <= key:
            break
        keys[row, pos] = keys[row, child]
        pos = child
    keys[row, pos] = key


@njit(cache=True, nogil=True, parallel=True)
def _candidates(
    indices: np.ndarray,
    flags: np.ndarray,
    seed: np.uint64,
    n_threads: int,
    new_keys: np.ndarray,
    old_keys: np.ndarray,
    new_c: np.ndarray,
    old_c: np.ndarray,
) -> None:
    """Each row's new and old candidates into ``new_c`` and ``old_c``: its neighbours and
    the rows that list it, at most ``new_keys.shape[1]`` of each, the ones with the smallest
    hash priority. Row ranges are split over threads; every thread reads every entry and writes
    only its own rows.

    The local join pairs a row's new candidates with its new and old ones, so a row without
    new candidates gets no old ones either: late rounds, where few entries are new, skip
    most of the random reverse pushes. A heap entry is one packed ``uint64``
    (``_push_key``) so that the root test of a push reads one cache line of the row."""
    n, m = indices.shape
    c = new_keys.shape[1]
    has_new = np.zeros(n, np.bool_)
    span = (n + n_threads - 1) // n_threads
    for t in prange(n_threads):
        lo = t * span
        hi = min(n, lo + span)
        for i in range(n):
            for k in range(m):
                if flags[i, k] == 1:
                    j = indices[i, k]
                    if lo <= i < hi:
                        has_new[i] = True
                    if lo <= j < hi:
                        has_new[j] = True
    for t in prange(n_threads):
        lo = t * span
        hi = min(n, lo + span)
        new_keys[lo:hi] = _EMPTY_KEY
        old_keys[lo:hi] = _EMPTY_KEY
        for i in range(n):
            own = lo <= i < hi and has_new[i]
            for k in range(m):
                j = indices[i, k]
                if j < 0:
                    continue
                rev = lo <= j < hi and has_new[j]
                if not (own or rev):
                    continue
                high = (_hash3(seed, i, j) >> np.uint64(32)) << np.uint64(32)
                keys = new_keys if flags[i, k] == 1 else old_keys
                if own:
                    _push_key(keys, i, high | np.uint64(j), j)
                if rev:
                    _push_key(keys, j, high | np.uint64(i), i)
        for i in range(lo, hi):
            for u in range(c):
                key = new_keys[i, u]
                new_c[i, u] = -1 if key == _EMPTY_KEY else np.int32(key & _LOW32)
                key = old_keys[i, u]
                old_c[i, u] = -1 if key == _EMPTY_KEY else np.int32(key & _LOW32)


@njit(cache=True, nogil=True, parallel=True)
def _mark_old(indices: np.ndarray, flags: np.ndarray, new_c: np.ndarray) -> None:
    """A neighbour that became a new candidate of its row is old from now on (each row
    writes only its own flags)."""
    n, m = indices.shape
    for i in prange(n):
        for k in range(m):
            if flags[i, k] == 1:
                j = indices[i, k]
                for t in range(new_c.shape[1]):
                    if new_c[i, t] == j:
                        flags[i, k] = 0
                        break


@njit(cache=True, nogil=True, parallel=True, fastmath=True)
def _local_join(
    x: np.ndarray,
    sims: np.ndarray,
    new_c: np.ndarray,
    old_c: np.ndarray,
    lo: int,
    hi: int,
    upd_a: np.ndarray,
    upd_b: np.ndarray,
    upd_s: np.ndarray,
    counts: np.ndarray,
) -> None:
    """The updates of rows ``lo:hi``: each pair of new candidates and each (new, old) pair,
    kept when it would enter either heap. Written to each row's own slots. (Two small BLAS
    products per row over gathered candidates were slower: 35 s against 25 s at 50k.)"""
    c = new_c.shape[1]
    for r in prange(hi - lo):
        i = lo + r
        k = 0
        for u in range(c):
            a = new_c[i, u]
            if a < 0:
                continue
            for v in range(u + 1, c + c):
                b = new_c[i, v] if v < c else old_c[i, v - c]
                if b < 0 or b == a:
                    continue
                s = _dot(x, a, b)
                if s > sims[a, 0] or s > sims[b, 0]:
                    upd_a[r, k] = a
                    upd_b[r, k] = b
                    upd_s[r, k] = s
                    k += 1
        counts[r] = k


@njit(cache=True, nogil=True, parallel=True)
def _apply(
    indices: np.ndarray,
    sims: np.ndarray,
    flags: np.ndarray,
    upd_a: np.ndarray,
    upd_b: np.ndarray,
    upd_s: np.ndarray,
    counts: np.ndarray,
    n_rows: int,
    n_threads: int,
) -> int:
    """Apply a block's updates in generation order, each thread to its own range of rows."""
    n = indices.shape[0]
    span = (n + n_threads - 1) // n_threads
    changed = np.zeros(n_threads, np.int64)
    for t in prange(n_threads):
        lo = t * span
        hi = min(n, lo + span)
        for r in range(n_rows):
            for k in range(counts[r]):
                a = upd_a[r, k]
                b = upd_b[r, k]
                s = upd_s[r, k]
                if lo <= a < hi:
                    changed[t] += _push(indices, sims, flags, a, s, b)
                if lo <= b < hi:
                    changed[t] += _push(indices, sims, flags, b, s, a)
    return int(changed.sum())


@njit(cache=True, nogil=True, parallel=True)
def _sorted_rows(indices: np.ndarray, sims: np.ndarray) -> None:
    """Each row most similar first, ties by ascending index (missing entries last)."""
    for i in prange(indices.shape[0]):
        order = np.argsort(-sims[i].astype(np.float64), kind="mergesort")
        s = sims[i][order]
        j = indices[i][order]
        # Equal similarities: ascending index, so the order does not depend on the heap's.
        start = 0
        m = s.size
        while start < m:
            end = start + 1
            while end < m and s[end] == s[start]:
                end += 1
            if end - start > 1:
                j[start:end] = np.sort(j[start:end])
            start = end
        sims[i] = s
        indices[i] = j


def knn_graph(
    vectors: np.ndarray,
    m: int,
    seed: int = 0,
    n_trees: int = N_TREES,
    max_candidates: int = MAX_CANDIDATES,
    list_factor: int = LIST_FACTOR,
    max_rounds: int | None = None,
    delta: float = DELTA,
    init: np.ndarray | None = None,
    keep: int | None = None,
) -> KnnGraph:
    """Approximate ``m`` most similar other rows (inner product) of every row of ``vectors``.

    Parameters
    ----------
    vectors : float array [n, d]
        Converted to contiguous float32; unit-normalized rows expected (the trees split by
        angle; similarities are plain inner products either way).
    m : int
        Neighbours per row; rows with fewer than ``m`` others keep ``-1`` entries.
    seed : int
        Seeds the trees and the candidate sampling: equal inputs give equal outputs.
    n_trees : int
        Random projection trees (``N_TREES``).
    max_candidates : int
        New and old candidates per row and round (``MAX_CANDIDATES``).
    list_factor : int
        Rows keep ``list_factor × m`` neighbours while descending (``LIST_FACTOR``).
    max_rounds : int, optional
        NN-descent rounds at most; default ``max(5, round(log2 n))`` (pynndescent).
    delta : float
        Stop when a round changes fewer than ``delta × n × m`` entries.
    init : int array [n, w], optional
        First neighbours of each row (row indices, ``-1`` where none), offered before the
        trees' leaves: a graph known to be close (a joint graph's same-kind neighbours)
        lets the descent start near its end. Pass ``n_trees=0`` to start from it alone.
    keep : int, optional
        Columns returned, at most ``list_factor × m``; default ``m``. The columns past
        ``m`` are the descent's further neighbours (near, not as exact as the first ``m``).

    Returns
    -------
    KnnGraph
        ``indices`` int32 [n, keep] and ``sims`` float32 [n, keep], each row most similar
        first (ties by ascending index); a row is never its own neighbour.
    """
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"knn_graph needs a 2-d array, got shape {x.shape}")
    n = x.shape[0]
    m = int(m)
    if m <= 0 or n == 0:
        return KnnGraph(np.zeros((n, 0), np.int32), np.zeros((n, 0), np.float32))
    if n > np.iinfo(np.int32).max:
        raise ValueError("knn_graph: more rows than int32 indices")
    width = max(m, int(list_factor) * m)
    out_cols = m if keep is None else int(keep)
    if not m <= out_cols <= width:
        raise ValueError(f"knn_graph: keep must be in [{m}, {width}], got {out_cols}")
    if init is not None:
        init = np.ascontiguousarray(init, dtype=np.int32)
        if init.ndim != 2 or init.shape[0] != n:
            raise ValueError(f"knn_graph: init needs {n} rows, got shape {init.shape}")
        if init.size and (init.max() >= n or init.min() < -1):
            raise ValueError("knn_graph: init holds row indices in [-1, n)")
    indices = np.full((n, width), -1, np.int32)
    sims = np.full((n, width), -np.inf, np.float32)
    flags = np.zeros((n, width), np.uint8)
    leaf_size = max(LEAF_FACTOR * m, 8)
    base_seed = np.uint64(int(seed) & 0xFFFFFFFFFFFFFFFF)
    seeds = np.array([_hash_py(base_seed, tree) for tree in range(int(n_trees))], np.uint64)
    if init is not None:
        _seed_lists(x, init, indices, sims, flags)
    orders, bounds, n_bounds = _rp_forest(x, leaf_size, seeds)
    # The trees' leaf joins write the same rows, so they run one tree after another.
    for tree in range(seeds.size):
        _leaf_join(x, orders[tree], bounds[tree, : n_bounds[tree]], indices, sims, flags)
    rounds = max(5, round(float(np.log2(max(n, 2))))) if max_rounds is None else int(max_rounds)
    c = max(1, int(max_candidates))
    block = min(BLOCK_ROWS, n)
    pairs = c * (c - 1) // 2 + c * c  # new-new and new-old pairs of one row
    upd_a = np.empty((block, pairs), np.int32)
    upd_b = np.empty((block, pairs), np.int32)
    upd_s = np.empty((block, pairs), np.float32)
    counts = np.zeros(block, np.int64)
    threads = get_num_threads()
    new_keys = np.empty((n, c), np.uint64)
    old_keys = np.empty((n, c), np.uint64)
    new_c = np.empty((n, c), np.int32)
    old_c = np.empty((n, c), np.int32)
    for rnd in range(rounds):
        round_seed = np.uint64(int(_hash_py(base_seed, 1_000_003 + rnd)))
        _candidates(indices, flags, round_seed, threads, new_keys, old_keys, new_c, old_c)
        _mark_old(indices, flags, new_c)
        changed = 0
        for lo in range(0, n, block):
            hi = min(n, lo + block)
            _local_join(x, sims, new_c, old_c, lo, hi, upd_a, upd_b, upd_s, counts)
            changed += _apply(indices, sims, flags, upd_a, upd_b, upd_s, counts, hi - lo, threads)
        if changed <= delta * n * width:
            break
    _sorted_rows(indices, sims)
    return KnnGraph(
        np.ascontiguousarray(indices[:, :out_cols]), np.ascontiguousarray(sims[:, :out_cols])
    )


def _hash_py(seed: np.uint64, a: int) -> int:
    """``_hash3`` from Python (tree and round seeds)."""
    return int(_hash3(seed, a, 0))


def graph_edges(
    graph: KnnGraph, ids: np.ndarray, m: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first ``m`` columns (default all) of ``graph`` as an edge list on ids, the shape
    of ``core.knn``'s results.

    Parameters
    ----------
    graph : KnnGraph
        Of ``len(ids)`` rows.
    ids : int64 array [n]
        Node id of each row.
    m : int, optional
        Neighbours per row.

    Returns
    -------
    src, dst : int64 arrays [e]
        One row per (id, neighbour id), grouped by row in row order, most similar first.
    sim : float32 array [e]
    """
    ids = np.asarray(ids, dtype=np.int64)
    if ids.shape != (graph.indices.shape[0],):
        raise ValueError("graph_edges: one id per row")
    cols = graph.indices.shape[1] if m is None else min(int(m), graph.indices.shape[1])
    indices, sims = graph.indices[:, :cols], graph.sims[:, :cols]
    valid = indices >= 0
    src = np.repeat(ids, cols).reshape(indices.shape)
    return src[valid], ids[indices[valid]], sims[valid]
