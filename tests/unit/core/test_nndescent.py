"""``core.nndescent``: the approximate k-NN graph against the exact kernel (oracle: brute force).

Random inputs (a recall floor, true similarities, sorted rows, no self-loops), edge cases
(empty, one row, fewer rows than neighbours, duplicates, far-apart clusters), determinism
across runs and thread counts, and bad input.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from graphstrata.core.knn import best_per_query, nearest_neighbours_scored
from graphstrata.core.nndescent import KnnGraph, graph_edges, knn_graph
from tests.helpers.vectors import clustered, exact_rows, unit_rows

#: Recall@16 floor on 3,000 clustered unit vectors in 32 dimensions (measured 0.99+; HNSW,
#: ``core.ann``'s usearch index searched with ef 128, measured 0.999 on the same kind of set).
RECALL_FLOOR = 0.95


def _exact(x: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the exact top-m similarities (descending) and the m-th one."""
    ids = np.arange(x.shape[0], dtype=np.int64)
    src, _, sim = nearest_neighbours_scored(x, ids, x, ids, m)
    top = np.full((x.shape[0], m), -np.inf, np.float32)
    for i in range(x.shape[0]):
        s = np.sort(sim[src == i])[::-1]
        top[i, : s.size] = s
    return top, top[:, -1]


def _check_shape(g: KnnGraph, x: np.ndarray, m: int) -> None:
    n = x.shape[0]
    assert g.indices.shape == g.sims.shape == (n, m)
    assert g.indices.dtype == np.int32 and g.sims.dtype == np.float32
    valid = g.indices >= 0
    rows = np.repeat(np.arange(n), m).reshape(n, m)
    assert not np.any(g.indices[valid] == rows[valid])  # never its own neighbour
    for i in range(n):
        got = g.indices[i][valid[i]]
        assert np.unique(got).size == got.size  # no neighbour twice
        # Missing entries come last; similarities descend.
        assert np.all(valid[i][: got.size]) and not np.any(valid[i][got.size :])
        assert np.all(np.diff(g.sims[i][valid[i]]) <= 0)
    true = np.einsum("ij,ij->i", x[rows[valid]], x[g.indices[valid]])
    np.testing.assert_allclose(g.sims[valid], true, atol=1e-5)


def test_recall_above_the_floor_on_clustered_vectors():
    x = clustered(np.random.default_rng(3), 3000, 32, 30)
    g = knn_graph(x, 16, seed=1)
    _check_shape(g, x, 16)
    _, kth = _exact(x, 16)
    # A found neighbour counts when it is at least as similar as the exact m-th (ties).
    recall = float(np.mean(g.sims >= kth[:, None] - 1e-6))
    assert recall >= RECALL_FLOOR


def test_uniform_random_vectors_still_find_most_neighbours():
    x = unit_rows(np.random.default_rng(5), 2000, 24)
    g = knn_graph(x, 10, seed=0)
    _check_shape(g, x, 10)
    _, kth = _exact(x, 10)
    assert float(np.mean(g.sims >= kth[:, None] - 1e-6)) >= 0.9


def test_few_rows_give_the_exact_graph():
    rng = np.random.default_rng(7)
    for n in (2, 5, 17, 40):
        x = unit_rows(rng, n, 8)
        m = 16
        g = knn_graph(x, m, seed=3)
        _check_shape(g, x, m)
        top, _ = _exact(x, m)
        k = min(m, n - 1)
        np.testing.assert_allclose(g.sims[:, :k], top[:, :k], atol=1e-6)
        assert np.all(g.indices[:, k:] == -1)


def test_edge_cases():
    x = unit_rows(np.random.default_rng(0), 5, 8)
    empty = knn_graph(x[:0], 4)
    assert empty.indices.shape == (0, 4) or empty.indices.shape[0] == 0
    one = knn_graph(x[:1], 4)
    assert one.indices.tolist() == [[-1, -1, -1, -1]]
    assert np.all(np.isneginf(one.sims))
    none = knn_graph(x, 0)
    assert none.indices.shape == (5, 0)
    src, dst, sim = graph_edges(knn_graph(x[:0], 3), np.zeros(0, np.int64))
    assert src.size == dst.size == sim.size == 0 and src.dtype == np.int64


def test_duplicates_under_other_rows_are_neighbours():
    x = np.repeat(np.asarray([[0.6, 0.8, 0.0]], np.float32), 4, axis=0)
    g = knn_graph(x, 3)
    for i in range(4):
        assert sorted(g.indices[i].tolist()) == sorted(set(range(4)) - {i})
    np.testing.assert_allclose(g.sims, 1.0, atol=1e-6)
    # Equal similarities come in ascending index order.
    assert g.indices[0].tolist() == [1, 2, 3]


def test_far_apart_clusters_keep_their_neighbours_inside():
    rng = np.random.default_rng(11)
    d = 16
    parts = []
    for c in range(4):  # four clusters in orthogonal subspaces: inner product 0 across
        block = np.zeros((150, d), np.float32)
        block[:, 4 * c : 4 * c + 4] = np.abs(rng.standard_normal((150, 4))) + 0.1
        parts.append(block / np.linalg.norm(block, axis=1, keepdims=True))
    x = np.concatenate(parts)
    g = knn_graph(x, 8, seed=2)
    _check_shape(g, x, 8)
    cluster = np.arange(x.shape[0]) // 150
    assert np.all(cluster[g.indices] == cluster[:, None])


def test_deterministic_across_runs_and_thread_counts():
    x = clustered(np.random.default_rng(13), 2500, 16, 12)
    a = knn_graph(x, 12, seed=9)
    b = knn_graph(x, 12, seed=9)
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        c = knn_graph(x, 12, seed=9)
    finally:
        numba.set_num_threads(before)
    for other in (b, c):
        assert np.array_equal(a.indices, other.indices)
        assert np.array_equal(a.sims, other.sims)


def test_edges_are_on_ids():
    x = clustered(np.random.default_rng(17), 300, 8, 5)
    ids = np.arange(1000, 1300, dtype=np.int64)[::-1].copy()
    g = knn_graph(x, 6, seed=4)
    src, dst, sim = graph_edges(knn_graph(x, 6, seed=4), ids)
    assert src.tolist() == np.repeat(ids, 6).tolist()
    assert dst.tolist() == ids[g.indices.ravel()].tolist()
    np.testing.assert_array_equal(sim, g.sims.ravel())


def test_edges_on_ascending_ids_are_already_merged():
    """The build's semantic edges skip ``best_per_query`` (``heterograph.enrich``): on ids in
    ascending order the graph's edges are already in its order, ties included."""
    rng = np.random.default_rng(23)
    x = clustered(rng, 400, 8, 6)
    x[50:60] = x[50]  # equal similarities: ties by ascending id
    ids = np.sort(rng.choice(10_000, 400, replace=False)).astype(np.int64)
    edges = graph_edges(knn_graph(x, 8, seed=2), ids)
    merged = best_per_query(*edges, 8)
    for got, want in zip(edges, merged, strict=True):
        np.testing.assert_array_equal(got, want)


def test_kept_columns_extend_the_first_m():
    """``keep`` returns the descent's further neighbours after the first ``m``, which are
    the same as without it; ``graph_edges`` reads the first ``m`` of them."""
    x = clustered(np.random.default_rng(29), 800, 16, 8)
    ids = np.arange(800, dtype=np.int64) * 3
    short = knn_graph(x, 8, seed=5)
    wide = knn_graph(x, 8, seed=5, keep=24)
    _check_shape(wide, x, 24)
    np.testing.assert_array_equal(wide.indices[:, :8], short.indices)
    for got, want in zip(graph_edges(wide, ids, 8), graph_edges(short, ids), strict=True):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="keep"):
        knn_graph(x, 8, keep=25)
    with pytest.raises(ValueError, match="keep"):
        knn_graph(x, 8, keep=7)


def test_a_descent_seeded_by_a_close_graph_needs_no_trees():
    """Started from the exact neighbours alone (no trees), the descent keeps them: recall
    1. From a seed missing for some rows (``-1``), or holding the row itself, it recovers
    them through the reverse lists, above the floor."""
    x = clustered(np.random.default_rng(31), 2000, 32, 20)
    top, kth = _exact(x, 16)
    exact = knn_graph(x, 16, seed=0, n_trees=0, init=exact_rows(x, 16))
    _check_shape(exact, x, 16)
    assert float(np.mean(exact.sims >= kth[:, None] - 1e-6)) == 1.0
    np.testing.assert_allclose(exact.sims, top, atol=1e-5)
    seed = exact_rows(x, 16)
    seed[::3] = -1  # a third of the rows listed nothing
    seed[1::3, 0] = np.arange(1, 2000, 3)  # the row itself: skipped
    partial = knn_graph(x, 16, seed=0, n_trees=0, init=seed)
    _check_shape(partial, x, 16)
    assert float(np.mean(partial.sims >= kth[:, None] - 1e-6)) >= RECALL_FLOOR


def test_empty_and_tiny_seeds():
    x = clustered(np.random.default_rng(37), 5, 4, 2)
    g = knn_graph(x, 3, n_trees=0, init=np.full((5, 2), -1, np.int32))
    _check_shape(g, x, 3)  # nothing to start from, nothing found
    assert not np.any(g.indices >= 0)
    g = knn_graph(x, 3, n_trees=0, init=np.array([[1], [0], [3], [2], [0]], np.int32))
    _check_shape(g, x, 3)  # each row found its seed's neighbours through the reverse lists
    assert np.all((g.indices >= 0).sum(axis=1) >= 1)
    empty = knn_graph(x[:0], 3, init=np.zeros((0, 4), np.int32))
    assert empty.indices.shape == (0, 0)


def test_bad_input_is_a_value_error():
    with pytest.raises(ValueError, match="2-d"):
        knn_graph(np.zeros(5, np.float32), 3)
    with pytest.raises(ValueError, match="one id per row"):
        graph_edges(knn_graph(np.zeros((4, 3), np.float32), 2), np.arange(3))
    x = np.eye(4, dtype=np.float32)
    with pytest.raises(ValueError, match="init needs 4 rows"):
        knn_graph(x, 2, init=np.zeros((3, 2), np.int32))
    with pytest.raises(ValueError, match="row indices"):
        knn_graph(x, 2, init=np.full((4, 2), 4, np.int32))
