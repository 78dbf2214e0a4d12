"""Shallow personalized PageRank by sparse push (NodeRAG); per-kind top-k: ``core.topk``.

NodeRAG's formula, with restart (not a lazy walk)::

    pi_0 = p,    pi_{k+1} = alpha * p + (1 - alpha) * P^T pi_k

``p`` is the seed distribution (seed weights normalized to sum 1, duplicate seeds add) and
``P`` the row-normalized weighted adjacency, ``P[u, v] = w(u, v) / sum_x w(u, x)``. A node
with no out-weight has a zero row in ``P``: the mass that reaches it is kept in its own
score but not passed on (it leaves the system), so the total mass is at most 1.

With a push threshold ``epsilon > 0`` a node passes its mass on in a step only when
``(1 - alpha) * pi_k[u] >= epsilon * W(u)``, ``W(u)`` its row weight (the approximate push
of Andersen, Chung & Lang 2006, with weighted degrees); below it the mass stops there, as at
a zero row. A hub reached with a little mass then no longer touches its thousands of
neighbours, and each node's score is at most its exact one.

After ``iters`` steps only the ``iters``-hop neighbourhood of the seeds can be non-zero, so
the kernel pushes from the seeds through a hash map local to the call: it never touches
the other nodes and allocates in proportion to the edges it touches, whatever the graph
size (no O(n) scratch, nothing kept between calls, safe to call from many threads).

The kernels are compiled with ``nogil=True``: the HTTP server runs queries from a thread
pool, and a thread inside the push or the top-k selection does not hold the GIL, so
queries overlap (``benchmarks/service/concurrent_graph.py`` measures it). See
docs/architecture.md, "Kernels".
"""

from __future__ import annotations

import numpy as np
from numba import njit

from graphstrata.core.layered import LayeredCSR, row_weights

__all__ = ["shallow_ppr", "shallow_ppr_stats"]

_HASH_MUL = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: spreads consecutive ids


@njit(cache=True, nogil=True, inline="always")
def _slot_of(node: int, shift: np.uint64, mask: np.int64) -> np.int64:
    return np.int64((np.uint64(node) * _HASH_MUL) >> shift) & mask


# A table slot packs (node << 32) | dense index into one int64 (-1: empty), so a probe is
# one load; node ids and counts stay below 2**31.
_LOW = np.int64(0xFFFFFFFF)


@njit(cache=True, nogil=True, inline="always")
def _span(indptr: np.ndarray, xptr: np.ndarray, u: int, layer: int) -> tuple[int, int]:
    # Entries of row ``u`` in one layer: 0 the base CSR (rows 0..len(indptr)-2), 1 the
    # extra CSR (every row, or none when ``xptr`` is empty).
    if layer == 0:
        if u + 1 < indptr.shape[0]:
            return indptr[u], indptr[u + 1]
        return 0, 0
    if u + 1 < xptr.shape[0]:
        return xptr[u], xptr[u + 1]
    return 0, 0


@njit(cache=True, nogil=True)
def _spread(
    ix: np.ndarray,
    w: np.ndarray,
    a: int,
    b: int,
    scale: float,
    table: np.ndarray,
    shift: np.uint64,
    tab_mask: np.int64,
    nodes: np.ndarray,
    nxt: np.ndarray,
    count: int,
) -> int:
    # Push ``scale * w`` along entries a..b of one layer; returns the reached count.
    for j in range(a, b):
        v = ix[j]
        key = v << 32
        h = _slot_of(v, shift, tab_mask)
        while True:
            e = table[h]
            if e < 0 or (e & ~_LOW) == key:
                break
            h = (h + 1) & tab_mask
        if e < 0:
            table[h] = key | count
            nodes[count] = v
            nxt[count] = scale * w[j]
            count += 1
        else:
            nxt[e & _LOW] += scale * w[j]
    return count


@njit(cache=True, nogil=True, inline="always")
def _row_weight(weights: np.ndarray, a: int, b: int) -> float:
    # A row's weight, summed in float64 in entry order (the push test reads it twice).
    wsum = 0.0
    for j in range(a, b):
        wsum += weights[j]
    return wsum


@njit(cache=True, nogil=True)
def _step_plain(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    table: np.ndarray,
    shift: np.uint64,
    tab_mask: np.int64,
    nodes: np.ndarray,
    cur: np.ndarray,
    nxt: np.ndarray,
    pv: np.ndarray,
    count: int,
    alpha: float,
    eps: float,
) -> tuple[int, int]:
    # :func:`_step` on a one-layer graph without dead nodes, kept apart: the layered
    # step's extra bounds and branches cost 15-20% of a walk at 100k chunks even when
    # there is nothing in them, and pushing through :func:`_spread` instead of this
    # loop written out cost 8-11% more (measured against the code before the layers).
    # One step nxt = alpha * p + (1 - alpha) * P^T cur over the reached nodes. Capacity
    # for every node this step can reach was reserved by the caller, so nothing is
    # reallocated here (reassigning arrays inside the loop costs Numba reference counting
    # on every access). Seeds hold dense indices 0..len(pv)-1. Returns (count, edges).
    n_seed = pv.shape[0]
    for i in range(count):
        nxt[i] = alpha * pv[i] if i < n_seed else 0.0
    edges = 0
    one_minus = 1.0 - alpha
    active = count  # nodes first reached in this step have cur == 0: nothing to push
    for i in range(active):
        x = cur[i]
        if x == 0.0:
            continue
        u = nodes[i]
        a = indptr[u]
        b = indptr[u + 1]
        edges += b - a
        wsum = _row_weight(weights, a, b)
        if wsum <= 0.0 or one_minus * x < eps * wsum:
            continue  # zero row of P, or under the push threshold: the mass stops here
        scale = one_minus * x / wsum
        for j in range(a, b):
            v = indices[j]
            key = v << 32
            h = _slot_of(v, shift, tab_mask)
            while True:
                e = table[h]
                if e < 0 or (e & ~_LOW) == key:
                    break
                h = (h + 1) & tab_mask
            if e < 0:
                d = count
                table[h] = key | d
                nodes[d] = v
                nxt[d] = scale * weights[j]
                count += 1
            else:
                nxt[e & _LOW] += scale * weights[j]
    return count, edges


@njit(cache=True, nogil=True)
def _step(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    xptr: np.ndarray,
    xix: np.ndarray,
    xw: np.ndarray,
    row_sums: np.ndarray,
    table: np.ndarray,
    shift: np.uint64,
    tab_mask: np.int64,
    nodes: np.ndarray,
    cur: np.ndarray,
    nxt: np.ndarray,
    pv: np.ndarray,
    count: int,
    alpha: float,
    eps: float,
) -> tuple[int, int]:
    # :func:`_step_plain` on base + extra layers, with each row's weight given (0 for a
    # dead node): entries are not tested for dead nodes, so mass sent to a dead node stops
    # there and the caller drops it; the alive nodes get exactly what they get on the
    # graph without the dead. Returns (count, entries read).
    n_seed = pv.shape[0]
    n_base = indptr.shape[0] - 1
    n_extra = xptr.shape[0] - 1
    for i in range(count):
        nxt[i] = alpha * pv[i] if i < n_seed else 0.0
    edges = 0
    one_minus = 1.0 - alpha
    active = count  # nodes first reached in this step have cur == 0: nothing to push
    for i in range(active):
        x = cur[i]
        if x == 0.0:
            continue
        u = nodes[i]
        a = indptr[u] if u < n_base else 0
        b = indptr[u + 1] if u < n_base else 0
        c = xptr[u] if u < n_extra else 0
        d = xptr[u + 1] if u < n_extra else 0
        if one_minus * x < eps * row_sums[u]:
            continue  # under the push threshold: the mass stops here
        edges += (b - a) + (d - c)
        if row_sums[u] <= 0.0:
            continue  # zero row of P (or a dead node): the mass stops here
        scale = one_minus * x / row_sums[u]
        count = _spread(indices, weights, a, b, scale, table, shift, tab_mask, nodes, nxt, count)
        count = _spread(xix, xw, c, d, scale, table, shift, tab_mask, nodes, nxt, count)
    return count, edges


@njit(cache=True, nogil=True)
def _table_bits(n: int) -> int:
    bits = 4
    while (1 << bits) < 2 * n:  # load factor <= 1/2
        bits += 1
    return bits


@njit(cache=True, nogil=True)
def _rehash(nodes: np.ndarray, count: int, bits: int) -> np.ndarray:
    tab_mask = np.int64((1 << bits) - 1)
    shift = np.uint64(64 - bits)
    table = np.full(1 << bits, -1, dtype=np.int64)
    for q in range(count):
        h = _slot_of(nodes[q], shift, tab_mask)
        while table[h] >= 0:
            h = (h + 1) & tab_mask
        table[h] = (nodes[q] << 32) | q
    return table


@njit(cache=True, nogil=True)
def _grow(a: np.ndarray, n: int, cap: int) -> np.ndarray:
    b = np.empty(cap, dtype=a.dtype)
    b[:n] = a[:n]
    return b


@njit(cache=True, nogil=True)
def _push(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    xptr: np.ndarray,
    xix: np.ndarray,
    xw: np.ndarray,
    row_sums: np.ndarray,
    seeds: np.ndarray,
    seed_p: np.ndarray,
    alpha: float,
    iters: int,
    eps: float,
) -> tuple[np.ndarray, np.ndarray, int]:
    # Sparse push. Reached nodes live in dense arrays (nodes/cur/nxt, in discovery order)
    # found through an open-addressing table (node -> dense index). Before each step both
    # are sized for the worst case of that step (count + degrees of the nodes pushed from),
    # so memory stays proportional to the edges touched.
    s = seeds.shape[0]
    layered = row_sums.shape[0] > 0
    cap = max(s, 16)
    nodes = np.empty(cap, dtype=np.int64)
    bits = _table_bits(cap)
    table = _rehash(nodes, 0, bits)
    tab_mask = np.int64((1 << bits) - 1)
    shift = np.uint64(64 - bits)
    pv = np.zeros(s, dtype=np.float64)
    count = 0
    for i in range(s):  # seeds first (duplicates add): they hold dense indices 0..
        u = seeds[i]
        h = _slot_of(u, shift, tab_mask)
        while table[h] >= 0 and (table[h] >> 32) != u:
            h = (h + 1) & tab_mask
        if table[h] < 0:
            table[h] = (u << 32) | count
            nodes[count] = u
            count += 1
        pv[table[h] & _LOW] += seed_p[i]
    pv = pv[:count]
    cur = np.empty(cap, dtype=np.float64)
    nxt = np.empty(cap, dtype=np.float64)
    cur[:count] = pv
    edges = 0
    for _ in range(iters):
        need = count
        for i in range(count):
            if cur[i] == 0.0:
                continue
            if layered:
                a, b = _span(indptr, xptr, nodes[i], 0)
                c, d = _span(indptr, xptr, nodes[i], 1)
                if (1.0 - alpha) * cur[i] >= eps * row_sums[nodes[i]]:
                    need += (b - a) + (d - c)
            else:
                a, b = indptr[nodes[i]], indptr[nodes[i] + 1]
                if eps > 0.0 and (1.0 - alpha) * cur[i] < eps * _row_weight(weights, a, b):
                    continue  # the same test as the step's, on the same sum
                need += b - a
        if need > cap:
            cap = max(need, 2 * cap)
            nodes = _grow(nodes, count, cap)
            cur = _grow(cur, count, cap)
            nxt = _grow(nxt, count, cap)
        if _table_bits(need) > bits:
            bits = _table_bits(need)
            table = _rehash(nodes, count, bits)
            tab_mask = np.int64((1 << bits) - 1)
            shift = np.uint64(64 - bits)
        if layered:
            count, e = _step(
                indptr, indices, weights, xptr, xix, xw, row_sums, table, shift, tab_mask,
                nodes, cur, nxt, pv, count, alpha, eps,
            )  # fmt: skip
        else:
            count, e = _step_plain(
                indptr, indices, weights, table, shift, tab_mask, nodes, cur, nxt, pv, count,
                alpha, eps,
            )  # fmt: skip
        edges += e
        cur, nxt = nxt, cur
    return nodes[:count], cur[:count], edges


@njit(cache=True, nogil=True)
def _seed_distribution(
    seeds: np.ndarray, sw: np.ndarray, n: int
) -> tuple[int, np.ndarray, np.ndarray]:
    # -> (status, seeds with weight > 0, their weights normalized to sum 1); status 1: a
    # seed out of range, 2: a negative or non-finite weight. Empty when no weight.
    total = 0.0
    kept = 0
    for i in range(seeds.shape[0]):
        if seeds[i] < 0 or seeds[i] >= n:
            return 1, seeds[:0], sw[:0]
        x = sw[i]
        if not np.isfinite(x) or x < 0.0:
            return 2, seeds[:0], sw[:0]
        if x > 0.0:
            total += x
            kept += 1
    out_s = np.empty(kept, dtype=np.int64)
    out_p = np.empty(kept, dtype=np.float64)
    k = 0
    for i in range(seeds.shape[0]):
        if sw[i] > 0.0:
            out_s[k] = seeds[i]
            out_p[k] = sw[i] / total
            k += 1
    return 0, out_s, out_p


_NO_PTR = np.zeros(0, dtype=np.int64)
_NO_ALIVE = np.zeros(0, dtype=np.bool_)
_NO_SUMS = np.zeros(0, dtype=np.float64)


def _extra_layer(
    extra: tuple[np.ndarray, np.ndarray, np.ndarray] | None, n: int, dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The extra CSR checked (O(1) on its entries) and cast for the kernel, and the node
    count of both layers (the extra layer covers every node of the base and may add)."""
    if extra is None:
        return _NO_PTR, _NO_PTR, np.zeros(0, dtype=dtype), n
    xptr, xix, xw = (np.asarray(a) for a in extra)
    if xptr.ndim != 1 or xptr.shape[0] < n + 1 or xptr.dtype.kind not in "iu":
        raise ValueError(f"extra indptr must be a 1-d integer array of at least {n + 1} items")
    if xix.ndim != 1 or xw.ndim != 1 or xix.shape != xw.shape:
        raise ValueError("extra indices and weights must be 1-d of equal length")
    if xix.size and xix.dtype.kind not in "iu":
        raise ValueError("extra indices must be an integer array")
    # One weight dtype for both layers: one compiled push per dtype, not per pair.
    return (
        xptr.astype(np.int64, copy=False),
        xix.astype(np.int64, copy=False),
        xw.astype(dtype, copy=False),
        xptr.shape[0] - 1,
    )


def _layered_row_weights(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    xptr: np.ndarray,
    xix: np.ndarray,
    xw: np.ndarray,
    live: np.ndarray,
    n: int,
) -> np.ndarray:
    """``core.layered.row_weights`` of the checked layers (absent ones filled in)."""
    xptr = xptr if xptr.size else np.zeros(n + 1, np.int64)
    live = live if live.size else np.ones(n, np.bool_)
    return row_weights(LayeredCSR(indptr, indices, weights, xptr, xix, xw, live))


def _row_sums(row_sums: np.ndarray | None, n: int) -> np.ndarray:
    if row_sums is None:
        return _NO_SUMS
    row_sums = np.asarray(row_sums)
    if row_sums.dtype != np.float64 or row_sums.shape != (n,):
        raise ValueError(f"row_sums must be a float64 array of shape ({n},)")
    return row_sums


def _alive_mask(alive: np.ndarray | None, n: int) -> np.ndarray:
    if alive is None:
        return _NO_ALIVE
    alive = np.asarray(alive)
    if alive.dtype != np.bool_ or alive.shape != (n,):
        raise ValueError(f"alive must be a bool array of shape ({n},)")
    return alive


def shallow_ppr_stats(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    seeds: np.ndarray,
    seed_weights: np.ndarray | None = None,
    alpha: float = 0.5,
    iters: int = 2,
    *,
    extra: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    alive: np.ndarray | None = None,
    row_sums: np.ndarray | None = None,
    epsilon: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`shallow_ppr` that also returns the number of CSR entries read (edges touched).

    Parameters
    ----------
    indptr, indices, weights, seeds, seed_weights, alpha, iters, extra, alive, row_sums
    epsilon
        As in :func:`shallow_ppr`.

    Returns
    -------
    nodes : int64 array [t]
    scores : float64 array [t]
    edges : int
        Entries read: the total degree of the nodes pushed from (on a one-layer graph
        also of those under the threshold, whose row weight is summed to test it).
    """
    # Checks are O(1) on the graph and O(s) on the seeds (one compiled pass): this runs
    # once per query and must not cost more than the push itself.
    indptr = np.asarray(indptr)
    indices = np.asarray(indices)
    weights = np.asarray(weights)
    if indptr.ndim != 1 or indptr.shape[0] < 1 or indptr.dtype.kind not in "iu":
        raise ValueError("indptr must be a non-empty 1-d integer array")
    if indices.ndim != 1 or weights.ndim != 1 or indices.shape != weights.shape:
        raise ValueError("indices and weights must be 1-d of equal length")
    if indices.size and indices.dtype.kind not in "iu":
        raise ValueError("indices must be an integer array")
    if weights.size and weights.dtype.kind != "f":
        raise ValueError(f"weights must be a float array, got {weights.dtype}")
    n = indptr.shape[0] - 1
    xptr, xix, xw, n = _extra_layer(extra, n, weights.dtype)
    live = _alive_mask(alive, n)
    sums = _row_sums(row_sums, n)
    if n >= 2**31:
        raise ValueError("graphs beyond 2**31 nodes are not supported")
    seeds = np.asarray(seeds)
    if seeds.ndim != 1 or (seeds.size and seeds.dtype.kind not in "iu"):
        raise ValueError("seeds must be a 1-d integer array")
    if seed_weights is None:
        sw = np.ones(seeds.shape[0], dtype=np.float64)
    else:
        sw = np.asarray(seed_weights, dtype=np.float64)
        if sw.shape != seeds.shape:
            raise ValueError(f"seed_weights must have shape {seeds.shape}, got {sw.shape}")
    alpha = float(alpha)
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    iters = int(iters)
    if iters < 0:
        raise ValueError(f"iters must be >= 0, got {iters}")
    epsilon = float(epsilon)
    if not epsilon >= 0.0 or not np.isfinite(epsilon):
        raise ValueError(f"epsilon must be finite and >= 0, got {epsilon}")
    status, seeds, p = _seed_distribution(seeds.astype(np.int64, copy=False), sw, n)
    if status == 1:
        raise ValueError(f"seeds must be node indices in [0, {n})")
    if status == 2:
        raise ValueError("seed weights must be finite and >= 0")
    if seeds.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64), 0
    if live.size and not bool(live[seeds].all()):
        raise ValueError("seeds must be alive nodes")
    if indptr.dtype != np.int64:
        indptr = indptr.astype(np.int64)
    if indices.dtype != np.int64:
        indices = indices.astype(np.int64)
    if (xptr.size or live.size) and not sums.size:
        # O(entries): a caller that walks one graph many times keeps them (``WalkEdges``).
        sums = _layered_row_weights(indptr, indices, weights, xptr, xix, xw, live, n)
    nodes, scores, edges = _push(
        indptr, indices, weights, xptr, xix, xw, sums, seeds, p, alpha, iters, epsilon
    )
    if sums.size and live.size:  # the dead nodes that stopped mass are not results
        keep = live[nodes]
        nodes, scores = nodes[keep], scores[keep]
    return nodes, scores, int(edges)


def shallow_ppr(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    seeds: np.ndarray,
    seed_weights: np.ndarray | None = None,
    alpha: float = 0.5,
    iters: int = 2,
    *,
    extra: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    alive: np.ndarray | None = None,
    row_sums: np.ndarray | None = None,
    epsilon: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Personalized PageRank after ``iters`` steps of ``pi <- alpha p + (1 - alpha) P^T pi``.

    See the module docstring for the formula and the treatment of nodes without
    out-weight. Cost: O(edges of the nodes pushed from), independent of the graph size.

    The graph may come in two layers, so that a growing graph is not copied on each change
    (``engine/heterograph/walk_graph.py``): the adjacency is ``indptr/indices/weights``
    plus ``extra`` (an entry in both sums), less every entry to a node that is not
    ``alive``. The result equals the walk on that graph written as one CSR.

    Parameters
    ----------
    indptr, indices, weights : symmetric CSR
        As from :func:`graphstrata.core.graph.csr_from_edges`; weights >= 0.
    seeds : int64 array [s]
        Seed nodes (duplicates add their weights).
    seed_weights : float array [s], optional
        Non-negative weights (default 1 each). Zero-weight seeds are ignored; if no seed has
        weight the result is empty.
    alpha : float
        Restart probability, in [0, 1] (NodeRAG: 0.5).
    iters : int
        Number of steps, >= 0 (NodeRAG: 2).
    extra : (indptr, indices, weights), optional
        A second symmetric CSR over ``n >=`` the base's nodes (rows past the base's are
        nodes only it has). Default: none.
    alive : bool array [n], optional
        The nodes that exist: entries to the others are skipped, and seeds must be alive.
        Default: every node.
    row_sums : float64 array [n], optional
        Each node's row weight over its alive neighbours, 0 for a dead node
        (``core.layered.row_weights``, or kept up to date by the graph's owner). With two
        layers or dead nodes the walk reads rows through them: it never tests an entry,
        mass sent to a dead node stops there and the node is dropped from the result, so
        the alive nodes' scores are those of the graph without the dead. Default: summed per
        row pushed from on a plain graph; computed here (O(entries)) for a layered one.
    epsilon : float, optional
        Push threshold, >= 0 (module docstring): a node passes its mass on only when
        ``(1 - alpha) * mass >= epsilon * row weight``. Default 0: the exact walk.

    Returns
    -------
    nodes : int64 array [t]
        Every node reached (the seeds and their ``iters``-hop neighbourhood through edges
        of positive weight, from nodes that pushed), in discovery order; no other node.
    scores : float64 array [t]
        Their scores, >= 0, summing to at most 1.
    """
    nodes, scores, _ = shallow_ppr_stats(
        indptr,
        indices,
        weights,
        seeds,
        seed_weights,
        alpha,
        iters,
        extra=extra,
        alive=alive,
        row_sums=row_sums,
        epsilon=epsilon,
    )
    return nodes, scores
