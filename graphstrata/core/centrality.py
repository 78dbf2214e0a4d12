"""Sampled betweenness centrality (Brandes, unweighted), parallel over sources.

Brandes' algorithm from ``k`` sources: one BFS per source counts shortest paths (sigma)
and records the shortest-path edges in BFS order; a reverse sweep over that edge list
accumulates dependencies (delta), touching only those edges (see :func:`_single_source`).

Sources are split into one contiguous chunk per thread; each thread owns its BFS scratch
and its accumulator row (no atomics), and the rows are summed at the end. Scaling follows
networkx 3.6 (``betweenness_centrality``, undirected, ``endpoints=False``): see
:func:`_rescale`.
"""

from __future__ import annotations

import numpy as np
from numba import get_num_threads, njit, prange

from graphstrata.core import sets
from graphstrata.core.graph import check_csr

__all__ = ["BETWEENNESS_PARALLEL_MIN", "sampled_betweenness"]

#: Work (sources x CSR entries) below which :func:`sampled_betweenness` runs on the calling
#: thread alone: waking Numba's pool costs more than it saves on a smaller job. Measured on
#: 2 cores (``benchmarks/kernels/threads.py``, crossover section; OpenMP layer with
#: ``OMP_WAIT_POLICY=PASSIVE``): see docs/decisions/threads.md. Per call:
#: ``parallel_min_work``. Whatever the work, the kernel runs on ``numba.get_num_threads()``
#: threads at most, so a server request thread (one Numba thread) is always serial.
BETWEENNESS_PARALLEL_MIN = 1 << 20


@njit(cache=True, nogil=True)
def _single_source(
    indptr: np.ndarray,
    indices: np.ndarray,
    s: int,
    dist: np.ndarray,
    sigma: np.ndarray,
    delta: np.ndarray,
    order: np.ndarray,
    pv: np.ndarray,
    pw: np.ndarray,
    out: np.ndarray,
) -> None:
    # Brandes from s. The forward BFS records every shortest-path edge (v -> w) as it is
    # found, in BFS order of v; walking that list backwards visits each w's out-edges
    # before any edge into w, so delta[w] is final when it is read: the reverse sweep
    # touches only shortest-path edges, with no predecessor lists and no second scan of
    # the adjacency. dist == -1, sigma == delta == 0 on entry and again on exit (only
    # visited nodes are reset: a source in a small component costs only that component).
    dist[s] = 0
    sigma[s] = 1.0
    order[0] = s
    head = 0
    tail = 1
    npairs = 0
    while head < tail:
        v = order[head]
        head += 1
        dv1 = dist[v] + 1
        sv = sigma[v]
        for j in range(indptr[v], indptr[v + 1]):
            w = indices[j]
            dw = dist[w]
            if dw < 0:
                dist[w] = dv1
                order[tail] = w
                tail += 1
            elif dw != dv1:
                continue
            sigma[w] += sv
            pv[npairs] = v
            pw[npairs] = w
            npairs += 1
    for q in range(npairs - 1, -1, -1):
        v = pv[q]
        w = pw[q]
        delta[v] += sigma[v] / sigma[w] * (1.0 + delta[w])
    for i in range(1, tail):  # order[0] is the source: endpoints are excluded
        w = order[i]
        out[w] += delta[w]
    for i in range(tail):
        v = order[i]
        dist[v] = -1
        sigma[v] = 0.0
        delta[v] = 0.0


@njit(cache=True, nogil=True)
def _sources_serial(
    indptr: np.ndarray, indices: np.ndarray, sources: np.ndarray, lo: int, hi: int, out: np.ndarray
) -> None:
    n = indptr.shape[0] - 1
    nnz = indices.shape[0]
    dist = np.full(n, -1, dtype=np.int32)
    sigma = np.zeros(n, dtype=np.float64)
    delta = np.zeros(n, dtype=np.float64)
    order = np.empty(n, dtype=np.int32)
    pv = np.empty(nnz, dtype=np.int32)  # shortest-path edges of one source (<= nnz)
    pw = np.empty(nnz, dtype=np.int32)
    for i in range(lo, hi):
        _single_source(indptr, indices, sources[i], dist, sigma, delta, order, pv, pw, out)


@njit(cache=True, nogil=True, parallel=True)
def _accumulate(
    indptr: np.ndarray, indices: np.ndarray, sources: np.ndarray, n_slots: int
) -> np.ndarray:
    # One contiguous chunk of sources per thread, each with its own scratch and its own
    # accumulator row (no atomics); rows are summed at the end.
    n = indptr.shape[0] - 1
    partial = np.zeros((n_slots, n), dtype=np.float64)
    per_slot = (sources.shape[0] + n_slots - 1) // n_slots
    for slot in prange(n_slots):
        lo = slot * per_slot
        hi = min(lo + per_slot, sources.shape[0])
        _sources_serial(indptr, indices, sources, lo, hi, partial[slot])
    out = np.zeros(n, dtype=np.float64)
    for slot in range(n_slots):
        out += partial[slot]
    return out


def _rescale(
    bc: np.ndarray, sources: np.ndarray, n: int, normalized: bool, sampled: bool
) -> np.ndarray:
    """networkx 3.6 ``_rescale`` for an undirected graph with ``endpoints=False``.

    ``N = n - 1`` (pairs whose target is not v). Exact: ``1 / (N (N - 1))`` if normalized,
    else ``1/2`` (unordered pairs). Sampled from ``k`` sources: a node that is itself a
    source cannot lie inside its own paths, so sources get ``1 / ((k - 1)(N - 1))`` and the
    others ``1 / (k (N - 1))`` (normalized), or ``N / (2 (k - 1))`` and ``N / (2 k)``; with
    ``k == 1`` the source's value is NaN, as in networkx. No scaling when ``N < 2``.
    """
    big_n = n - 1
    if big_n < 2:
        return bc
    k = sources.shape[0]
    if not sampled:
        return bc * (1.0 / (big_n * (big_n - 1)) if normalized else 0.5)
    if normalized:
        s_src = 1.0 / ((k - 1) * (big_n - 1)) if k > 1 else np.nan
        s_non = 1.0 / (k * (big_n - 1))
    else:
        s_src = big_n / ((k - 1) * 2.0) if k > 1 else np.nan
        s_non = big_n / (k * 2.0)
    scale = np.full(n, s_non, dtype=np.float64)
    scale[sources] = s_src
    return bc * scale


def sampled_betweenness(
    indptr: np.ndarray,
    indices: np.ndarray,
    k: int,
    seed: int,
    sources: np.ndarray | None = None,
    normalized: bool = True,
    parallel_min_work: int = BETWEENNESS_PARALLEL_MIN,
) -> np.ndarray:
    """Betweenness centrality estimated from ``k`` sampled sources (Brandes, hop counts).

    Equals networkx 3.6 ``betweenness_centrality(G, k=k, normalized=normalized)`` on the
    undirected graph of the CSR when networkx samples the same sources (including its
    rescaling of sources and non-sources); with ``k >= n`` (or all nodes as ``sources``) it
    is the exact ``betweenness_centrality(G)``. Weights are ignored, self-loops and parallel
    entries do not change shortest paths.

    Parameters
    ----------
    indptr, indices : symmetric CSR
        ``indptr`` int64 [n + 1], ``indices`` int64 [nnz].
    k : int
        Number of sources, sampled uniformly without replacement with
        ``np.random.default_rng(seed)``; clamped to ``n`` (exact).
    seed : int
        Seed of the sampler.
    sources : int64 array, optional
        Explicit source nodes (duplicates removed); overrides ``k`` and ``seed``.
    normalized : bool
        Divide by the number of node pairs, as networkx does.
    parallel_min_work : int
        Sources x CSR entries from which the sources are split over Numba's threads of the
        calling thread (default :data:`BETWEENNESS_PARALLEL_MIN`); below it, one thread.

    Returns
    -------
    float64 array [n]
    """
    indptr, indices = check_csr(indptr, indices)
    n = indptr.shape[0] - 1
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= n):
        raise ValueError(f"indices must lie in [0, {n})")
    if sources is None:
        k = int(k)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if n == 0:
            return np.zeros(0, dtype=np.float64)
        if k >= n:
            srcs = np.arange(n, dtype=np.int64)
        else:
            rng = np.random.default_rng(int(seed))
            srcs = np.sort(rng.choice(n, size=k, replace=False)).astype(np.int64)
    else:
        srcs = np.asarray(sources)
        if srcs.ndim != 1 or (srcs.size and not np.issubdtype(srcs.dtype, np.integer)):
            raise ValueError("sources must be a 1-d integer array")
        srcs = sets.unique(srcs.astype(np.int64))
        if srcs.size and (srcs[0] < 0 or srcs[-1] >= n):
            raise ValueError(f"sources must be node indices in [0, {n})")
        if srcs.size == 0:
            return np.zeros(n, dtype=np.float64)
    if n >= 2**31 or indices.shape[0] >= 2**31:
        raise ValueError("graphs beyond 2**31 nodes or entries are not supported")
    sampled = srcs.shape[0] < n
    slots = max(1, min(get_num_threads(), srcs.shape[0]))
    if slots == 1 or srcs.shape[0] * indices.shape[0] < parallel_min_work:
        bc = np.zeros(n, dtype=np.float64)  # small jobs: waking the pool costs more
        _sources_serial(indptr, indices, srcs, 0, srcs.shape[0], bc)
    else:
        bc = _accumulate(indptr, indices, srcs, slots)
    return _rescale(bc, srcs, n, bool(normalized), sampled)
