"""``core.ids`` lookups against ``np.searchsorted`` and ``np.isin`` (the oracles)."""

import numpy as np
import pytest

from graphstrata.core.ids import contains, edges_within, find_positions, positions_in


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


def _edges_within_oracle(ids, src, dst):
    where = {int(x): i for i, x in enumerate(ids.tolist())}
    ps, pd, cut = [], [], []
    degree = [0] * len(where)
    for u, v in zip(src.tolist(), dst.tolist(), strict=True):
        a, b = where.get(u, -1), where.get(v, -1)
        if a >= 0 and b >= 0:
            ps.append(a)
            pd.append(b)
            degree[a] += 1
            degree[b] += 1
        elif a >= 0 or b >= 0:
            cut.append(max(a, b))
    return ps, pd, cut, degree


@pytest.mark.parametrize("seed", range(8))
def test_edges_within_equals_the_oracle(seed):
    rng = np.random.default_rng(seed)
    span = int(rng.choice([5, 300, 10**9]))
    ids = np.unique(rng.integers(-span, span, int(rng.integers(0, 200))))
    m = int(rng.integers(0, 500))
    # Ends drawn from the ids and from outside them (below, inside the span, above).
    pool = np.concatenate([ids, rng.integers(-2 * span, 2 * span, 50)])
    src, dst = rng.choice(pool, m), rng.choice(pool, m)
    got = edges_within(ids, src, dst)
    want = _edges_within_oracle(ids, src, dst)
    assert [x.tolist() for x in got] == [list(w) for w in want]
    assert all(x.dtype == np.int64 for x in got)


def test_edges_within_edge_cases():
    none = np.zeros(0, np.int64)
    got = edges_within(none, np.asarray([1]), np.asarray([2]))
    assert [x.tolist() for x in got] == [[], [], [], []]
    got = edges_within(np.asarray([7]), none, none)
    assert [x.tolist() for x in got] == [[], [], [], [0]]
    # A self-loop counts twice; duplicates are kept; an edge to an absent id is cut; an
    # edge between two absent ids is gone.
    ids = np.asarray([3, 8])
    got = edges_within(ids, np.asarray([3, 3, 3, 8, 5]), np.asarray([3, 8, 8, 9, 6]))
    assert [x.tolist() for x in got] == [[0, 0, 0], [0, 1, 1], [1], [4, 2]]
    with pytest.raises(ValueError):
        edges_within(ids, np.asarray([3]), np.asarray([3, 8]))


@pytest.mark.parametrize("shape", [(1, 40), (1, 2), (3, 30), (40, 1), (0, 5), (2, 0)])
@pytest.mark.parametrize("span", [50, 10**12])
def test_lookups_of_a_matrix_of_ids_match_the_oracles(shape, span):
    """Values as a matrix (a search's keys, one row per query): each lookup takes the
    order of the flattened values. A one-row matrix of unsorted ids passed as ascending
    (its rows compared, not its values) and was merged against the ids, so dead ids were
    not found among a 1M-chunk index's results."""
    rng = np.random.default_rng(shape[0] * 100 + shape[1])
    ids = np.unique(rng.integers(0, span, 20)).astype(np.int64)  # few ids: the merge path
    values = np.where(
        rng.random(shape) < 0.5, rng.choice(ids, shape), rng.integers(-5, span + 5, shape)
    ).astype(np.int64)
    np.testing.assert_array_equal(contains(ids, values), np.isin(values, ids))
    pos = find_positions(ids, values)
    assert pos.shape == values.shape
    want = np.where(np.isin(values, ids), np.searchsorted(ids, values), -1)
    np.testing.assert_array_equal(pos, want)
