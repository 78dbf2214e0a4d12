"""core.partition: bounded LSH segments, full and incremental."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphstrata.core.lsh import project_codes, sample_hyperplanes
from graphstrata.core.partition import (
    RepartitionResult,
    _assign_new,
    _sort_codes,
    partition,
    repartition,
)

# --------------------------------------------------------------------------- oracles


def feasible(m: int, s_min: int, s_max: int) -> bool:
    """Brute force: can m items be cut into parts of sizes in [s_min, s_max]?"""
    return m == 0 or any(p * s_min <= m <= p * s_max for p in range(1, m + 1))


def check_partition(seg: np.ndarray, m: int, s_min: int, s_max: int) -> None:
    """Membership and the documented bounds (or the documented relaxation)."""
    assert seg.shape == (m,) and seg.dtype == np.int64
    if m == 0:
        return
    ids = np.unique(seg)
    np.testing.assert_array_equal(ids, np.arange(ids.shape[0]))  # ids 0..k-1, each used
    sizes = np.bincount(seg)
    assert sizes.max() <= s_max
    if feasible(m, s_min, s_max):
        assert sizes.min() >= s_min, sizes
    else:  # relaxation: ceil(m / s_max) parts, sizes differing by at most one
        p = -(-m // s_max)
        assert sizes.shape[0] == p
        assert sizes.min() >= m // p and sizes.max() <= -(-m // p)


def hamming(a: int, b: int) -> int:
    return (int(a) ^ int(b)).bit_count()


def clustered_codes(m: int, n_bits: int, seed: int, n_clusters: int = 40) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((n_clusters, 32)).astype(np.float32)
    X = centers[rng.integers(0, n_clusters, m)] + 0.4 * rng.standard_normal((m, 32)).astype(
        np.float32
    )
    return project_codes(X, sample_hyperplanes(32, n_bits, seed))


codes_strategy = st.integers(1, 12).flatmap(
    lambda bits: st.lists(st.integers(0, (1 << bits) - 1), min_size=0, max_size=120)
)
bounds_strategy = st.tuples(st.integers(1, 9), st.integers(0, 8)).map(lambda t: (t[0], t[0] + t[1]))


# --------------------------------------------------------------------------- partition


def test_partition_empty_and_tiny() -> None:
    assert partition(np.zeros(0, np.uint64), 8, 12).shape == (0,)
    np.testing.assert_array_equal(partition(np.array([5], np.uint64), 8, 12), [0])
    # m < s_min: one segment (relaxed)
    np.testing.assert_array_equal(partition(np.arange(5, dtype=np.uint64), 8, 12), [0] * 5)


@pytest.mark.parametrize("m", [13, 14, 15])
def test_partition_infeasible_totals_are_balanced(m: int) -> None:
    # [8, 12] cannot cut 13..15 items: two parts as equal as possible, none above 12
    seg = partition(np.zeros(m, np.uint64), 8, 12)
    check_partition(seg, m, 8, 12)
    assert sorted(np.bincount(seg).tolist()) == [m // 2, m - m // 2]


def test_partition_groups_in_bounds_are_kept_exactly() -> None:
    rng = np.random.default_rng(0)
    sizes = rng.integers(8, 13, 30)
    codes = np.repeat(rng.permutation(2**16)[:30].astype(np.uint64), sizes)
    codes = codes[rng.permutation(codes.shape[0])]
    seg = partition(codes, 8, 12)
    # segment membership == equal-code groups
    pairs = set(zip(seg.tolist(), codes.tolist(), strict=True))
    assert len(pairs) == 30 == len(set(seg.tolist()))


def test_partition_large_group_splits_balanced_along_tiebreak() -> None:
    rng = np.random.default_rng(1)
    m = 30
    codes = np.full(m, 9, np.uint64)
    tb = rng.standard_normal(m)
    seg = partition(codes, 8, 12, tiebreak=tb)
    assert sorted(np.bincount(seg).tolist()) == [10, 10, 10]
    # each part is a contiguous range of the tiebreak order
    order = np.argsort(tb, kind="stable")
    runs = seg[order]
    assert (np.diff(runs) != 0).sum() == 2


def test_partition_small_group_joins_hamming_nearest_not_integer_neighbour() -> None:
    # The public EraRAG code merges a small bucket with its integer-order neighbour (0b0111
    # next to 0b1000, 4 bits apart); it must go to 0b1100 (1 bit apart).
    codes = np.array([0b0111] * 10 + [0b1100] * 9 + [0b1000] * 2, np.uint64)
    seg = partition(codes, 8, 12)
    check_partition(seg, codes.shape[0], 8, 12)
    assert seg[-1] == seg[10] != seg[0]


def test_partition_merge_prefers_room_over_overflow() -> None:
    # nearest group (1 bit) is full; the small group goes to the nearest one with room
    codes = np.array([0b0000] * 12 + [0b0011] * 9 + [0b0001] * 3, np.uint64)
    seg = partition(codes, 8, 12)
    check_partition(seg, codes.shape[0], 8, 12)
    assert len(set(seg[:12].tolist())) == 1  # the full group is untouched
    assert seg[-1] == seg[12]


def test_partition_group_of_13_in_large_corpus_spills_without_undersized_segment() -> None:
    codes = clustered_codes(3000, 16, seed=3)
    big = np.uint64(0xBEEF)
    codes = np.concatenate([codes[codes != big], np.full(13, big, np.uint64)])
    seg = partition(codes, 8, 12)
    check_partition(seg, codes.shape[0], 8, 12)
    held = np.bincount(seg[codes == big])
    held = np.sort(held[held > 0])
    assert held.tolist() == [1, 12]  # one full part, one item spilled to a neighbour
    spill = seg[codes == big][np.bincount(seg[codes == big])[seg[codes == big]] == 1][0]
    others = codes[(seg == spill) & (codes != big)]
    nearest = min(hamming(c, big) for c in np.unique(codes[codes != big]))
    assert min(hamming(c, big) for c in others) <= nearest + 2  # a near segment


def test_partition_is_deterministic_and_dtype_flexible() -> None:
    codes = clustered_codes(2000, 12, seed=5)
    a = partition(codes, 8, 12)
    b = partition(codes.copy(), 8, 12)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(partition(codes.astype(np.int64), 8, 12), a)


@pytest.mark.parametrize("n_bits", [1, 8, 16, 20, 24, 40, 64])
def test_partition_bounds_on_clustered_codes(n_bits: int) -> None:
    codes = clustered_codes(1500, n_bits, seed=n_bits)
    seg = partition(codes, 8, 12)
    check_partition(seg, codes.shape[0], 8, 12)


def test_partition_realistic_codes_rarely_cut_small_groups() -> None:
    # Fallback regions may cut an equal-code group of <= s_max items (bounds first); on
    # clustered data that must stay rare.
    codes = clustered_codes(5000, 16, seed=11)
    seg = partition(codes, 8, 12)
    check_partition(seg, codes.shape[0], 8, 12)
    u, inv, cnt = np.unique(codes, return_inverse=True, return_counts=True)
    n_seg_per_group = np.array([len(set(seg[inv == k].tolist())) for k in range(u.shape[0])])
    small = cnt <= 12
    assert (n_seg_per_group[small] > 1).mean() < 0.02


def test_partition_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        partition(np.zeros(3, np.uint64), 0, 5)
    with pytest.raises(ValueError):
        partition(np.zeros(3, np.uint64), 6, 5)
    with pytest.raises(ValueError):
        partition(np.zeros((3, 2), np.uint64), 1, 5)
    with pytest.raises(ValueError):
        partition(np.array([-1, 2]), 1, 5)
    with pytest.raises(ValueError):
        partition(np.zeros(3, np.uint64), 1, 5, tiebreak=np.zeros(2))
    with pytest.raises(ValueError):
        partition(np.zeros(3, np.uint64), 1, 5, tiebreak=np.array([0.0, np.nan, 1.0]))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(codes_strategy, bounds_strategy, st.booleans())
def test_partition_property(codes: list[int], bounds: tuple[int, int], use_tb: bool) -> None:
    s_min, s_max = bounds
    c = np.asarray(codes, dtype=np.uint64)
    tb = np.sin(np.arange(c.shape[0], dtype=np.float64)) if use_tb else None
    seg = partition(c, s_min, s_max, tiebreak=tb)
    check_partition(seg, c.shape[0], s_min, s_max)
    np.testing.assert_array_equal(partition(c, s_min, s_max, tiebreak=tb), seg)
    # every group of equal codes whose size is already in bounds, when all groups are,
    # stays exactly one segment
    _, inv, cnt = np.unique(c, return_inverse=True, return_counts=True)
    if c.size and cnt.min() >= s_min and cnt.max() <= s_max:
        assert len(set(zip(seg.tolist(), inv.tolist(), strict=True))) == cnt.shape[0]
    # a group larger than s_max is cut into ceil(n / s_max) pieces at most + one spill
    for k in np.flatnonzero(cnt > s_max):
        assert len(set(seg[inv == k].tolist())) <= -(-cnt[k] // s_max) + 1


# --------------------------------------------------------------------------- repartition


def check_repartition(
    res: RepartitionResult,
    old: np.ndarray,
    s_min: int,
    s_max: int,
    touched: np.ndarray | None = None,
) -> None:
    seg, changed, removed = res
    m = old.shape[0]
    assert isinstance(res, RepartitionResult)
    assert seg.shape == (m,) and seg.dtype == np.int64 and (seg >= 0).all()
    assert changed.dtype == np.int64 and removed.dtype == np.int64
    old_ids = set(old[old >= 0].tolist())
    out_ids = set(seg.tolist())
    base = max([*old_ids, *(touched.tolist() if touched is not None else []), -1]) + 1
    assert all(i in old_ids or i >= base for i in out_ids)
    assert set(changed.tolist()) <= out_ids
    assert set(removed.tolist()).isdisjoint(out_ids)
    assert (old_ids - out_ids) <= set(removed.tolist())
    sizes = np.bincount(seg)
    for sid in out_ids:
        members = np.flatnonzero(seg == sid)
        if sid in set(changed.tolist()):
            assert sizes[sid] <= s_max
            if feasible(m, s_min, s_max):
                assert sizes[sid] >= s_min
        else:  # unchanged: exactly its old membership
            assert sid in old_ids
            np.testing.assert_array_equal(members, np.flatnonzero(old == sid))
    for sid in out_ids - old_ids:
        assert sid in set(changed.tolist())


def test_repartition_all_new_equals_partition() -> None:
    codes = clustered_codes(800, 14, seed=2)
    tb = np.cos(np.arange(800.0))
    res = repartition(codes, np.full(800, -1), 8, 12, tiebreak=tb)
    np.testing.assert_array_equal(res.segment, partition(codes, 8, 12, tiebreak=tb))
    np.testing.assert_array_equal(res.changed, np.unique(res.segment))
    assert res.removed.size == 0


def test_repartition_no_change_is_identity() -> None:
    codes = clustered_codes(600, 14, seed=4)
    seg = partition(codes, 8, 12) * 3 + 5  # arbitrary non-contiguous ids
    res = repartition(codes, seg, 8, 12)
    np.testing.assert_array_equal(res.segment, seg)
    assert res.changed.size == 0 and res.removed.size == 0
    # touching in-bound segments re-examines them without changing them
    res = repartition(codes, seg, 8, 12, touched=np.unique(seg)[:10])
    np.testing.assert_array_equal(res.segment, seg)
    assert res.changed.size == 0 and res.removed.size == 0


def test_repartition_new_item_joins_segment_with_equal_code() -> None:
    codes = np.array([1] * 9 + [14] * 9 + [1], np.uint64)
    old = np.array([0] * 9 + [1] * 9 + [-1])
    res = repartition(codes, old, 8, 12)
    assert res.segment[-1] == 0
    np.testing.assert_array_equal(res.changed, [0])
    np.testing.assert_array_equal(res.segment[:18], old[:18])


def test_repartition_new_item_joins_hamming_nearest_segment() -> None:
    codes = np.array([0b0111] * 9 + [0b1100] * 9 + [0b1000], np.uint64)
    old = np.array([4] * 9 + [7] * 9 + [-1])
    res = repartition(codes, old, 8, 12)
    assert res.segment[-1] == 7  # 1 bit from 0b1100, 4 bits from its integer neighbour
    check_repartition(res, old, 8, 12)


def test_repartition_overflow_splits_and_keeps_the_id() -> None:
    codes = np.array([3] * 12 + [3] * 6 + [200] * 10, np.uint64)
    old = np.array([2] * 12 + [-1] * 6 + [9] * 10)
    res = repartition(codes, old, 8, 12)
    check_repartition(res, old, 8, 12)
    assert 2 in res.segment.tolist() and 2 in res.changed.tolist()
    assert (res.segment[-10:] == 9).all() and 9 not in res.changed.tolist()
    assert res.segment.max() >= 10  # the extra part got a fresh id above the old max


def test_repartition_delete_merges_undersized_segment() -> None:
    codes = np.array([0] * 9 + [1] * 5 + [7] * 9 + [255] * 10, np.uint64)
    old = np.array([0] * 9 + [1] * 5 + [2] * 9 + [3] * 10)
    # segment 1 lost members (it had 9): it is undersized now
    res = repartition(codes, old, 8, 12, touched=np.array([1, 42]))
    check_repartition(res, old, 8, 12, np.array([1, 42]))
    assert 42 in res.removed.tolist()
    assert (res.segment[-10:] == 3).all() and 3 not in res.changed.tolist()
    sizes = np.bincount(res.segment)
    assert sizes[sizes > 0].min() >= 8


@pytest.mark.parametrize("n_bits", [8, 16, 64])
def test_repartition_inserts_and_deletes_over_rounds(n_bits: int) -> None:
    rng = np.random.default_rng(n_bits)
    pool = clustered_codes(3000, n_bits, seed=n_bits)
    alive = np.zeros(3000, bool)
    alive[:1500] = True
    seg = np.full(3000, -1)
    seg[alive] = partition(pool[alive], 8, 12)
    for rnd in range(6):
        touched = np.zeros(0, np.int64)
        if rnd % 2:  # delete some items
            gone = rng.choice(np.flatnonzero(alive), 60, replace=False)
            touched = np.unique(seg[gone])
            alive[gone] = False
            seg[gone] = -1
        new = rng.choice(np.flatnonzero(~alive), 150, replace=False)
        alive[new] = True
        idx = np.flatnonzero(alive)
        old = seg[idx]
        res = repartition(pool[idx], old, 8, 12, touched=touched)
        check_repartition(res, old, 8, 12, touched)
        # local, not a rebuild: each new item or touched segment changes O(1) segments
        assert res.changed.size <= 2 * (new.size + touched.size)
        seg[idx] = res.segment


def test_assign_new_is_hamming_nearest_on_wide_codes() -> None:
    # the multi-index path (64-bit codes) finds an exact nearest segment
    rng = np.random.default_rng(7)
    old_codes = rng.integers(0, 2**63, 400, dtype=np.uint64) * np.uint64(2)
    new_codes = old_codes[rng.integers(0, 400, 25)] ^ (
        np.uint64(1) << rng.integers(0, 64, 25).astype(np.uint64)
    )
    codes = np.concatenate([old_codes, new_codes])
    old = np.concatenate([np.arange(400) // 10, np.full(25, -1)])
    cs = _sort_codes(codes, None)
    assert cs.widths.shape[0] > 1  # multi-index mode
    root = old[cs.order].astype(np.int32)
    new_k = np.unique(cs.code_k[400:])
    size = np.bincount(old[:400]).astype(np.int32)
    target = _assign_new(new_k, root, size, cs.code_index)
    for k, t in zip(new_k, target, strict=True):
        c = cs.ucodes[k]
        best = min(hamming(c, x) for x in old_codes)
        assert min(hamming(c, x) for x in old_codes[old[:400] == t]) == best


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    codes_strategy,
    bounds_strategy,
    st.integers(0, 2**31),
    st.floats(0.0, 1.0),
    st.floats(0.0, 0.5),
)
def test_repartition_property(
    codes: list[int], bounds: tuple[int, int], seed: int, frac_new: float, frac_del: float
) -> None:
    s_min, s_max = bounds
    rng = np.random.default_rng(seed)
    c = np.asarray(codes, dtype=np.uint64)
    m = c.shape[0]
    is_new = rng.random(m) < frac_new
    old = np.full(m, -1, np.int64)
    if (~is_new).any():
        old[~is_new] = partition(c[~is_new], s_min, s_max) * 2 + 1
    # delete a few existing items: their segments are touched
    dele = (~is_new) & (rng.random(m) < frac_del)
    touched = np.unique(old[dele])
    keep = ~dele
    c, old = c[keep], old[keep]
    res = repartition(c, old, s_min, s_max, touched=touched)
    check_repartition(res, old, s_min, s_max, touched)
    if (old < 0).all():
        np.testing.assert_array_equal(
            res.segment, partition(c, s_min, s_max) + (touched.max() + 1 if touched.size else 0)
        )


def test_repartition_rejects_bad_input() -> None:
    c = np.zeros(4, np.uint64)
    with pytest.raises(ValueError):
        repartition(c, np.zeros(3, np.int64), 1, 5)
    with pytest.raises(ValueError):
        repartition(c, np.array([0, 0, -2, 0]), 1, 5)
    with pytest.raises(ValueError):
        repartition(c, np.zeros(4), 1, 5)
    with pytest.raises(ValueError):
        repartition(c, np.zeros(4, np.int64), 1, 5, touched=np.array([-1]))
    empty = repartition(np.zeros(0, np.uint64), np.zeros(0, np.int64), 1, 5, touched=[3])
    assert empty.segment.size == 0 and empty.removed.tolist() == [3]


def test_repartition_reports_every_vanished_and_changed_segment():
    rng = np.random.default_rng(11)
    for _ in range(200):
        m = int(rng.integers(2, 40))
        codes = rng.integers(0, 64, m).astype(np.uint64)
        before = rng.integers(-1, 6, m).astype(np.int64)
        res = repartition(codes, before, 2, 4)
        alive = set(res.segment.tolist())
        gone = {int(s) for s in before if s >= 0} - alive
        assert gone <= set(res.removed.tolist())
        moved = before != res.segment
        must_change = set(res.segment[moved].tolist()) | {
            int(s) for s in before[moved] if s >= 0 and int(s) in alive
        }
        assert must_change <= set(res.changed.tolist())
