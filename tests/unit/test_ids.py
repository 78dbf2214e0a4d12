"""``core.ids`` lookups against ``np.searchsorted`` and ``np.isin`` (the oracles)."""

import numpy as np
import pytest

from graphstrata.core.ids import (
    contains,
    edges_carried,
    edges_within,
    find_positions,
    positions_in,
)


@pytest.mark.parametrize("seed", range(6))
def test_positions_match_searchsorted_dense_and_sparse(seed):
    rng = np.random.default_rng(seed)
    span = [50, 10_000, 10**12][seed % 3]  # dense table, table at the limit, sparse ids
    n = int(rng.integers(1, 400))
    ids = np.unique(rng.integers(0, span, n)).astype(np.int64)
    values = rng.choice(ids, int(rng.integers(0, 3000)))  # duplicates included
    got = positions_in(ids, values)
    np.testing.assert_array_equal(got, np.searchsorted(ids, values))
    assert got.dtype == np.int64


def test_edge_cases():
    empty = np.zeros(0, np.int64)
    assert positions_in(empty, empty).size == 0
    assert positions_in(np.asarray([7]), empty).size == 0
    np.testing.assert_array_equal(positions_in(np.asarray([7]), np.asarray([7, 7])), [0, 0])
    with pytest.raises(KeyError):
        positions_in(empty, np.asarray([1]))
    for ids in (np.asarray([2, 4, 6]), np.asarray([2, 4, 10**15])):  # table and search paths
        for missing in (3, 1, 7, -5):
            with pytest.raises(KeyError):
                positions_in(ids, np.asarray([2, missing]))


@pytest.mark.parametrize("seed", range(6))
def test_contains_matches_isin(seed):
    rng = np.random.default_rng(seed)
    span = [50, 10_000, 10**12][seed % 3]
    ids = np.unique(rng.integers(0, span, int(rng.integers(1, 400)))).astype(np.int64)
    # present ids, absent ones, and ones below and above the range
    values = np.concatenate(
        [rng.choice(ids, 300), rng.integers(-5, span + 5, 300), [-(10**13), 10**13]]
    ).astype(np.int64)
    np.testing.assert_array_equal(contains(ids, values), np.isin(values, ids))


def test_contains_edge_cases():
    empty = np.zeros(0, np.int64)
    assert contains(empty, np.asarray([1])).tolist() == [False]
    assert contains(np.asarray([3]), empty).size == 0
    assert contains(np.asarray([3]), np.asarray([3, 2, 4, 3])).tolist() == [
        True,
        False,
        False,
        True,
    ]


@pytest.mark.parametrize("seed", range(6))
def test_find_positions_match_searchsorted_and_mark_the_absent(seed):
    rng = np.random.default_rng(seed)
    span = [50, 10_000, 10**12][seed % 3]  # dense table, table at the limit, sparse ids
    ids = np.unique(rng.integers(0, span, int(rng.integers(1, 400)))).astype(np.int64)
    values = np.concatenate(
        [rng.choice(ids, 300), rng.integers(-5, span + 5, 300), [-(10**13), -1, 10**13]]
    ).astype(np.int64)
    got = find_positions(ids, values)
    present = np.isin(values, ids)
    want = np.where(present, np.searchsorted(ids, values), -1)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int64


def test_find_positions_edge_cases():
    empty = np.zeros(0, np.int64)
    assert find_positions(empty, np.asarray([1, 2])).tolist() == [-1, -1]
    assert find_positions(np.asarray([3]), empty).size == 0
    assert find_positions(np.asarray([3]), np.asarray([3, 2, 4, 3])).tolist() == [0, -1, -1, 0]


@pytest.mark.parametrize("seed", range(6))
def test_ascending_values_take_the_search_path_with_the_same_result(seed):
    rng = np.random.default_rng(seed)
    span = [50, 10_000, 10**12][seed % 3]
    ids = np.unique(rng.integers(0, span, int(rng.integers(1, 400)))).astype(np.int64)
    values = np.sort(np.concatenate([rng.choice(ids, 500), rng.integers(-5, span + 5, 500)]))
    pos = np.minimum(np.searchsorted(ids, values), ids.size - 1)
    want = np.where(ids[pos] == values, pos, -1)
    np.testing.assert_array_equal(find_positions(ids, values), want)
    np.testing.assert_array_equal(find_positions(ids, values[::-1]), want[::-1])  # table path


@pytest.mark.parametrize("n_values", [0, 1, 3, 40, 5000])
def test_ascending_values_merged_or_searched_give_the_same_positions(n_values):
    # 5000 ids: 3 and 40 values are searched (fewer than ids / MERGE_SHARE), 5000 merged.
    rng = np.random.default_rng(n_values)
    ids = np.unique(rng.integers(0, 20_000, 5000)).astype(np.int64)
    values = np.sort(
        np.concatenate(
            [rng.choice(ids, n_values // 2), rng.integers(-3, 20_003, n_values - n_values // 2)]
        )
    ).astype(np.int64)
    pos = np.minimum(np.searchsorted(ids, values), ids.size - 1)
    want = np.where(ids[pos] == values, pos, -1)
    np.testing.assert_array_equal(find_positions(ids, values), want)
    # duplicates and values past the last id
    dup = np.repeat(values, 2)
    np.testing.assert_array_equal(find_positions(ids, dup), np.repeat(want, 2))
    assert find_positions(ids, np.array([ids[-1] + 1, ids[-1] + 2] * 3000)).max() == -1


def _edges_within_oracle(ids, src, dst, ends=None):
    where = {int(x): i for i, x in enumerate(ids.tolist())}
    ps, pd, cut = [], [], []
    degree = [0] * len(where)
    out_ends = []
    ends = [len(src)] if ends is None else list(ends)
    for e, (u, v) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        a, b = where.get(u, -1), where.get(v, -1)
        if a >= 0 and b >= 0:
            ps.append(a)
            pd.append(b)
            degree[a] += 1
            degree[b] += 1
        elif a >= 0 or b >= 0:
            cut.append(max(a, b))
        out_ends += [len(ps)] * sum(1 for x in ends if x == e + 1)
    out_ends = [len(ps)] * sum(1 for x in ends if x == 0) + out_ends
    return ps, pd, cut, degree, out_ends


def _random_edges(rng, ids, span, m):
    # Ends drawn from the ids and from outside them (below, inside the span, above).
    pool = np.concatenate([ids, rng.integers(-2 * span, 2 * span, 50)])
    return rng.choice(pool, m), rng.choice(pool, m)


@pytest.mark.parametrize("seed", range(8))
def test_edges_within_equals_the_oracle(seed):
    rng = np.random.default_rng(seed)
    span = int(rng.choice([5, 300, 10**9]))
    ids = np.unique(rng.integers(-span, span, int(rng.integers(0, 200))))
    m = int(rng.integers(0, 500))
    src, dst = _random_edges(rng, ids, span, m)
    ends = np.sort(rng.integers(0, m + 1, int(rng.integers(0, 5))))
    ends = np.concatenate([ends, [m]]).astype(np.int64)
    for blocks in (None, ends):
        got = edges_within(ids, src, dst, blocks)
        want = _edges_within_oracle(ids, src, dst, blocks)
        assert [x.tolist() for x in got] == [list(w) for w in want]
        assert all(x.dtype == np.int64 for x in got)


@pytest.mark.parametrize("seed", range(8))
def test_edges_carried_equal_edges_within_of_the_merged_blocks(seed):
    """Edges on the positions of an earlier id list, carried to a later one (some ids gone,
    new ones above), with new edges after each block: the same as looking every edge up
    in the later ids, blocks interleaved."""
    rng = np.random.default_rng(seed)
    span = int(rng.choice([50, 10**6]))
    before = np.unique(rng.integers(0, span, int(rng.integers(0, 120))))
    gone = before[rng.random(before.size) < rng.choice([0.0, 0.2, 1.0])]
    added = np.unique(rng.integers(span, 2 * span, int(rng.integers(0, 30))))
    after = np.concatenate([np.setdiff1d(before, gone), added])
    n_blocks = int(rng.integers(1, 5))
    old_parts = [
        _random_edges(rng, before, span, int(rng.integers(0, 80))) for _ in range(n_blocks)
    ]
    new_parts = [_random_edges(rng, after, span, int(rng.integers(0, 20))) for _ in range(n_blocks)]

    def ends_of(parts):
        return np.cumsum([p[0].size for p in parts]).astype(np.int64)

    def joined(parts, column):
        return np.concatenate([p[column] for p in parts] + [np.zeros(0, np.int64)])

    old = edges_within(before, joined(old_parts, 0), joined(old_parts, 1), ends_of(old_parts))
    new_position = np.full(before.size, -1, np.int64)
    kept = ~np.isin(before, gone)
    new_position[kept] = np.arange(int(kept.sum()))
    got = edges_carried(
        old, new_position, after, joined(new_parts, 0), joined(new_parts, 1), ends_of(new_parts)
    )
    # What edges_within gives for the surviving old edges followed by the new, per block.
    merged = []
    for (os_, od), (ns, nd) in zip(old_parts, new_parts, strict=True):
        live = np.isin(os_, before) & np.isin(od, before)  # what ``old`` kept
        merged.append((np.concatenate([os_[live], ns]), np.concatenate([od[live], nd])))
    want = edges_within(after, joined(merged, 0), joined(merged, 1), ends_of(merged))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_edges_within_edge_cases():
    none = np.zeros(0, np.int64)
    got = edges_within(none, np.asarray([1]), np.asarray([2]))
    assert [x.tolist() for x in got] == [[], [], [], [], [0]]
    got = edges_within(np.asarray([7]), none, none)
    assert [x.tolist() for x in got] == [[], [], [], [0], [0]]
    # A self-loop counts twice; duplicates are kept; an edge to an absent id is cut; an
    # edge between two absent ids is gone.
    ids = np.asarray([3, 8])
    got = edges_within(ids, np.asarray([3, 3, 3, 8, 5]), np.asarray([3, 8, 8, 9, 6]))
    assert [x.tolist() for x in got] == [[0, 0, 0], [0, 1, 1], [1], [4, 2], [3]]
    with pytest.raises(ValueError):
        edges_within(ids, np.asarray([3, 3]), np.asarray([3, 8]), np.asarray([1, 1]))
    with pytest.raises(ValueError):
        edges_carried(got, np.asarray([0, 1]), ids, none, none, np.asarray([0, 0]))
    with pytest.raises(ValueError):
        edges_within(ids, np.asarray([3]), np.asarray([3, 8]))
