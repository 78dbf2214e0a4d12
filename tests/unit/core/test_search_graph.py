"""``core.search_graph`` and ``core.ann.hnsw_from_graph``: a search graph made from a k-NN
graph, loaded into usearch.

Oracles: robust pruning against a plain Python implementation, reachability against a
breadth-first walk, the entry against the mean, search results against brute force (a
recall floor, and the recall of usearch's own inserts on the same set). Edge cases: empty,
one row, duplicates, far-apart clusters whose k-NN graphs never meet, degrees so small
that rows fill up. Determinism across thread counts; the loaded index adds, removes, saves
and is viewed like one usearch built.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

import numba
import numpy as np
import pytest

from graphstrata.core import search_graph as sg
from graphstrata.core.ann import BASE_DEGREE, hnsw_from_graph, hnsw_index, match_arrays
from graphstrata.core.nndescent import KnnGraph, knn_graph
from tests.helpers.vectors import clustered, unit_rows

#: Recall@10 floor of the loaded index at ef 64 on 4,000 clustered 32-d unit vectors
#: (measured 0.99+; usearch's own inserts on the same set: also 0.99+, checked below).
RECALL_FLOOR = 0.95


def _reached(g: sg.SearchGraph) -> np.ndarray:
    seen = np.zeros(g.counts.size, bool)
    if not g.counts.size:
        return seen
    seen[g.entry] = True
    queue = deque([g.entry])
    while queue:
        v = queue.popleft()
        for u in g.neighbours[v, : g.counts[v]]:
            if not seen[u]:
                seen[u] = True
                queue.append(int(u))
    return seen


def _check(g: sg.SearchGraph, x: np.ndarray, degree: int) -> None:
    n = x.shape[0]
    assert g.neighbours.shape == (n, degree) and g.neighbours.dtype == np.int32
    assert g.counts.shape == (n,) and (g.counts <= degree).all()
    for i in range(n):
        row = g.neighbours[i, : g.counts[i]]
        assert (row >= 0).all() and (row < n).all()
        assert i not in row.tolist()
        assert np.unique(row).size == row.size
        assert (g.neighbours[i, g.counts[i] :] == -1).all()
    assert _reached(g).all()  # every row reachable from the entry


def _prune_oracle(
    x: np.ndarray, row: int, cand: np.ndarray, sims: np.ndarray, degree: int, alpha: float
) -> list[int]:
    order = sorted(range(cand.size), key=lambda p: (-float(sims[p]), p))
    kept: list[int] = []
    for p in order:
        c = int(cand[p])
        if c == row or c in kept:
            continue
        d_rc = 1.0 - float(np.float32(sims[p]))
        if all(alpha * (1.0 - float(x[c] @ x[k])) > d_rc for k in kept):
            kept.append(c)
            if len(kept) == degree:
                break
    return kept


@pytest.mark.parametrize("seed", range(3))
def test_pruning_matches_the_python_oracle(seed):
    rng = np.random.default_rng(seed)
    x = unit_rows(rng, 60, 8)
    for row in range(10):
        cand = rng.integers(0, 60, 40).astype(np.int32)  # duplicates and the row itself
        sims = (x[cand] @ x[row]).astype(np.float32)
        for degree, alpha in ((32, 1.2), (3, 1.0), (5, 1.5)):
            out = np.full(degree, -1, np.int32)
            out_sims = np.zeros(degree, np.float32)
            kept = sg._prune_row(x, row, cand, sims, degree, np.float32(alpha), out, out_sims)
            want = _prune_oracle(x, row, cand, sims, degree, alpha)
            assert out[:kept].tolist() == want
            np.testing.assert_array_equal(out_sims[:kept], [sims[cand == c][0] for c in want])


def test_random_clustered_vectors_give_a_reachable_graph_and_a_recall_like_usearch():
    rng = np.random.default_rng(0)
    x = clustered(rng, 4000, 32, 40)
    ids = np.arange(4000, dtype=np.int64) * 7 + 3
    g = sg.search_graph(x, knn_graph(x, 16, 0), BASE_DEGREE)
    _check(g, x, BASE_DEGREE)
    assert g.entry == int(np.argmax(x @ x.mean(axis=0)))  # the row nearest the mean
    index = hnsw_from_graph(ids, x, g.neighbours, g.counts, g.entry, "f32", 64)
    assert index is not None and len(index) == 4000
    inserted = hnsw_index(32, "f32", 64)
    inserted.add(ids, x, threads=1)
    q = unit_rows(rng, 200, 32)
    truth = ids[np.argsort(-(q @ x.T), axis=1)[:, :10]]
    for idx in (index, inserted):
        keys, _, valid = match_arrays(idx.search(q, 10, threads=1), 200, 10)
        assert valid.all()
        hits = sum(np.intersect1d(keys[i], truth[i]).size for i in range(200))
        assert hits / 2000 >= RECALL_FLOOR


def test_empty_and_one_row():
    empty = sg.search_graph(
        np.zeros((0, 4), np.float32),
        KnnGraph(np.zeros((0, 3), np.int32), np.zeros((0, 3), np.float32)),
        8,
    )
    assert empty.neighbours.shape == (0, 8)
    one_x = unit_rows(np.random.default_rng(1), 1, 4)
    one = sg.search_graph(one_x, knn_graph(one_x, 3), 8)
    assert one.entry == 0 and one.counts.tolist() == [0]
    assert (
        hnsw_from_graph(
            np.zeros(0, np.int64), one_x[:0], one.neighbours[:0], one.counts[:0], 0, "f32", 64
        )
        is None
    )
    index = hnsw_from_graph(np.array([42]), one_x, one.neighbours, one.counts, 0, "f16", 64)
    assert index is not None
    keys, _, valid = match_arrays(index.search(one_x, 1), 1, 1)
    assert valid.all() and keys[0, 0] == 42


def test_duplicates_and_far_clusters_are_linked_to_the_entry():
    rng = np.random.default_rng(2)
    dup = np.repeat(unit_rows(rng, 1, 16), 60, axis=0)  # 60 copies: their k nearest are copies
    far = unit_rows(rng, 1, 16)
    cluster = far + 0.01 * rng.standard_normal((80, 16)).astype(np.float32)
    cluster /= np.linalg.norm(cluster, axis=1, keepdims=True)
    x = np.concatenate([unit_rows(rng, 500, 16), dup, -cluster]).astype(np.float32)
    # The exact k-NN graph (no NN-descent sampling): the duplicates and the far cluster
    # are only ever their own neighbours, so only the repair can link them.
    sims = x @ x.T
    np.fill_diagonal(sims, -np.inf)
    order = np.argsort(-sims, axis=1, kind="stable")[:, :8].astype(np.int32)
    knn = KnnGraph(order, np.take_along_axis(sims, order, 1).astype(np.float32))
    g = sg.search_graph(x, knn, BASE_DEGREE)
    _check(g, x, BASE_DEGREE)
    ids = np.arange(x.shape[0], dtype=np.int64)
    index = hnsw_from_graph(ids, x, g.neighbours, g.counts, g.entry, "f32", 64)
    assert index is not None
    keys, _, _ = match_arrays(index.search(-cluster[:5], 3), 5, 3)
    assert (keys >= 560).all()  # the far cluster is found, not just reachable


@pytest.mark.parametrize("degree", [2, 3])
def test_small_degrees_fill_rows_and_still_reach_every_row(degree):
    x = clustered(np.random.default_rng(3), 300, 8, 6)
    g = sg.search_graph(x, knn_graph(x, 6, 0), degree)
    _check(g, x, degree)


def test_the_graph_does_not_depend_on_the_thread_count():
    x = clustered(np.random.default_rng(4), 3000, 16, 20)
    knn = knn_graph(x, 12, 5)
    before = numba.get_num_threads()
    graphs = []
    try:
        for threads in sorted({1, before}):
            numba.set_num_threads(threads)
            graphs.append(sg.search_graph(x, knn, BASE_DEGREE))
    finally:
        numba.set_num_threads(before)
    for g in graphs[1:]:
        np.testing.assert_array_equal(g.neighbours, graphs[0].neighbours)
        assert g.entry == graphs[0].entry


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_the_loaded_index_adds_removes_saves_and_is_viewed(dtype, tmp_path: Path):
    rng = np.random.default_rng(6)
    x = clustered(rng, 2000, 24, 12)
    ids = np.arange(2000, dtype=np.int64) + 100
    g = sg.search_graph(x, knn_graph(x, 16, 0), BASE_DEGREE)
    index = hnsw_from_graph(ids, x, g.neighbours, g.counts, g.entry, dtype, 64)
    assert index is not None
    stored = np.asarray(index.get(ids[:5]), np.float32)
    np.testing.assert_allclose(stored, x[:5], atol=1e-3 if dtype == "f16" else 0)
    more = clustered(rng, 300, 24, 12)
    index.add(np.arange(5000, 5300, dtype=np.int64), more, threads=1)
    index.remove(ids[:100])
    assert len(index) == 2200
    keys, _, _ = match_arrays(index.search(more[:20], 1), 20, 1)
    assert keys[:, 0].tolist() == list(range(5000, 5020))  # each finds itself
    keys, _, _ = match_arrays(index.search(x[:100], 5), 100, 5)
    assert not np.isin(keys, ids[:100]).any()
    path = tmp_path / "kind.usearch"
    index.save(str(path))
    viewed = hnsw_index(24, dtype, 64)
    viewed.view(str(path))
    a = match_arrays(viewed.search(x[200:260], 10), 60, 10)[0]
    b = match_arrays(index.search(x[200:260], 10), 60, 10)[0]
    np.testing.assert_array_equal(a, b)


def test_a_storage_type_it_does_not_write_falls_back_to_inserts():
    x = unit_rows(np.random.default_rng(7), 50, 8)
    g = sg.search_graph(x, knn_graph(x, 4, 0), BASE_DEGREE)
    assert hnsw_from_graph(np.arange(50), x, g.neighbours, g.counts, g.entry, "i8", 64) is None


def test_bad_input():
    x = unit_rows(np.random.default_rng(8), 10, 4)
    knn = knn_graph(x, 3)
    with pytest.raises(ValueError, match="one row per vector"):
        sg.search_graph(x[:5], knn, 8)
    with pytest.raises(ValueError, match="degree"):
        sg.search_graph(x, knn, 1)
    g = sg.search_graph(x, knn, 8)
    wide = np.zeros((10, BASE_DEGREE + 1), np.int32)
    with pytest.raises(ValueError, match="more neighbours"):
        hnsw_from_graph(np.arange(10), x, wide, g.counts, g.entry, "f32", 64)
