"""``core.bm25`` against a dense oracle: MaxScore top-k candidates and galloping lookups on
random postings (several lists per term, tombstones, repeated slots, ties) and edge cases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from graphstrata.core import bm25


def norm_of(length, avg=None):
    length = np.asarray(length, np.int64)
    return bm25.Norm.of(length, float(avg or max(length.mean(), 1.0)), 1.5, 0.75)


def dense_scores(lists, weights, norm):
    """Oracle: every slot's score, term by term in the given order (plain Python): each
    term's part in float64, added to a float32 sum (the kernels' arithmetic)."""
    per_slot = norm.at(np.arange(norm.length.size))
    out = np.zeros(norm.length.size, np.float32)
    for term_lists, w in zip(lists, weights, strict=True):
        for slots, tf in term_lists:
            for s, f in zip(slots.tolist(), tf.tolist(), strict=True):
                out[s] = np.float32(float(out[s]) + w * f / (f + per_slot[s]))
    return out


def random_collection(rng, n_slots, n_terms, n_lists, zipf=True):
    """Per term, ``n_lists`` disjoint ascending slot ranges' postings (like segments)."""
    cuts = np.linspace(0, n_slots, n_lists + 1).astype(int)
    lists = []
    for t in range(n_terms):
        share = min(0.9, 1.0 / (t + 1) ** 0.8) if zipf else rng.uniform(0.01, 0.5)
        term_lists = []
        for a, b in itertools.pairwise(cuts):
            slots = np.flatnonzero(rng.random(b - a) < share).astype(np.int64) + a
            term_lists.append((slots, rng.integers(1, 5, slots.size).astype(np.int32)))
        lists.append(term_lists)
    return lists, norm_of(rng.integers(1, 60, n_slots))


def segments_of(lists):
    """The per-term lists as ``bm25.Postings`` segments: segment i holds each term's i-th
    list (none for a term with fewer), and the term ids are the terms' positions."""
    out = []
    for i in range(max((len(t) for t in lists), default=0)):
        parts = [
            t[i] if i < len(t) else (np.zeros(0, np.int64), np.zeros(0, np.int32)) for t in lists
        ]
        ptr = np.concatenate([[0], np.cumsum([p[0].size for p in parts])]).astype(np.int64)
        slots = np.concatenate([p[0] for p in parts]).astype(np.int64)
        tf = np.concatenate([p[1] for p in parts]).astype(np.int32)
        out.append(bm25.Postings(ptr, slots, tf))
    return out


def top_candidates(lists, weights, bounds, norm, alive, k):
    """``bm25.top_candidates`` of per-term lists (``segments_of``), terms in list order."""
    tids = np.arange(len(lists), dtype=np.int64)
    return bm25.top_candidates(
        segments_of(lists), tids, np.asarray(weights, np.float64), bounds, norm, alive, k
    )


def bounds_of(lists, weights, norm):
    out = []
    for term_lists, w in zip(lists, weights, strict=True):
        top = max((int(tf.max()) for _, tf in term_lists if tf.size), default=0)
        out.append(w * top / (top + norm.at(np.arange(norm.length.size)).min()) if top else 0.0)
    return np.asarray(out)


def check_candidates(lists, weights, norm, alive, k):
    slots, scores, incomplete = top_candidates(
        lists, weights, bounds_of(lists, weights, norm), norm, alive, k
    )
    want = dense_scores(lists, weights, norm)
    assert np.all(np.diff(slots) > 0) and np.all(alive[slots]) and np.all(scores > 0)
    np.testing.assert_array_equal(scores, want[slots])  # the same float32 bits
    live = np.flatnonzero(alive & (want > 0))
    if live.size:
        kth = np.sort(want[live])[::-1][min(k, live.size) - 1]
        must = live[want[live] >= kth]
        assert np.isin(must, slots).all()
    if not incomplete:  # every live slot with a positive score
        np.testing.assert_array_equal(slots, live)
    # the scratch is all zeros again
    assert not bm25.scratch(norm.length.size).acc.any()
    return slots


@pytest.mark.parametrize("reduce_min", [4096, 1])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [1, 5, 40])
def test_candidates_hold_the_exact_top_k(seed, k, reduce_min, monkeypatch):
    monkeypatch.setattr(bm25, "REDUCE_MIN", reduce_min)  # 1: cut to the contenders
    rng = np.random.default_rng(seed)
    lists, norm = random_collection(rng, 3000, int(rng.integers(1, 6)), int(rng.integers(1, 4)))
    lists = lists[::-1]  # rare terms first, as the caller orders them (heaviest first)
    weights = np.sort(rng.uniform(0.2, 6.0, len(lists)))[::-1]
    alive = rng.random(norm.length.size) > 0.1
    check_candidates(lists, weights, norm, alive, k)


def test_a_common_term_is_looked_up_not_scanned(monkeypatch):
    rng = np.random.default_rng(11)
    n = 100_000  # the common term's postings must outnumber bm25.PRUNE_MIN_LEFT
    rare = np.sort(rng.choice(n, 200, replace=False)).astype(np.int64)
    common = np.flatnonzero(rng.random(n) < 0.9).astype(np.int64)
    lists = [
        [(rare, rng.integers(1, 5, rare.size).astype(np.int32))],
        [(common[: common.size // 2], np.ones(common.size // 2, np.int32))],
        [(common[common.size // 2 :], np.ones(common.size - common.size // 2, np.int32))],
    ]
    lists = [lists[0], lists[1] + lists[2]]  # the common term over two segments
    weights = np.asarray([8.0, 0.1])
    norm = norm_of(rng.integers(1, 60, n))
    scanned = []
    real = bm25.accumulate_terms

    def counting(acc, touched, n_touched, term_ptr, slots, tf, tids, weights, j0, j1, *rest):
        scanned.extend(
            int(term_ptr[t + 1] - term_ptr[t]) for t in tids[j0:j1] if t + 1 < term_ptr.size
        )
        return real(acc, touched, n_touched, term_ptr, slots, tf, tids, weights, j0, j1, *rest)

    monkeypatch.setattr(bm25, "accumulate_terms", counting)
    check_candidates(lists, weights, norm, np.ones(n, bool), 10)
    assert sum(scanned) == rare.size  # the common term: lookups only


def test_many_slots_found_are_cut_to_those_that_can_reach_the_top_k():
    # Every term scanned (each list far below PRUNE_MIN_LEFT), 20k slots matched: only the
    # top k and the ties at the k-th come back, flagged as leaving slots out.
    rng = np.random.default_rng(5)
    n = 20_000
    lists = [[(np.arange(n, dtype=np.int64), rng.integers(1, 4, n).astype(np.int32))]]
    lists.append([(np.arange(0, n, 3, dtype=np.int64), np.ones(-(-n // 3), np.int32))])
    norm = norm_of(rng.integers(1, 60, n))
    k = 10
    assert n >= max(bm25.REDUCE_RATIO * k, bm25.REDUCE_MIN)
    slots, scores, incomplete = top_candidates(
        lists, np.asarray([2.0, 1.0]), bounds_of(lists, [2.0, 1.0], norm), norm,
        np.ones(n, bool), k,
    )  # fmt: skip
    assert incomplete and k <= slots.size < 100
    want = dense_scores(lists, [2.0, 1.0], norm)
    kth = np.sort(want)[::-1][k - 1]
    np.testing.assert_array_equal(slots, np.flatnonzero(want >= kth))
    np.testing.assert_array_equal(scores, want[slots])  # the same float32 bits


def test_few_postings_left_are_scanned_not_tested(monkeypatch):
    # Two terms of about the same size: testing would cost more than scanning the second.
    slots = np.arange(0, 1000, 2, dtype=np.int64)
    lists = [[(slots, np.ones(slots.size, np.int32))], [(slots + 1, np.ones(slots.size, np.int32))]]
    tested = []
    real = bm25._kth_live
    monkeypatch.setattr(bm25, "_kth_live", lambda *a: tested.append(1) or real(*a))
    got = check_candidates(
        lists, np.asarray([5.0, 0.1]), norm_of(np.ones(1000)), np.ones(1000, bool), 3
    )
    assert got.size == 1000 and not tested


@pytest.mark.parametrize("quiet_after", [0, 1, 3])
def test_one_segment_scans_the_terms_past_the_last_test_in_one_call(quiet_after, monkeypatch):
    """Once no pruning test can come (the postings left fall under ``PRUNE_MIN_LEFT``), a
    one-segment collection's remaining terms are scanned in one call; the scores are the
    oracle's bits either way."""
    rng = np.random.default_rng(quiet_after)
    lists, norm = random_collection(rng, 2000, 6, 1)
    weights = np.sort(rng.uniform(0.2, 6.0, 6))[::-1]
    sizes = [sum(s.size for s, _ in t) for t in lists]
    left = np.append(np.cumsum(sizes[::-1])[::-1], 0)
    # the threshold that leaves tests possible after exactly ``quiet_after`` - 1 terms
    monkeypatch.setattr(bm25, "PRUNE_MIN_LEFT", int(left[quiet_after]) + 1)
    calls = []
    real = bm25.accumulate_terms

    def spy(*args):
        calls.append((args[8], args[9]))
        return real(*args)

    monkeypatch.setattr(bm25, "accumulate_terms", spy)
    check_candidates(lists, weights, norm, np.ones(2000, bool), 10**6)  # k: never pruned
    first = max(quiet_after - 1, 0)
    assert calls == [(j, j + 1) for j in range(first)] + [(first, 6)]


def test_several_segments_and_terms_newer_than_a_segment():
    """Several segments are scanned term by term (each over all of them); a term past the
    end of a segment's ``term_ptr`` (added after it was written) has no postings there."""
    rng = np.random.default_rng(3)
    norm = norm_of(rng.integers(1, 40, 300))
    old = bm25.Postings(
        np.asarray([0, 3, 5], np.int64),
        np.asarray([1, 7, 9, 2, 7], np.int64),
        np.asarray([1, 2, 1, 3, 1], np.int32),
    )
    new = bm25.Postings(
        np.asarray([0, 1, 2, 4], np.int64),
        np.asarray([150, 160, 150, 299], np.int64),
        np.asarray([2, 1, 1, 4], np.int32),
    )
    lists = [
        [(np.asarray([1, 7, 9]), np.asarray([1, 2, 1])), (np.asarray([150]), np.asarray([2]))],
        [(np.asarray([2, 7]), np.asarray([3, 1])), (np.asarray([160]), np.asarray([1]))],
        [(np.asarray([150, 299]), np.asarray([1, 4]))],  # term 2: only the newer segment
    ]
    weights = np.asarray([3.0, 2.0, 1.0])
    want = dense_scores(lists, weights, norm)
    bounds = bounds_of(lists, weights, norm)
    for order in ([0, 1, 2], [2, 0, 1]):
        tids = np.asarray(order, np.int64)
        slots, scores, incomplete = bm25.top_candidates(
            [old, new], tids, weights[order], bounds[order], norm, np.ones(300, bool), 10
        )
        assert not incomplete and slots.tolist() == np.flatnonzero(want).tolist()
        if order == [0, 1, 2]:  # the oracle's order of additions: the same bits
            np.testing.assert_array_equal(scores, want[slots])
        else:
            np.testing.assert_allclose(scores, want[slots], rtol=1e-6)
    assert bm25._term_sizes([old, new], np.asarray([2, 0, 5], np.int64)).tolist() == [2, 4, 0]


def test_ties_at_the_kth_score_all_come_back():
    slots = np.arange(10, dtype=np.int64)
    lists = [[(slots, np.ones(10, np.int32))], [(slots[:2], np.ones(2, np.int32))]]
    got = check_candidates(
        lists, np.asarray([1.0, 0.5]), norm_of(np.ones(10)), np.ones(10, bool), 3
    )
    assert got.tolist() == list(range(10))  # 2 best, then 8 tied for the 3rd place


def test_edge_cases():
    norm = norm_of(np.ones(4))
    alive = np.ones(4, bool)
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int32))
    slots, scores, incomplete = top_candidates(
        [[empty]], np.asarray([1.0]), np.zeros(1), norm, alive, 3
    )
    assert slots.size == 0 and scores.size == 0 and not incomplete
    one = [[(np.asarray([2], np.int64), np.asarray([3], np.int32))]]
    assert check_candidates(one, np.asarray([2.0]), norm, alive, 1).tolist() == [2]
    dead = alive.copy()
    dead[2] = False
    assert check_candidates(one, np.asarray([2.0]), norm, dead, 1).tolist() == []


def test_add_lookups_equals_a_dictionary():
    rng = np.random.default_rng(5)
    for _ in range(30):
        slots = np.unique(rng.integers(0, 500, rng.integers(0, 200))).astype(np.int64)
        tf = rng.integers(1, 9, slots.size).astype(np.int32)
        cand = np.sort(rng.integers(0, 520, rng.integers(0, 80))).astype(np.int64)  # repeats
        norm = norm_of(rng.integers(1, 40, 520), avg=12.5)
        per = 1.5 * (1 - 0.75 + 0.75 * norm.length / 12.5)
        scores = np.full(cand.size, 0.25, np.float32)
        bm25.add_lookups(scores, cand, slots, tf, *norm, 1.7)
        table = dict(zip(slots.tolist(), tf.tolist(), strict=True))
        want = [
            np.float32(0.25 + 1.7 * table[c] / (table[c] + per[c])) if c in table else 0.25
            for c in cand
        ]
        np.testing.assert_allclose(scores, want, rtol=1e-7)


def test_add_term_lookups_equals_add_lookups_per_term():
    # One CSR segment, several terms (some past its end, one repeated): row j of the
    # matrix holds exactly what add_lookups gives term tids[j] alone.
    rng = np.random.default_rng(11)
    for _ in range(20):
        n_terms = int(rng.integers(1, 12))
        lists = [
            np.unique(rng.integers(0, 300, rng.integers(0, 60))).astype(np.int64)
            for _ in range(n_terms)
        ]
        term_ptr = np.zeros(n_terms + 1, np.int64)
        np.cumsum([x.size for x in lists], out=term_ptr[1:])
        post_slot = np.concatenate(lists) if term_ptr[-1] else np.zeros(0, np.int64)
        post_tf = rng.integers(1, 9, post_slot.size).astype(np.int32)
        tids = rng.integers(0, n_terms + 3, rng.integers(0, 8)).astype(np.int64)
        weights = rng.random(tids.size) + 0.1
        cand = np.sort(rng.integers(0, 320, rng.integers(0, 90))).astype(np.int64)
        norm = norm_of(rng.integers(1, 40, 320), avg=11.0)
        got = np.full((tids.size, cand.size), 0.5, np.float32)
        bm25.add_term_lookups(got, cand, term_ptr, post_slot, post_tf, tids, weights, *norm)
        for j, t in enumerate(tids.tolist()):
            want = np.full(cand.size, 0.5, np.float32)
            if t < n_terms:
                a, b = term_ptr[t], term_ptr[t + 1]
                bm25.add_lookups(want, cand, post_slot[a:b], post_tf[a:b], *norm, weights[j])
            assert got[j].tobytes() == want.tobytes()


def test_the_scratch_grows_and_stays_per_thread():
    small = bm25.scratch(10)
    assert bm25.scratch(5) is small
    big = bm25.scratch(small.acc.size + 1)
    assert big.acc.size > small.acc.size and bm25.scratch(3) is big


def test_lengths_are_uint16_at_least_one_and_saturate():
    got = bm25.lengths(np.asarray([0, 1, 300, 65535, 65536, 10**9], np.int64))
    assert got.dtype == np.uint16
    assert got.tolist() == [1, 1, 300, 65535, 65535, 65535]
    assert bm25.lengths(np.zeros(0, np.int64)).dtype == np.uint16


@pytest.mark.parametrize("seed", range(4))
def test_near_ties_survive_the_float32_pruning(seed, monkeypatch):
    # Many slots whose scores differ in the last float32 bits, a common term pruned: the
    # rounding slack must keep every slot the oracle puts at or above the k-th score.
    monkeypatch.setattr(bm25, "PRUNE_MIN_LEFT", 1)
    monkeypatch.setattr(bm25, "REDUCE_MIN", 1)
    rng = np.random.default_rng(seed)
    n = 5000
    rare = np.sort(rng.choice(n, 300, replace=False)).astype(np.int64)
    common = np.flatnonzero(rng.random(n) < 0.8).astype(np.int64)
    lists = [
        [(rare, np.ones(rare.size, np.int32))],
        [(rare, np.ones(rare.size, np.int32))],
        [(common, rng.integers(1, 3, common.size).astype(np.int32))],
    ]
    norm = norm_of(rng.integers(30, 32, n))  # three lengths: scores tie in many places
    weights = np.asarray([3.0, 3.0 * (1 + 2e-7), 0.01])
    check_candidates(lists, weights, norm, rng.random(n) > 0.05, int(rng.integers(1, 30)))


def test_the_slack_bounds_float32_sums_of_positive_parts():
    # What the pruning relies on: a float32 sum of m positive parts (as ``accumulate_terms`` adds
    # them) never exceeds the exact sum times ``_slack(m)``; without the slack it does.
    import math

    rng = np.random.default_rng(3)
    over = 0
    for _ in range(3000):
        m = int(rng.integers(1, 40))
        parts = rng.uniform(0.0, 10.0, m) * rng.choice([1e-3, 1.0, 1e3], m)
        total = np.float32(0.0)
        for p in parts.tolist():
            total = np.float32(float(total) + p)
        exact = math.fsum(parts.tolist())
        assert float(total) <= exact * bm25._slack(m)
        over += float(total) > exact
    assert over > 0


def test_idf_is_lucenes_for_scalars_and_arrays():
    # ln(1 + (n - df + 0.5) / (df + 0.5)): never negative, even for a term in every document.
    assert bm25.idf(1, 3) == pytest.approx(0.9808292530117262, rel=1e-15)
    assert bm25.idf(3, 3) == pytest.approx(math.log(1.0 + 0.5 / 3.5), rel=1e-15)
    assert bm25.idf(3, 3) > 0
    df = np.asarray([1.0, 2.0, 3.0])
    got = bm25.idf(df, 3.0, np.log)
    assert got.tolist() == pytest.approx([bm25.idf(float(d), 3.0) for d in df], rel=1e-15)
