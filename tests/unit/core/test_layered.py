"""core.layered: a two-layer CSR with dead nodes against the dense matrix it stands for."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.core.graph import csr_from_edges
from graphstrata.core.layered import LayeredCSR, flatten, plain, row, row_weights


def _dense(ptr: np.ndarray, ix: np.ndarray, w: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros((n, n))
    for v in range(ptr.shape[0] - 1):
        out[v, ix[ptr[v] : ptr[v + 1]]] += w[ptr[v] : ptr[v + 1]]
    return out


def _case(seed: int, n_base: int, n: int, e_base: int, e_extra: int, dead: float):
    rng = np.random.default_rng(seed)
    hi = max(n_base, 1)
    base = csr_from_edges(
        rng.integers(0, hi, e_base), rng.integers(0, hi, e_base), rng.random(e_base) + 0.1, n_base
    )
    xs, xd = rng.integers(0, n, e_extra), rng.integers(0, n, e_extra)
    r = min(e_extra // 3, e_base)
    xs[:r], xd[:r] = base[1][:r], base[1][::-1][:r]  # repeats of base entries' ends
    extra = csr_from_edges(xs, xd, rng.random(e_extra) + 0.1, n)
    alive = rng.random(n) >= dead
    graph = LayeredCSR(*base, *extra, alive)
    oracle = _dense(*base, n) + _dense(*extra, n)
    oracle[~alive, :] = 0
    oracle[:, ~alive] = 0
    return graph, oracle


CASES = [
    (0, 40, 50, 150, 60, 0.2),
    (1, 40, 40, 150, 0, 0.0),  # no extra entry
    (2, 0, 12, 0, 20, 0.1),  # no base: a graph grown from nothing
    (3, 1, 1, 1, 0, 0.0),  # one node with a self-loop
    (4, 10, 15, 20, 10, 1.0),  # every node dead
    (5, 20, 30, 0, 30, 0.3),  # an empty base layer
]


@pytest.mark.parametrize(("seed", "n_base", "n", "e_base", "e_extra", "dead"), CASES)
def test_rows_weights_and_flattening_match_the_dense_matrix(seed, n_base, n, e_base, e_extra, dead):
    graph, oracle = _case(seed, n_base, n, e_base, e_extra, dead)
    np.testing.assert_allclose(row_weights(graph), oracle.sum(axis=1), rtol=1e-6)
    for v in range(n):
        u, w = row(graph, v)
        got = np.zeros(n)
        np.add.at(got, u, w)
        np.testing.assert_allclose(got, oracle[v] if graph.alive[v] else got, rtol=1e-6)
        assert graph.alive[u].all()
    live = np.flatnonzero(graph.alive)
    ptr, ix, w = flatten(graph)
    assert ptr.shape[0] == live.size + 1
    np.testing.assert_allclose(_dense(ptr, ix, w, live.size), oracle[np.ix_(live, live)], rtol=1e-6)
    assert all(np.all(np.diff(ix[ptr[v] : ptr[v + 1]]) > 0) for v in range(live.size))
    assert graph.n == n and graph.dead == n - live.size


def test_a_plain_graph_is_its_one_layer():
    base = csr_from_edges(np.array([0, 1, 2]), np.array([1, 2, 2]), np.ones(3), 4)
    graph = plain(*base)
    assert graph.extra_entries == 0 and graph.dead == 0 and graph.n == 4
    for a, b in zip(flatten(graph), base, strict=True):
        np.testing.assert_array_equal(a, b)


def test_walk_layers_leave_out_what_adds_nothing():
    """A walk gets no extra layer without extra entries or nodes past the base, and no alive
    mask without a dead node; with them, it gets them and walks as the flattened graph."""
    from graphstrata.core.ppr import shallow_ppr

    base = csr_from_edges(np.array([0, 1, 2]), np.array([1, 2, 3]), np.ones(3), 4)
    assert plain(*base).walk_layers() == (None, None)
    grown = LayeredCSR(
        *base, *csr_from_edges(np.zeros(0), np.zeros(0), np.zeros(0), 5), np.ones(5, bool)
    )
    extra, alive = grown.walk_layers()
    assert extra is not None and alive is None  # node 4 exists only past the base
    nodes, scores = shallow_ppr(*base, np.array([4]), extra=extra, alive=alive)
    whole = csr_from_edges(np.array([0, 1, 2]), np.array([1, 2, 3]), np.ones(3), 5)
    assert (nodes.tolist(), scores.tolist()) == tuple(
        a.tolist() for a in shallow_ppr(*whole, np.array([4]))
    )
    graph, _ = _case(0, 40, 50, 150, 60, 0.2)
    extra, alive = graph.walk_layers()
    assert extra is not None and alive is graph.alive


@pytest.mark.parametrize("seed", range(8))
def test_row_weights_advanced_by_a_change_equal_those_recomputed(seed):
    """Nodes die (some already dead, some neighbours of each other), nodes are added and
    edges join the extra layer (self-loops and repeats of existing pairs included)."""
    from graphstrata.core.graph import merge_edges
    from graphstrata.core.layered import advanced_row_weights

    graph, _ = _case(seed, 30, 40, 120, 40, 0.1)
    rng = np.random.default_rng(seed + 50)
    n_after = 40 + int(rng.integers(0, 6))
    alive = np.concatenate([graph.alive, np.ones(n_after - 40, bool)])
    died = rng.choice(np.flatnonzero(graph.alive), 5, replace=False)
    alive[died] = False
    live = np.flatnonzero(alive)
    src, dst = rng.choice(live, 12), rng.choice(live, 12)
    src[0] = dst[0]  # a self-loop
    w = rng.random(12).astype(np.float32) + 0.1
    extra = merge_edges(*graph.extra, src, dst, w, n_after)
    after = LayeredCSR(graph.indptr, graph.indices, graph.weights, *extra, alive)
    got = advanced_row_weights(graph, row_weights(graph), died, alive, src, dst, w)
    np.testing.assert_allclose(got, row_weights(after), rtol=1e-6, atol=1e-9)
    assert (got[~alive] == 0).all()


def test_row_weights_advanced_by_nothing_or_on_an_empty_graph_are_unchanged():
    from graphstrata.core.layered import advanced_row_weights

    graph, _ = _case(2, 30, 40, 120, 40, 0.1)
    before = row_weights(graph)
    none = np.zeros(0, np.int64)
    same = advanced_row_weights(graph, before, none, graph.alive, none, none, np.zeros(0))
    np.testing.assert_array_equal(same, before)
    empty = plain(*csr_from_edges(none, none, np.zeros(0), 0))
    got = advanced_row_weights(empty, row_weights(empty), none, np.ones(2, bool), [0], [1], [2.0])
    np.testing.assert_array_equal(got, [2.0, 2.0])  # two new nodes and the edge between them


@pytest.mark.parametrize(("seed", "n_base", "n", "e_base", "e_extra", "dead"), CASES)
@pytest.mark.parametrize("share", [0.0, 0.1, 0.5, 1.0])
def test_incident_edges_are_each_edge_at_the_nodes_once(
    seed, n_base, n, e_base, e_extra, dead, share
):
    """Summed per pair, the incident edges are the dense matrix's entries of every pair with
    an end among the nodes (both layers, dead nodes left out), each pair read once."""
    from graphstrata.core.layered import incident_edges

    graph, oracle = _case(seed, n_base, n, e_base, e_extra, dead)
    rng = np.random.default_rng(seed + 7)
    live = np.flatnonzero(graph.alive)
    nodes = np.sort(rng.choice(live, int(share * live.size), replace=False))
    src, dst, w = incident_edges(graph, nodes)
    assert src.dtype == dst.dtype == np.int64 and w.dtype == np.float64
    got = np.zeros((n, n))
    np.add.at(got, (src, dst), w)
    assert np.isin(src, nodes).all() and graph.alive[dst].all()
    both = np.isin(dst, nodes)
    assert (src[both] <= dst[both]).all()  # read once, from the smaller end's row
    want = np.triu(oracle)  # each pair once: (smaller, larger) where both are members
    member = np.zeros(n, bool)
    member[nodes] = True
    want[~member[:, None] & ~member[None, :]] = 0
    upper_only = np.triu(np.ones((n, n), bool), 1)
    outward = member[:, None] & ~member[None, :]  # a member to a non-member, either order
    want[outward] = oracle[outward]
    want[~member[:, None] & member[None, :] & upper_only] = 0
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)


def test_incident_edges_of_no_node_and_of_an_empty_graph_are_empty():
    from graphstrata.core.layered import incident_edges

    graph, _ = _case(0, 40, 50, 150, 60, 0.2)
    assert all(a.size == 0 for a in incident_edges(graph, np.zeros(0, np.int64)))
    none = np.zeros(0, np.int64)
    empty = plain(*csr_from_edges(none, none, np.zeros(0), 0))
    assert all(a.size == 0 for a in incident_edges(empty, none))
