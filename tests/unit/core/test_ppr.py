"""core.ppr: shallow PPR by sparse push (oracle: dense numpy iteration) and top-k by kind."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphstrata.core.graph import csr_from_edges
from graphstrata.core.layered import LayeredCSR, row_weights
from graphstrata.core.ppr import shallow_ppr, shallow_ppr_stats
from graphstrata.core.topk import top_k_by_kind


def dense_ppr(indptr, indices, weights, seeds, seed_weights, alpha, iters, eps=0.0):
    """The same formula over the whole graph with dense numpy; also the edges read. A node
    pushes only when ``(1 - alpha) * pi >= eps * its row weight`` (its row is read anyway)."""
    n = indptr.shape[0] - 1
    A = np.zeros((n, n))
    for u in range(n):
        A[u, indices[indptr[u] : indptr[u + 1]]] += weights[indptr[u] : indptr[u + 1]]
    rs = A.sum(axis=1)
    P = np.divide(A, rs[:, None], out=np.zeros_like(A), where=rs[:, None] > 0)
    p = np.zeros(n)
    np.add.at(p, seeds, seed_weights)
    if p.sum() <= 0:
        return np.zeros(n), 0
    p /= p.sum()
    pi = p.copy()
    deg = np.diff(indptr)
    edges = 0
    for _ in range(iters):
        edges += int(deg[pi > 0].sum())
        pushed = np.where((1 - alpha) * pi >= eps * rs, pi, 0.0)
        pi = alpha * p + (1 - alpha) * P.T @ pushed
    return pi, edges


def hops(indptr, indices, seeds, iters):
    reach = set(int(s) for s in seeds)
    frontier = set(reach)
    for _ in range(iters):
        nxt = set()
        for u in frontier:
            nxt.update(indices[indptr[u] : indptr[u + 1]].tolist())
        frontier = nxt - reach
        reach |= nxt
    return reach


def random_graph(seed: int, n: int, e: int, zero_frac: float = 0.0):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    w = rng.random(e).astype(np.float32) + 0.1
    w[rng.random(e) < zero_frac] = 0.0
    return csr_from_edges(src, dst, w, n)


def check_against_dense(g, seeds, sw, alpha, iters, eps=0.0) -> None:
    ip, ix, w = g
    n = ip.shape[0] - 1
    nodes, scores, edges = shallow_ppr_stats(ip, ix, w, seeds, sw, alpha, iters, epsilon=eps)
    sw = np.asarray(sw, float)
    ref, ref_edges = dense_ppr(ip, ix, w, np.asarray(seeds), sw, alpha, iters, eps)
    assert nodes.dtype == np.int64 and scores.dtype == np.float64
    assert np.unique(nodes).shape == nodes.shape  # each node once
    full = np.zeros(n)
    full[nodes] = scores
    np.testing.assert_allclose(full, ref, rtol=1e-9, atol=1e-12)
    assert (scores >= 0).all() and scores.sum() <= 1 + 1e-9
    assert edges == ref_edges
    positive = np.asarray(seeds)[np.asarray(sw) > 0]
    assert set(nodes.tolist()) <= hops(ip, ix, positive, iters)  # only the neighbourhood
    assert set(np.flatnonzero(ref > 0).tolist()) <= set(nodes.tolist())


@pytest.mark.parametrize("alpha", [0.0, 0.15, 0.5, 1.0])
@pytest.mark.parametrize("iters", [0, 1, 2, 3])
def test_ppr_matches_dense_iteration(alpha: float, iters: int) -> None:
    g = random_graph(7, 120, 400)
    seeds = np.array([3, 17, 17, 90, 5])
    sw = np.array([1.0, 0.5, 0.5, 2.0, 0.0])
    check_against_dense(g, seeds, sw, alpha, iters)


@pytest.mark.parametrize("eps", [1e-4, 1e-3, 5e-3, 2e-2])
@pytest.mark.parametrize("alpha", [0.15, 0.5])
@pytest.mark.parametrize("iters", [1, 2, 3])
def test_ppr_push_threshold_matches_dense_iteration(eps: float, alpha: float, iters: int) -> None:
    """``epsilon``: a node passes its mass on only when it carries at least ``epsilon`` per
    unit of row weight; the rest of its mass stops, as at a zero row."""
    g = random_graph(11, 150, 500)
    seeds = np.array([3, 17, 90, 5, 44])
    sw = np.array([4.0, 1.0, 0.5, 0.02, 0.001])  # light seeds fall under the threshold
    check_against_dense(g, seeds, sw, alpha, iters, eps)


def test_ppr_push_threshold_prunes_a_hub() -> None:
    """A hub reached with little mass per unit of its weight is not expanded: its thousands
    of neighbours stay untouched; the nodes kept lose only what the hub would send back."""
    n = 3000
    src = np.concatenate([np.zeros(n - 2, np.int64), [1, 1]])
    dst = np.concatenate([np.arange(2, n), [0, 2]])
    g = csr_from_edges(src, dst, np.ones(src.size, np.float32), n)
    exact_n, exact_s = shallow_ppr(*g, np.array([1]), iters=2)
    pruned_n, pruned_s = shallow_ppr(*g, np.array([1]), iters=2, epsilon=1e-3)
    assert exact_n.size == n and set(pruned_n.tolist()) == {0, 1, 2}
    exact = np.bincount(exact_n, exact_s, n)[pruned_n]
    # the hub holds 0.5 * 1/2 after step 1 and would send half of it over its n - 1 edges
    hub_back = 0.5 * 0.25 / (n - 1)
    np.testing.assert_allclose(exact - pruned_s, np.where(pruned_n == 0, 0.0, hub_back))
    check_against_dense(g, np.array([1]), np.array([1.0]), 0.5, 2, 1e-3)


def test_ppr_push_threshold_edges_and_bad_values() -> None:
    g = random_graph(4, 40, 120)
    seeds = np.array([1, 2])
    # above any mass per unit of weight: only the seeds keep their restart share
    nodes, scores = shallow_ppr(*g, seeds, alpha=0.5, iters=3, epsilon=1.0)
    assert sorted(nodes.tolist()) == [1, 2]
    np.testing.assert_allclose(scores, [0.25, 0.25])
    # 0 is the exact walk
    a = shallow_ppr(*g, seeds, epsilon=0.0)
    b = shallow_ppr(*g, seeds)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    for bad in (-1e-9, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="epsilon must be finite and >= 0"):
            shallow_ppr(*g, seeds, epsilon=bad)


def test_ppr_default_weights_and_plain_call() -> None:
    g = random_graph(1, 60, 200)
    nodes, scores = shallow_ppr(*g, np.array([1, 2, 3]))
    n2, s2, _ = shallow_ppr_stats(*g, np.array([1, 2, 3]), np.ones(3), 0.5, 2)
    np.testing.assert_array_equal(nodes, n2)
    np.testing.assert_array_equal(scores, s2)


def test_ppr_edge_cases() -> None:
    g = random_graph(2, 40, 100)
    # zero-weight seeds only, or no seeds: empty
    for seeds, sw in (([4, 5], [0.0, 0.0]), ([], [])):
        nodes, scores = shallow_ppr(*g, np.asarray(seeds, np.int64), np.asarray(sw))
        assert nodes.size == 0 and scores.size == 0
    # one node with a self-loop: all mass stays
    one = csr_from_edges([0], [0], [2.0], 1)
    nodes, scores = shallow_ppr(*one, np.array([0]))
    assert nodes.tolist() == [0]
    np.testing.assert_allclose(scores, [1.0])
    # isolated seed: keeps alpha * p + nothing after a step (mass leaks, documented)
    iso = csr_from_edges([1], [2], [1.0], 4)
    nodes, scores = shallow_ppr(*iso, np.array([0]), alpha=0.5, iters=2)
    assert nodes.tolist() == [0]
    np.testing.assert_allclose(scores, [0.5])
    # all-zero edge weights: nothing is pushed
    zero = csr_from_edges([0, 1], [1, 2], [0.0, 0.0], 3)
    nodes, scores = shallow_ppr(*zero, np.array([1]))
    assert nodes.tolist() == [1]
    np.testing.assert_allclose(scores, [0.5])


def test_ppr_disconnected_and_duplicate_edges() -> None:
    src = np.array([0, 0, 1, 5, 5, 6])
    dst = np.array([1, 1, 2, 6, 6, 7])
    g = csr_from_edges(src, dst, np.ones(6, np.float32), 8)
    nodes, _ = shallow_ppr(*g, np.array([0]), iters=3)
    assert set(nodes.tolist()) == {0, 1, 2}
    check_against_dense(g, np.array([0, 6]), np.array([1.0, 3.0]), 0.5, 3)


def test_ppr_hub_grows_the_hash_map() -> None:
    # a hub reaches thousands of nodes at hop 2: the table and arrays must grow
    rng = np.random.default_rng(0)
    n = 3000
    src = np.concatenate([np.zeros(n - 1, np.int64), rng.integers(1, n, 4000)])
    dst = np.concatenate([np.arange(1, n), rng.integers(1, n, 4000)])
    g = csr_from_edges(src, dst, rng.random(src.shape[0]).astype(np.float32), n)
    nodes, _ = shallow_ppr(*g, np.array([5]))
    assert nodes.size == n  # 5 -> hub -> everyone
    check_against_dense(g, np.array([5, 6]), np.array([1.0, 1.0]), 0.5, 2)


def test_ppr_rejects_bad_input() -> None:
    g = random_graph(3, 10, 20)
    with pytest.raises(ValueError):
        shallow_ppr(*g, np.array([10]))
    with pytest.raises(ValueError):
        shallow_ppr(*g, np.array([1]), np.array([-1.0]))
    with pytest.raises(ValueError):
        shallow_ppr(*g, np.array([1]), np.array([1.0, 2.0]))
    with pytest.raises(ValueError):
        shallow_ppr(*g, np.array([1]), alpha=1.5)
    with pytest.raises(ValueError):
        shallow_ppr(*g, np.array([1]), iters=-1)
    with pytest.raises(ValueError):
        shallow_ppr(g[0], g[1][:-1], g[2], np.array([1]))


graphs = st.integers(1, 25).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.integers(0, 4)),
            max_size=60,
        ),
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 3)), max_size=6),
    )
)


@settings(max_examples=80, deadline=None)
@given(
    graphs,
    st.sampled_from([0.2, 0.5, 0.85]),
    st.integers(0, 3),
    st.sampled_from([0.0, 0.0, 1e-3, 0.05]),
)
def test_ppr_property(data, alpha: float, iters: int, eps: float) -> None:
    n, edges, seed_list = data
    src = np.array([e[0] for e in edges], np.int64)
    dst = np.array([e[1] for e in edges], np.int64)
    w = np.array([e[2] for e in edges], np.float32)
    g = csr_from_edges(src, dst, w, n)
    seeds = np.array([s[0] for s in seed_list], np.int64)
    sw = np.array([s[1] for s in seed_list], np.float64)
    check_against_dense(g, seeds, sw, alpha, iters, eps)


# --------------------------------------------------------------------------- top-k


def oracle_top_k(nodes, scores, kinds, k_per_kind):
    out = []
    for kind in np.unique(kinds):
        k = k_per_kind if isinstance(k_per_kind, int) else k_per_kind.get(int(kind), 0)
        idx = np.flatnonzero(kinds == kind)
        idx = idx[np.argsort(-scores[idx], kind="stable")][:k]
        out.extend(idx.tolist())
    out = np.asarray(out, np.int64)
    out = out[np.lexsort((out, -scores[out]))] if out.size else out
    return nodes[out]


@pytest.mark.parametrize("k", [0, 1, 3, 50, {0: 2, 2: 5}, {7: 3}])
def test_top_k_by_kind_matches_argsort(k) -> None:
    rng = np.random.default_rng(0)
    t = 200
    nodes = rng.permutation(10_000)[:t].astype(np.int64)
    scores = rng.random(t)
    kinds = rng.integers(0, 4, t).astype(np.uint8)
    got = top_k_by_kind(nodes, scores, kinds, k)
    np.testing.assert_array_equal(got, oracle_top_k(nodes, scores, kinds, k))
    assert got.dtype == np.int64
    pos = {int(v): i for i, v in enumerate(nodes)}
    assert np.all(np.diff(scores[[pos[int(v)] for v in got]]) <= 0)


def test_top_k_by_kind_ties_keep_input_order() -> None:
    nodes = np.arange(10, 20, dtype=np.int64)
    scores = np.array([1, 2, 2, 2, 2, 0, 2, 1, 1, 3], float)
    kinds = np.zeros(10, np.uint8)
    np.testing.assert_array_equal(top_k_by_kind(nodes, scores, kinds, 3), [19, 11, 12])
    np.testing.assert_array_equal(
        top_k_by_kind(nodes, scores, kinds, 3), oracle_top_k(nodes, scores, kinds, 3)
    )


def test_top_k_by_kind_edge_cases() -> None:
    e = np.zeros(0)
    assert top_k_by_kind(e.astype(np.int64), e, e.astype(np.uint8), 3).size == 0
    assert top_k_by_kind(np.array([4]), np.array([0.5]), np.array([1], np.uint8), 3).tolist() == [4]
    assert top_k_by_kind(np.array([4]), np.array([0.5]), np.array([1], np.uint8), {2: 3}).size == 0
    with pytest.raises(ValueError):
        top_k_by_kind(np.array([1, 2]), np.array([0.5]), np.array([1, 1], np.uint8), 1)
    with pytest.raises(ValueError):
        top_k_by_kind(np.array([1]), np.array([0.5]), np.array([1], np.uint8), -1)
    with pytest.raises(ValueError):
        top_k_by_kind(np.array([1]), np.array([0.5]), np.array([1], np.uint8), "3")
    # numpy integer k is accepted
    assert top_k_by_kind(np.array([1]), np.array([0.5]), np.array([1], np.uint8), np.int64(1)).size


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4)), max_size=80),
    st.integers(0, 6),
)
def test_top_k_by_kind_property(items, k: int) -> None:
    scores = np.array([i[0] for i in items], float)
    kinds = np.array([i[1] for i in items], np.uint8)
    nodes = np.arange(len(items), dtype=np.int64) * 3
    got = top_k_by_kind(nodes, scores, kinds, k)
    np.testing.assert_array_equal(got, oracle_top_k(nodes, scores, kinds, k))


def test_top_k_by_kind_nan_ranks_last() -> None:
    nodes = np.arange(100, 106, dtype=np.int64)
    scores = np.array([np.nan, 1.0, np.nan, 0.5, -np.inf, 2.0])
    kinds = np.zeros(6, np.uint8)
    # NaN ranks as -inf: ties with the -inf node keep input order
    np.testing.assert_array_equal(top_k_by_kind(nodes, scores, kinds, 4), [105, 101, 103, 100])
    np.testing.assert_array_equal(
        top_k_by_kind(nodes, scores, kinds, 6), [105, 101, 103, 100, 102, 104]
    )


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint16])
def test_top_k_by_kind_any_integer_kinds(dtype) -> None:
    # negative and widely spread kinds (a remapped kind table) agree with the oracle
    rng = np.random.default_rng(3)
    t = 500
    nodes = rng.permutation(10_000)[:t].astype(np.int64)
    scores = rng.integers(0, 20, t).astype(float)
    values = {np.int8: [-7, 0, 3], np.int64: [-(10**9), 5, 10**12], np.uint16: [0, 40_000]}
    kinds = rng.choice(np.asarray(values[dtype], dtype=dtype), t)
    for k in (2, {int(values[dtype][0]): 3, int(values[dtype][-1]): 7, 123: 4}):
        got = top_k_by_kind(nodes, scores, kinds, k)
        np.testing.assert_array_equal(got, oracle_top_k(nodes, scores, kinds, k))


def test_query_kernels_release_the_gil() -> None:
    # the server calls these from a thread pool (benchmarks/service/concurrent_graph.py)
    from graphstrata.core import ppr, topk

    kernels = (ppr._seed_distribution, ppr._push, ppr._step, ppr._step_plain, ppr._spread)
    for kernel in (*kernels, topk._top_k_positions):
        assert kernel.targetoptions.get("nogil") is True, kernel


def _layered_case(seed: int, n_base: int, n: int, e_base: int, e_extra: int, dead_share: float):
    """A base CSR over ``n_base`` nodes, an extra CSR over ``n``, a random alive mask, and
    the oracle: one CSR of both layers' edges between alive nodes."""
    rng = np.random.default_rng(seed)
    bs, bd = rng.integers(0, max(n_base, 1), e_base), rng.integers(0, max(n_base, 1), e_base)
    xs, xd = rng.integers(0, n, e_extra), rng.integers(0, n, e_extra)
    bw = rng.random(e_base).astype(np.float32) + 0.1
    xw = rng.random(e_extra).astype(np.float32) + 0.1
    r = min(e_extra // 4, e_base)
    xs[:r], xd[:r] = bs[:r], bd[:r]  # edges in both layers
    alive = rng.random(n) >= dead_share
    base = csr_from_edges(bs, bd, bw, n_base)
    extra = csr_from_edges(xs, xd, xw, n)
    s, d, w = np.concatenate([bs, xs]), np.concatenate([bd, xd]), np.concatenate([bw, xw])
    keep = alive[s] & alive[d]
    whole = csr_from_edges(s[keep], d[keep], w[keep], n)
    return base, extra, alive, whole


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("iters", [0, 1, 2, 3])
def test_a_layered_graph_walks_as_its_edges_written_in_one_csr(seed: int, iters: int) -> None:
    base, extra, alive, whole = _layered_case(seed, 60, 90, 300, 80, 0.15)
    live = np.flatnonzero(alive)
    rng = np.random.default_rng(seed + 100)
    seeds = rng.choice(live, 6)
    sw = rng.random(6)
    sums = row_weights(LayeredCSR(*base, *extra, alive))
    # rows summed by the walk, or given; exact, or with a push threshold (a row weight is
    # the same in both forms, so the same nodes push)
    for row_sums, eps in ((None, 0.0), (sums, 0.0), (sums, 2e-3)):
        want_n, want_s, _ = shallow_ppr_stats(*whole, seeds, sw, 0.5, iters, epsilon=eps)
        want = np.zeros(90)
        want[want_n] = want_s
        got_n, got_s, _ = shallow_ppr_stats(
            *base, seeds, sw, 0.5, iters, extra=extra, alive=alive, row_sums=row_sums,
            epsilon=eps,
        )  # fmt: skip
        got = np.zeros(90)
        got[got_n] = got_s
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)
        assert alive[got_n].all()  # no dead node is returned
        assert set(got_n.tolist()) == set(want_n.tolist())
        assert np.unique(got_n).size == got_n.size


@pytest.mark.parametrize(
    ("n_base", "n", "e_base", "e_extra", "dead"),
    [
        (0, 5, 0, 6, 0.0),
        (1, 1, 1, 0, 0.0),
        (8, 8, 10, 0, 0.5),
        (8, 12, 0, 10, 0.0),
        (4, 9, 5, 5, 0.0),
    ],
)
def test_layered_edge_cases(n_base: int, n: int, e_base: int, e_extra: int, dead: float) -> None:
    """No base (a graph grown from nothing), one node, no extra, an empty base layer, and
    extra rows past the base (nodes only the extra layer has)."""
    base, extra, alive, whole = _layered_case(3, n_base, n, e_base, e_extra, dead)
    for seed in np.flatnonzero(alive)[:3].tolist():
        got = shallow_ppr(*base, np.array([seed]), extra=extra, alive=alive)
        want = shallow_ppr(*whole, np.array([seed]))
        np.testing.assert_allclose(
            np.bincount(got[0], got[1], n), np.bincount(want[0], want[1], n), rtol=1e-6
        )


def test_layered_inputs_are_checked() -> None:
    base, extra, alive, _ = _layered_case(1, 10, 14, 20, 10, 0.3)
    dead = int(np.flatnonzero(~alive)[0])
    with pytest.raises(ValueError, match="seeds must be alive"):
        shallow_ppr(*base, np.array([dead]), extra=extra, alive=alive)
    with pytest.raises(ValueError, match="alive must be a bool array of shape"):
        shallow_ppr(*base, np.array([0]), extra=extra, alive=alive[:-1])
    with pytest.raises(ValueError, match="seeds must be node indices"):
        shallow_ppr(*base, np.array([13]))  # a node only the extra layer has
    with pytest.raises(ValueError, match="row_sums must be a float64 array of shape"):
        shallow_ppr(*base, np.array([0]), extra=extra, alive=alive, row_sums=np.zeros(3))
    with pytest.raises(ValueError, match="extra indices and weights"):
        shallow_ppr(*base, np.array([0]), extra=(extra[0], extra[1], extra[2][:-1]))
