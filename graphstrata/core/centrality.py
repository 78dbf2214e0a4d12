"""Sampled betweenness centrality (Brandes), parallel over sources."""

from __future__ import annotations

import numpy as np
from numba import get_num_threads, njit, prange


@njit(cache=True)
def _single_source(indptr, indices, s, dist, sigma, delta, order, out):
    """Brandes for one source on an unweighted graph; adds dependencies into ``out``."""
    n = indptr.shape[0] - 1
    for i in range(n):
        dist[i] = -1
        sigma[i] = 0.0
        delta[i] = 0.0
    dist[s] = 0
    sigma[s] = 1.0
    order[0] = s
    head, tail = 0, 1
    while head < tail:
        v = order[head]
        head += 1
        dv = dist[v]
        for j in range(indptr[v], indptr[v + 1]):
            w = indices[j]
            if dist[w] < 0:
                dist[w] = dv + 1
                order[tail] = w
                tail += 1
            if dist[w] == dv + 1:
                sigma[w] += sigma[v]
    # Predecessors of w are its neighbours one step closer to s (no lists needed).
    for i in range(tail - 1, 0, -1):
        w = order[i]
        coeff = (1.0 + delta[w]) / sigma[w]
        dw = dist[w]
        for j in range(indptr[w], indptr[w + 1]):
            v = indices[j]
            if dist[v] == dw - 1:
                delta[v] += sigma[v] * coeff
        out[w] += delta[w]


@njit(cache=True, parallel=True)
def _accumulate(indptr, indices, sources, n_slots):
    n = indptr.shape[0] - 1
    partial = np.zeros((n_slots, n), dtype=np.float64)
    per_slot = (sources.shape[0] + n_slots - 1) // n_slots
    for slot in prange(n_slots):
        dist = np.empty(n, dtype=np.int64)
        sigma = np.empty(n, dtype=np.float64)
        delta = np.empty(n, dtype=np.float64)
        order = np.empty(n, dtype=np.int64)
        start = slot * per_slot
        stop = min(start + per_slot, sources.shape[0])
        for i in range(start, stop):
            _single_source(indptr, indices, sources[i], dist, sigma, delta, order, partial[slot])
    out = np.zeros(n, dtype=np.float64)
    for slot in range(n_slots):
        out += partial[slot]
    return out


def _rescale(
    bc: np.ndarray, sources: np.ndarray, n: int, normalized: bool, sampled: bool
) -> np.ndarray:
    """networkx 3.6's ``_rescale`` for an undirected graph without endpoints."""
    big_n = n - 1  # pairs (s, t) with t != v
    if big_n < 2:
        return bc
    k = sources.shape[0]
    correction = 2.0  # undirected: ordered pairs were counted twice
    if not sampled:
        scale = 1.0 / (big_n * (big_n - 1)) if normalized else big_n / (big_n * correction)
        return bc * scale
    if normalized:
        s_src = 1.0 / ((k - 1) * (big_n - 1)) if k > 1 else np.nan
        s_non = 1.0 / (k * (big_n - 1))
    else:
        s_src = big_n / ((k - 1) * correction) if k > 1 else np.nan
        s_non = big_n / (k * correction)
    scale = np.full(n, s_non)
    scale[sources] = s_src
    return bc * scale


def sampled_betweenness(
    indptr: np.ndarray,
    indices: np.ndarray,
    k: int,
    seed: int,
    sources: np.ndarray | None = None,
    normalized: bool = True,
) -> np.ndarray:
    """Betweenness centrality estimated from ``k`` sampled sources (Brandes, unweighted).

    Scaled as networkx 3.6 scales ``betweenness_centrality(G, k=k)`` for an undirected graph
    (source and non-source nodes differ since endpoints are excluded); with ``sources`` given
    it equals networkx run from those sources, and with ``k >= n`` it is exact betweenness.

    Parameters
    ----------
    indptr, indices : symmetric CSR (weights are ignored: shortest paths by hop count)
    k : number of sources to sample without replacement (seeded)
    seed : seed of the sampler
    sources : explicit source nodes (overrides ``k`` and ``seed``)
    normalized : divide by the number of node pairs, as networkx does

    Returns
    -------
    float64 [n]
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    n = indptr.shape[0] - 1
    if n <= 0:
        return np.zeros(0, dtype=np.float64)
    if sources is None:
        if k <= 0:
            raise ValueError(f"k must be > 0, got {k}")
        if k >= n:
            srcs = np.arange(n, dtype=np.int64)
            sampled = False
        else:
            srcs = np.sort(np.random.default_rng(seed).choice(n, size=k, replace=False)).astype(
                np.int64
            )
            sampled = True
    else:
        srcs = np.unique(np.asarray(sources, dtype=np.int64))
        if srcs.size and (srcs[0] < 0 or srcs[-1] >= n):
            raise ValueError(f"sources must be node indices in [0, {n})")
        sampled = srcs.size < n
        if srcs.size == 0:
            return np.zeros(n, dtype=np.float64)
    slots = max(1, min(get_num_threads(), srcs.shape[0]))
    bc = _accumulate(indptr, indices, srcs, slots)
    return _rescale(bc, srcs, n, normalized, sampled)
