"""core.graph: symmetric CSR from edge lists (oracle: scipy.sparse) and edge merging."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from graphstrata.core import graph
from graphstrata.core.graph import advance_csr, csr_from_edges, merge_edges


def scipy_csr(src, dst, w, n):
    """A = S + S.T - diag(S), S the summed COO of the edge list; sorted indices."""
    if n == 0:
        return np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    S = sp.coo_matrix(
        (np.asarray(w, np.float64), (np.asarray(src), np.asarray(dst))), shape=(n, n)
    ).tocsr()
    S.sum_duplicates()
    A = (S + S.T - sp.diags(S.diagonal())).tocsr()
    A.sort_indices()
    # keep explicit entries even when weights cancel to 0 (ours keeps them too)
    pattern = (abs(S) + abs(S).T).tocsr()
    pattern.sort_indices()
    data = np.asarray(A[pattern.nonzero()]).ravel() if pattern.nnz else np.zeros(0)
    rows, cols = pattern.nonzero()
    order = np.lexsort((cols, rows))
    return pattern.indptr.astype(np.int64), cols[order].astype(np.int64), data[order]


def assert_csr_equal(ours, ref) -> None:
    ip, ix, w = ours
    rip, rix, rw = ref
    assert ip.dtype == np.int64 and ix.dtype == np.int64 and w.dtype == np.float32
    np.testing.assert_array_equal(ip, rip)
    np.testing.assert_array_equal(ix, rix)
    np.testing.assert_allclose(w, rw, rtol=1e-5, atol=1e-6)


def random_edges(rng, n, e):
    return (
        rng.integers(0, n, e),
        rng.integers(0, n, e),
        rng.random(e).astype(np.float32) + 0.01,
    )


@pytest.mark.parametrize(("n", "e"), [(1, 0), (5, 20), (200, 1000), (300, 9000)])
def test_csr_matches_scipy(n: int, e: int) -> None:
    rng = np.random.default_rng(n + e)
    src, dst, w = random_edges(rng, n, e)
    assert_csr_equal(csr_from_edges(src, dst, w, n), scipy_csr(src, dst, w, n))


def test_csr_edge_cases() -> None:
    # empty graph, isolated nodes, self-loops stored once, duplicates in both directions
    ip, ix, w = csr_from_edges(np.zeros(0), np.zeros(0), np.zeros(0), 0)
    assert ip.tolist() == [0] and ix.size == 0 and w.size == 0
    ip, ix, w = csr_from_edges([], [], [], 3)
    assert ip.tolist() == [0, 0, 0, 0]
    ip, ix, w = csr_from_edges([0, 1, 1, 2, 2], [1, 0, 1, 2, 2], [1.0, 2.0, 4.0, 1.5, 0.5], 4)
    assert ip.tolist() == [0, 1, 3, 4, 4]
    assert ix.tolist() == [1, 0, 1, 2]
    np.testing.assert_allclose(w, [3.0, 3.0, 4.0, 2.0])


def test_csr_heavy_row_and_disconnected() -> None:
    # a hub row longer than the insertion-sort threshold, plus separate components
    rng = np.random.default_rng(3)
    hub_dst = rng.integers(1, 500, 3000)
    src = np.concatenate([np.zeros(3000, np.int64), np.arange(600, 700)])
    dst = np.concatenate([hub_dst, np.arange(601, 701)])
    w = rng.random(src.shape[0]).astype(np.float32)
    assert_csr_equal(csr_from_edges(src, dst, w, 800), scipy_csr(src, dst, w, 800))


def test_csr_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        csr_from_edges([0, 1], [1], [1.0, 1.0], 2)
    with pytest.raises(ValueError):
        csr_from_edges([0, 2], [1, 1], [1.0, 1.0], 2)
    with pytest.raises(ValueError):
        csr_from_edges([0, -1], [1, 1], [1.0, 1.0], 2)
    with pytest.raises(ValueError):
        csr_from_edges([0.5], [1], [1.0], 2)
    with pytest.raises(ValueError):
        csr_from_edges([0], [1], [np.inf], 2)
    with pytest.raises(ValueError):
        csr_from_edges([], [], [], -1)


def test_merge_edges_equals_rebuild() -> None:
    rng = np.random.default_rng(5)
    src, dst, w = random_edges(rng, 100, 700)
    base = csr_from_edges(src[:500], dst[:500], w[:500], 100)
    # new edges touch old and brand-new nodes, repeat old edges and add self-loops
    s2 = np.concatenate([src[500:], [100, 101, 3, 7]])
    d2 = np.concatenate([dst[500:], [5, 101, 3, 100]])
    w2 = np.concatenate([w[500:], [1.0, 2.0, 0.5, 0.25]]).astype(np.float32)
    merged = merge_edges(*base, s2, d2, w2, 102)
    full = scipy_csr(np.r_[src[:500], s2], np.r_[dst[:500], d2], np.r_[w[:500], w2], 102)
    assert_csr_equal(merged, full)
    # merging nothing changes nothing (growing n adds empty rows)
    same = merge_edges(*base, [], [], [], 103)
    np.testing.assert_array_equal(same[0][:101], base[0])
    assert same[0].shape == (104,) and same[0][-1] == base[0][-1]


@pytest.mark.parametrize("seed", range(4))
def test_merge_of_few_edges_equals_the_general_merge(seed: int) -> None:
    # Few new edges against many rows take the entry-by-entry merge (_merge_entries); it
    # must give the general merge's CSR exactly (same float32 sums), and scipy's.
    rng = np.random.default_rng(seed)
    n_old, n = 3000, 3000 + 40
    src, dst, w = random_edges(rng, n_old, 2000)
    base = csr_from_edges(src, dst, w, n_old)
    s2, d2, w2 = random_edges(rng, n, 60)
    # repeats of old edges (both directions), duplicates among the new, self-loops,
    # rows past the old graph and a hub row
    s2 = np.concatenate([s2, src[:10], dst[10:15], s2[:5], [7, 3005, 9, 9, 9]])
    d2 = np.concatenate([d2, dst[:10], src[10:15], d2[:5], [7, 3010, 1, 2, 3]])
    w2 = np.concatenate([w2, w[:15], w2[:5], [0.5, 1.5, 2.0, 2.0, 2.0]]).astype(np.float32)
    assert graph._FEW_EDGES_SHARE * s2.size <= n  # the entry-by-entry path
    few = merge_edges(*base, s2, d2, w2, n)
    general = graph._merge_sorted(*base, n_old, *csr_from_edges(s2, d2, w2, n), n)
    for a, b in zip(few, general, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    full = scipy_csr(np.r_[src, s2], np.r_[dst, d2], np.r_[w, w2], n)
    assert_csr_equal(few, full)


def test_merge_of_few_edges_edge_cases() -> None:
    # into an empty graph, into a graph of one node, nothing into a large graph
    empty = (np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))
    assert_csr_equal(
        merge_edges(*empty, [0, 5], [5, 5], [1.0, 2.0], 40),
        scipy_csr([0, 5], [5, 5], [1.0, 2.0], 40),
    )
    one = csr_from_edges([0], [0], [1.0], 1)
    assert_csr_equal(
        merge_edges(*one, [0], [0], [0.5], 20), scipy_csr([0, 0], [0, 0], [1.0, 0.5], 20)
    )
    big = csr_from_edges([0, 1], [1, 2], [1.0, 1.0], 100)
    same = merge_edges(*big, [], [], [], 100)
    for a, b in zip(same, big, strict=True):
        np.testing.assert_array_equal(a, b)


def test_merge_edges_rejects_bad_input() -> None:
    base = csr_from_edges([0], [1], [1.0], 2)
    with pytest.raises(ValueError):
        merge_edges(*base, [0], [1], [1.0], 1)  # shrinking
    with pytest.raises(ValueError):
        merge_edges(base[0], base[1][:1], base[2][:1], [0], [1], [1.0], 2)  # inconsistent
    with pytest.raises(ValueError):
        merge_edges(*base, [0], [5], [1.0], 3)


edge_lists = st.integers(1, 30).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.integers(1, 8)),
            max_size=80,
        ),
    )
)


@settings(max_examples=60, deadline=None)
@given(edge_lists, st.integers(0, 80), st.integers(0, 5))
def test_csr_and_merge_property(data, split: int, grow: int) -> None:
    n, edges = data
    src = np.array([e[0] for e in edges], np.int64)
    dst = np.array([e[1] for e in edges], np.int64)
    w = np.array([e[2] for e in edges], np.float32) / 4  # exact in float32
    ref = scipy_csr(src, dst, w, n)
    assert_csr_equal(csr_from_edges(src, dst, w, n), ref)
    # symmetric: every (u, v, w) has its (v, u, w)
    ip, ix, ww = csr_from_edges(src, dst, w, n)
    dense = np.zeros((n, n))
    for u in range(n):
        dense[u, ix[ip[u] : ip[u + 1]]] = ww[ip[u] : ip[u + 1]]
    np.testing.assert_array_equal(dense, dense.T)
    k = min(split, src.shape[0])
    base = csr_from_edges(src[:k], dst[:k], w[:k], n)
    merged = merge_edges(*base, src[k:], dst[k:], w[k:], n + grow)
    assert_csr_equal(merged, scipy_csr(src, dst, w, n + grow))


def _kept_oracle(src, dst, w, keep):
    """csr_from_edges over the edges with both ends kept, renumbered (the oracle)."""
    new_pos = np.cumsum(keep) - 1
    alive = keep[src] & keep[dst]
    return scipy_csr(new_pos[src[alive]], new_pos[dst[alive]], w[alive], int(keep.sum()))


@pytest.mark.parametrize("seed", range(4))
def test_advance_csr_without_new_edges_equals_rebuild_without_the_dropped(seed) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 120))
    src, dst, w = random_edges(rng, n, int(rng.integers(0, 6 * n)))
    src, dst = np.r_[src, [0, 1]], np.r_[dst, [0, 1]]  # self-loops
    w = np.r_[w, [1.5, 0.5]].astype(np.float32)
    keep = rng.random(n) < 0.7
    got = advance_csr(*csr_from_edges(src, dst, w, n), keep, [], [], [], int(keep.sum()))
    assert_csr_equal(got, _kept_oracle(src, dst, w, keep))


@pytest.mark.parametrize("seed", range(8))
def test_advance_csr_equals_rebuilding(seed) -> None:
    rng = np.random.default_rng(50 + seed)
    n = int(rng.integers(1, 150))
    src, dst, w = random_edges(rng, n, int(rng.integers(0, 6 * n)))
    src, dst = np.r_[src, [0]], np.r_[dst, [0]]  # a self-loop
    w = np.r_[w, [1.5]].astype(np.float32)
    base = csr_from_edges(src, dst, w, n)
    keep = rng.random(n) < rng.choice([0.0, 0.5, 0.9, 1.0])
    k = int(keep.sum())
    grow = int(rng.integers(0, 4))
    if k + grow == 0:
        grow = 1
    # New edges, some duplicating each other and kept ones, some self-loops.
    s2, d2, w2 = random_edges(rng, k + grow, int(rng.integers(0, 30)))
    got = advance_csr(*base, keep, s2, d2, w2, k + grow)
    new_pos = np.cumsum(keep) - 1
    alive = keep[src] & keep[dst]
    full = scipy_csr(
        np.r_[new_pos[src[alive]], s2],
        np.r_[new_pos[dst[alive]], d2],
        np.r_[w[alive], w2],
        k + grow,
    )
    assert_csr_equal(got, full)


def test_advance_csr_edge_cases() -> None:
    empty = csr_from_edges([], [], [], 0)
    assert_csr_equal(advance_csr(*empty, np.zeros(0, bool), [], [], [], 0), empty)
    one = csr_from_edges([0], [0], [2.0], 1)
    assert_csr_equal(advance_csr(*one, np.ones(1, bool), [], [], [], 1), one)
    gone = advance_csr(*one, np.zeros(1, bool), [], [], [], 0)
    assert gone[0].tolist() == [0] and gone[1].size == 0
    # Disconnected parts: the dropped one leaves, a new node joins the other.
    two = csr_from_edges([0, 2], [1, 3], [1.0, 3.0], 4)
    got = advance_csr(*two, np.asarray([False, False, True, True]), [2, 0], [0, 1], [1.0, 2.0], 3)
    assert_csr_equal(got, csr_from_edges([0, 2, 0], [1, 0, 1], [3.0, 1.0, 2.0], 3))
    with pytest.raises(ValueError):
        advance_csr(*two, np.ones(3, bool), [], [], [], 3)
    with pytest.raises(ValueError):
        advance_csr(*two, np.ones(4, bool), [], [], [], 3)  # shrinking
    with pytest.raises(ValueError):
        advance_csr(*two, np.ones(4, bool), [0], [9], [1.0], 4)  # an end out of range


def test_advance_csr_in_parallel_chunks_equals_the_serial_result() -> None:
    # Over _PARALLEL_MIN entries the rows are written in parallel chunks.
    rng = np.random.default_rng(9)
    n = 20_000
    src, dst, w = random_edges(rng, n, 150_000)
    base = csr_from_edges(src, dst, w, n)
    assert base[1].size >= 1 << 18
    keep = rng.random(n) < 0.999
    k = int(keep.sum())
    s2, d2, w2 = random_edges(rng, k + 5, 500)
    got = advance_csr(*base, keep, s2, d2, w2, k + 5)
    new_pos = np.cumsum(keep) - 1
    alive = keep[src] & keep[dst]
    full = csr_from_edges(
        np.r_[new_pos[src[alive]], s2], np.r_[new_pos[dst[alive]], d2], np.r_[w[alive], w2], k + 5
    )
    assert_csr_equal(got, full)
