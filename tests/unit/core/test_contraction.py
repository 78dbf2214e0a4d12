"""core.contraction against the NumPy passes it replaced (the oracle), on random
partitioned graphs and edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.core.contraction import (
    apply_contracted_labels,
    contract_communities,
    frontier,
)


def _oracle(src, dst, weight, strength, labels, opened):
    """The NumPy contraction of engine.heterograph.graph._contracted_run before the kernels,
    less the edges without an opened end (between two fixed communities, inside one)."""
    region = np.flatnonzero(opened)
    near = opened[src] | opened[dst]
    candidates = np.unique(np.concatenate([labels[region], labels[src[near]], labels[dst[near]]]))
    size = np.bincount(labels)
    opened_size = np.bincount(labels[region], minlength=size.size)
    fixed_labels = candidates[size[candidates] > opened_size[candidates]]
    fixed_node = np.full(size.size, -1, np.int64)
    fixed_node[fixed_labels] = region.size + np.arange(fixed_labels.size)
    node_map = fixed_node[labels]
    node_map[region] = np.arange(region.size)
    m = region.size + fixed_labels.size
    a, b = node_map[src], node_map[dst]
    kept = np.flatnonzero((a >= 0) & (b >= 0))
    kept = kept[near[kept]]  # only the edges with an opened end
    a, b, w = a[kept], b[kept], weight[kept]
    inside = a == b
    loops = np.bincount(a[inside], weights=w[inside], minlength=m).astype(np.float64)
    cross = ~inside
    lo, hi = np.minimum(a[cross], b[cross]), np.maximum(a[cross], b[cross])
    part = np.bincount(node_map[node_map >= 0], strength[node_map >= 0], m)
    members = size[fixed_labels] - opened_size[fixed_labels]
    return node_map, region, fixed_labels, members, loops, lo, hi, w[cross], part


def _graph(rng, n, e, n_labels, p_open):
    src = rng.integers(0, n, e).astype(np.int64)
    dst = rng.integers(0, n, e).astype(np.int64)
    weight = rng.random(e)
    strength = np.bincount(src, weight, n) + np.bincount(dst, weight, n)
    labels = rng.integers(0, n_labels, n).astype(np.int64)
    opened = rng.random(n) < p_open
    return src, dst, weight, strength, labels, opened


def _check(src, dst, weight, strength, labels, opened):
    got = contract_communities(src, dst, weight, strength, labels, opened)
    want = _oracle(src, dst, weight, strength, labels, opened)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)  # same summation order: bit-identical


@pytest.mark.parametrize("seed", range(12))
def test_contraction_equals_the_numpy_passes(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    e = int(rng.integers(0, 3 * n))
    args = _graph(rng, n, e, int(rng.integers(1, n + 1)), float(rng.choice([0.0, 0.02, 0.3, 1.0])))
    _check(*args)


def test_edge_cases():
    one = np.zeros(1, np.int64)
    none = np.zeros(0, np.int64)
    # one node, no edges, opened or not
    _check(none, none, np.zeros(0), np.zeros(1), one, np.ones(1, bool))
    _check(none, none, np.zeros(0), np.zeros(1), one, np.zeros(1, bool))
    # a self-loop and duplicated edges between two communities
    src = np.array([0, 0, 0, 1, 2, 2], np.int64)
    dst = np.array([0, 1, 1, 2, 3, 3], np.int64)
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    labels = np.array([0, 0, 1, 1], np.int64)
    strength = np.bincount(src, w, 4) + np.bincount(dst, w, 4)
    opened = np.array([True, False, False, False])
    _check(src, dst, w, strength, labels, opened)
    c = contract_communities(src, dst, w, strength, labels, opened)
    # node 0 opened; community 0's rest (node 1) and community 1 (next to node 1? no: only
    # communities next to an opened node are kept) -> community 0 only
    assert c.fixed_labels.tolist() == [0]
    assert c.node_map.tolist() == [0, 1, -1, -1]
    assert c.loops.tolist() == [1.0, 0.0]
    assert sorted(zip(c.cross_lo.tolist(), c.cross_w.tolist())) == [(0, 2.0), (0, 3.0)]
    # disconnected: an opened node with no edges keeps only its own community's rest
    labels = np.array([0, 0, 1, 1, 2], np.int64)
    src, dst = np.array([0, 2], np.int64), np.array([1, 3], np.int64)
    opened = np.array([False, False, False, False, True])
    _check(src, dst, np.ones(2), np.ones(5), labels, opened)
    c = contract_communities(src, dst, np.ones(2), np.ones(5), labels, opened)
    assert c.region.tolist() == [4] and c.fixed_labels.size == 0


def test_edges_between_fixed_communities_are_left_out():
    # Node 0 (opened) is tied to communities 1 and 2, which are tied to each other: both
    # become fixed nodes, their edge is dropped, the opened node's edges are kept.
    labels = np.array([0, 1, 1, 2, 2], np.int64)
    src = np.array([0, 0, 1, 2, 3], np.int64)
    dst = np.array([1, 3, 3, 1, 4], np.int64)
    w = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    strength = np.bincount(src, w, 5) + np.bincount(dst, w, 5)
    opened = np.array([True, False, False, False, False])
    _check(src, dst, w, strength, labels, opened)
    c = contract_communities(src, dst, w, strength, labels, opened)
    assert c.fixed_labels.tolist() == [1, 2]
    assert list(zip(c.cross_lo.tolist(), c.cross_hi.tolist(), c.cross_w.tolist())) == [
        (0, 1, 1.0),
        (0, 2, 2.0),
    ]
    assert c.loops.tolist() == [0.0, 0.0, 0.0]  # inside a fixed community: left out


def test_apply_and_frontier():
    labels = np.array([5, 5, 7, 7, 9], np.int64)
    node_map = np.array([0, -1, 1, 1, -1], np.int64)
    assert apply_contracted_labels(labels, node_map, np.array([3, 8])).tolist() == [3, 5, 8, 8, 9]
    src, dst = np.array([0, 2], np.int64), np.array([1, 3], np.int64)
    moved = np.array([False, True, False, False, True])
    # node 4 moved but has no edge: frontier holds only ends of edges
    assert frontier(src, dst, moved).tolist() == [True, True, False, False, False]
    assert frontier(np.zeros(0, np.int64), np.zeros(0, np.int64), moved).sum() == 0
    rng = np.random.default_rng(3)
    s, d = rng.integers(0, 50, 120), rng.integers(0, 50, 120)
    mv = rng.random(50) < 0.1
    want = np.zeros(50, bool)
    near = mv[s] | mv[d]
    want[s[near]] = True
    want[d[near]] = True
    np.testing.assert_array_equal(frontier(s, d, mv), want)
