"""core.fusion against plain-Python oracles: RRF, score fusion, shingles, distinct packing,
summaries that compete with their members."""

from __future__ import annotations

import math
import random
import re

import numpy as np
import pytest

from graphstrata.core.budget import pack
from graphstrata.core.fusion import (
    competing,
    coverage_order,
    coverage_rerank,
    feedback_vector,
    minmax,
    pack_distinct,
    query_dense_weight,
    rrf,
    score_fusion,
    shingles,
)
from tests.helpers.oracles import coverage_oracle, coverage_rerank_oracle, feedback_oracle


def rrf_oracle(rankings, weights, k):
    total: dict[int, float] = {}
    for ranking, w in zip(rankings, weights, strict=True):
        seen = set()
        for rank, i in enumerate(ranking, start=1):
            if i in seen:
                continue
            seen.add(i)
            total[i] = total.get(i, 0.0) + w / (k + rank)
    return sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))


def score_oracle(lists, weights):
    total: dict[int, float] = {}
    for (ids, scores), w in zip(lists, weights, strict=True):
        first: dict[int, float] = {}
        for i, s in zip(ids, scores, strict=True):
            first.setdefault(i, s)
        if not first:
            continue
        lo, hi = min(first.values()), max(first.values())
        for i, s in first.items():
            norm = 1.0 if hi <= lo else (s - lo) / (hi - lo)
            total[i] = total.get(i, 0.0) + w * norm
    return sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))


def check(got, want):
    ids, scores = got
    assert ids.dtype == np.int64
    assert ids.tolist() == [i for i, _ in want]
    np.testing.assert_allclose(scores, [s for _, s in want], rtol=1e-12)


def random_lists(rng, n_lists):
    lists = []
    for _ in range(n_lists):
        n = rng.choice([0, 1, 3, 10, 40])
        ids = [rng.randrange(30) for _ in range(n)]  # duplicates on purpose
        scores = [round(rng.uniform(-1, 5), 1) for _ in range(n)]  # ties on purpose
        lists.append((ids, scores))
    return lists


@pytest.mark.parametrize("seed", range(8))
def test_rrf_equals_the_oracle(seed):
    rng = random.Random(seed)
    lists = random_lists(rng, rng.choice([1, 2, 3]))
    weights = [rng.choice([0.0, 0.3, 1.0, 2.0]) for _ in lists]
    k = rng.choice([0, 1, 60])
    rankings = [np.asarray(ids, np.int64) for ids, _ in lists]
    check(rrf(rankings, weights, k), rrf_oracle([ids for ids, _ in lists], weights, k))
    check(rrf(rankings), rrf_oracle([ids for ids, _ in lists], [1.0] * len(lists), 60))


@pytest.mark.parametrize("seed", range(8))
def test_score_fusion_equals_the_oracle(seed):
    rng = random.Random(seed)
    lists = random_lists(rng, rng.choice([1, 2, 3]))
    weights = [rng.choice([0.0, 0.5, 1.0]) for _ in lists]
    arrays = [(np.asarray(i, np.int64), np.asarray(s, np.float64)) for i, s in lists]
    check(score_fusion(arrays, weights), score_oracle(lists, weights))


def test_fusion_edge_cases():
    empty = np.zeros(0, np.int64)
    for got in (rrf([]), rrf([empty, empty]), score_fusion([]), score_fusion([(empty, empty)])):
        assert got[0].size == 0 and got[1].size == 0
    # one side empty: the other side's order survives
    ids, _ = rrf([np.array([5, 3, 9]), empty])
    assert ids.tolist() == [5, 3, 9]
    ids, scores = score_fusion([(np.array([5, 3, 9]), np.array([0.9, 0.5, 0.1])), (empty, empty)])
    assert ids.tolist() == [5, 3, 9] and scores.tolist() == [1.0, 0.5, 0.0]
    # ties: rank 1 in one list vs rank 1 in the other -> ascending id
    ids, scores = rrf([np.array([7]), np.array([2])])
    assert ids.tolist() == [2, 7] and scores[0] == scores[1] == 1 / 61
    # a repeated id counts once, at its first position; ranks are positions in the list
    ids, scores = rrf([np.array([4, 4, 1])], k=0)
    assert ids.tolist() == [4, 1] and scores.tolist() == [1.0, 1 / 3]
    # a single score normalizes to 1
    assert minmax(np.array([3.0])).tolist() == [1.0]
    assert minmax(np.array([2.0, 2.0])).tolist() == [1.0, 1.0]
    with pytest.raises(ValueError):
        rrf([np.array([1])], weights=[1.0, 2.0])
    with pytest.raises(ValueError):
        rrf([np.array([1])], weights=[-1.0])
    with pytest.raises(ValueError):
        rrf([np.array([1])], k=-1)
    with pytest.raises(ValueError):
        score_fusion([(np.array([1, 2]), np.array([1.0]))])


def ngrams(text, n):
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


@pytest.mark.parametrize("n", [1, 3, 5])
def test_shingles_count_distinct_word_ngrams(n):
    rng = random.Random(n)
    vocab = ["alpha", "beta", "gamma", "delta", "Alpha", "épsilon", "x", "42"]
    for _ in range(30):
        text = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 25)))
        got = shingles(text, n)
        assert isinstance(got, frozenset) and all(isinstance(h, int) for h in got)
        assert len(got) == len(ngrams(text, n))
    full = "The Meridian lens was polished in Brekkvik by Tomas Veld in 1911."
    part = "lens was polished in Brekkvik by Tomas"
    assert shingles(part, n) <= shingles(full, n)
    assert shingles("Lens WAS polished", 3) == shingles("lens was polished", 3)
    assert shingles("two words", 5) == frozenset()
    with pytest.raises(ValueError):
        shingles("x", 0)


def pack_oracle(scores, tokens, sets, budget, max_overlap, before=()):
    order = sorted(
        range(len(scores)),
        key=lambda i: (math.inf if math.isnan(scores[i]) else -scores[i], i),
    )
    packed, dups, seen, used = [], [], {h for b in before for h in b}, 0
    for i in order:
        if used + tokens[i] > budget:
            continue
        s = set(sets[i])
        if max_overlap <= 1 and s and len(s & seen) >= max_overlap * len(s):
            dups.append(i)
            continue
        seen |= s
        packed.append(i)
        used += tokens[i]
    return packed, dups


@pytest.mark.parametrize("seed", range(10))
def test_pack_distinct_equals_the_oracle(seed):
    rng = random.Random(seed)
    n = rng.choice([0, 1, 5, 30])
    scores = [rng.choice([float("nan"), 0.5, 1.0, rng.random()]) for _ in range(n)]
    tokens = [rng.choice([0, 5, 50, 200]) for _ in range(n)]
    sets = [frozenset(rng.randrange(40) for _ in range(rng.randint(0, 12))) for _ in range(n)]
    budget = rng.choice([0, 100, 400, 2000])
    before = [frozenset(range(rng.randrange(10)))] if seed % 2 else []
    for max_overlap in (0.3, 0.8, 1.0, 2.0):
        got, dups = pack_distinct(
            np.array(scores), np.array(tokens), sets, budget, max_overlap, before
        )
        want, want_dups = pack_oracle(scores, tokens, sets, budget, max_overlap, before)
        assert got.tolist() == want and dups.tolist() == want_dups
        if max_overlap > 1:
            expected = pack(np.array(scores, np.float64), np.array(tokens), budget)
            assert got.tolist() == expected.tolist() and dups.size == 0


def test_pack_distinct_drops_a_repeated_or_contained_text():
    chunk = "Meridian Optics was founded in Brekkvik in 1911 by the lens grinder Tomas Veld."
    summary = "Meridian Optics was founded in Brekkvik in 1911"  # a prefix: all inside
    other = "The ferry crosses the fjord every morning at seven."
    texts = [chunk, summary, chunk, other]
    sets = [shingles(t, 5) for t in texts]
    got, dups = pack_distinct(
        np.array([0.9, 0.8, 0.7, 0.6]), np.array([20, 10, 20, 12]), sets, 1000, 0.8
    )
    assert got.tolist() == [0, 3] and dups.tolist() == [1, 2]
    # a duplicate costs no budget: the next candidate still fits
    again = [sets[0], sets[0], sets[3]]
    got, _ = pack_distinct(np.array([0.9, 0.8, 0.7]), np.array([20, 20, 15]), again, 35, 0.8)
    assert got.tolist() == [0, 2]
    with pytest.raises(ValueError):
        pack_distinct(np.array([1.0]), np.array([1]), [], 10, 0.8)
    with pytest.raises(ValueError):
        pack_distinct(np.array([1.0]), np.array([1]), [sets[0]], 10, 0.0)


@pytest.mark.parametrize("seed", range(8))
def test_coverage_order_equals_the_oracle(seed):
    rng = np.random.default_rng(seed)
    n, t = int(rng.integers(1, 40)), int(rng.integers(0, 6))
    ids = np.unique(rng.integers(0, 500, n)).astype(np.int64)
    n = ids.size
    dense = rng.random(n).round(2)  # ties included
    terms = rng.random((t, n)) * (rng.random((t, n)) < 0.4)
    w, decay = float(rng.choice([0.0, 0.2, 1.0])), float(rng.choice([0.5, 0.9, 1.0]))
    got, gains = coverage_order(ids, dense, terms, w, decay)
    assert got.tolist() == coverage_oracle(ids, dense, terms, w, decay)
    assert sorted(got.tolist()) == ids.tolist() and gains.shape == (n,)


def test_coverage_order_without_decay_is_score_fusion():
    rng = np.random.default_rng(3)
    ids = np.arange(10, 60, dtype=np.int64)
    dense, terms = rng.random(50), rng.random((4, 50)) * (rng.random((4, 50)) < 0.5)
    got, _ = coverage_order(ids, dense, terms, 0.2, 1.0)
    want, _ = score_fusion([(ids, dense), (ids, terms.sum(0))], [0.2, 0.8])
    assert got.tolist() == want.tolist()


def test_coverage_order_moves_a_second_aspect_up():
    # Three chunks match term 0 strongly, one matches term 1: with decay it comes second.
    ids = np.arange(4, dtype=np.int64)
    terms = np.asarray([[3.0, 2.9, 2.8, 0.0], [0.0, 0.0, 0.0, 2.0]])
    dense = np.zeros(4)
    assert coverage_order(ids, dense, terms, 0.0, 1.0)[0].tolist() == [0, 1, 2, 3]
    assert coverage_order(ids, dense, terms, 0.0, 0.5)[0].tolist() == [0, 3, 1, 2]


def test_coverage_order_edge_cases():
    empty = np.zeros(0, np.int64)
    got, gains = coverage_order(empty, np.zeros(0), np.zeros((3, 0)), 0.2, 0.9)
    assert got.size == 0 and gains.size == 0
    one, _ = coverage_order(np.asarray([7]), np.asarray([0.3]), np.zeros((0, 1)), 0.2, 0.9)
    assert one.tolist() == [7]
    same, _ = coverage_order(np.asarray([4, 8]), np.ones(2), np.ones((1, 2)), 0.5, 1.0)
    assert same.tolist() == [4, 8]  # equal everywhere: ascending id
    with pytest.raises(ValueError):
        coverage_order(np.asarray([1]), np.ones(1), np.ones((1, 1)), 0.2, 0.0)
    with pytest.raises(ValueError):
        coverage_order(np.asarray([1]), np.ones(1), np.ones((1, 1)), 1.5, 0.5)


@pytest.mark.parametrize("seed", range(12))
def test_coverage_rerank_equals_the_oracle(seed):
    rng = np.random.default_rng(seed)
    n, t = int(rng.integers(1, 60)), int(rng.integers(0, 6))
    density = rng.random(n).round(2)  # ties included
    terms = rng.random((t, n)) * (rng.random((t, n)) < 0.4)
    tokens = rng.integers(1, 50, n)
    decay = float(rng.choice([0.3, 0.9, 1.0]))
    budget = float(rng.choice([0, 40, 200, np.inf]))
    # Some candidates lie inside another (units of a chunk), never inside one that is.
    inside = np.where(rng.random(n) < 0.3, rng.integers(0, n, n), -1)
    inside[np.isin(np.arange(n), inside[inside >= 0])] = -1
    inside[inside == np.arange(n)] = -1
    got, gains = coverage_rerank(density, terms, tokens, decay, budget, inside)
    want = coverage_rerank_oracle(
        density.tolist(), terms.tolist(), tokens.tolist(), decay, budget, inside.tolist()
    )
    if decay == 1.0:  # every gain is its density: the stable density order
        want = sorted(range(n), key=lambda i: -density[i])
    assert got.tolist() == want
    assert np.all(gains <= density[got] + 1e-12) and np.all(np.diff(gains) <= 1e-12)


def test_coverage_rerank_moves_a_second_aspect_up():
    # Three chunks match term 0, a fourth term 1 only: with decay it comes second.
    density = np.asarray([1.0, 0.95, 0.9, 0.8])
    terms = np.asarray([[3.0, 2.9, 2.8, 0.0], [0.0, 0.0, 0.0, 2.0]])
    tokens = np.full(4, 10)
    assert coverage_rerank(density, terms, tokens, 1.0, np.inf)[0].tolist() == [0, 1, 2, 3]
    order, gains = coverage_rerank(density, terms, tokens, 0.5, np.inf)
    assert order.tolist() == [0, 3, 1, 2]
    assert gains == pytest.approx([1.0, 0.8, 0.95 * 0.5, 0.9 * 0.25])
    # A candidate that matches no query term is scaled by the mean freshness of the terms
    # (0.75 after the first pick), as one that matched every term alike would be.
    density = np.asarray([1.0, 0.7, 0.6])
    terms = np.asarray([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    order, gains = coverage_rerank(density, terms, np.ones(3), 0.5, np.inf)
    assert order.tolist() == [0, 1, 2] and gains == pytest.approx([1.0, 0.7 * 0.75, 0.6 * 0.75])


def test_coverage_rerank_stops_choosing_at_the_budget():
    # After 20 tokens the rest is ranked once, by the freshness at that point.
    density = np.asarray([1.0, 0.9, 0.85, 0.5])
    terms = np.asarray([[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    tokens = np.asarray([20, 20, 20, 20])
    order, gains = coverage_rerank(density, terms, tokens, 0.5, 20)
    assert order.tolist() == [0, 3, 1, 2] and gains == pytest.approx([1.0, 0.5, 0.45, 0.425])
    # No budget: nothing chosen one by one, all by their density (every term fresh).
    assert coverage_rerank(density, terms, tokens, 0.5, 0)[0].tolist() == [0, 1, 2, 3]


def test_coverage_rerank_counts_tokens_as_a_packing_does():
    # Chunk 0 holds unit 1. Unit 1 first (10 tokens), then its chunk adds only its other 30:
    # 40 < 45, so candidate 2 is still chosen one by one and uses term 1 up for 3 (0.45 *
    # 0.9). Counting the chunk's 40 whole would stop at 50 and leave 3 at 0.45.
    density = np.asarray([0.9, 1.0, 0.5, 0.45])
    terms = np.asarray([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    tokens, inside = np.asarray([40, 10, 40, 40]), np.asarray([-1, 0, -1, -1])
    order, gains = coverage_rerank(density, terms, tokens, 0.9, 45, inside)
    assert order.tolist() == [1, 0, 2, 3]
    assert gains == pytest.approx([1.0, 0.81, 0.5, 0.405])
    # A unit after its chunk adds no tokens and uses no term up: 2 keeps 0.8 * 0.5.
    density, terms = np.asarray([1.0, 0.9, 0.8]), np.asarray([[1.0, 1.0, 1.0]])
    order, gains = coverage_rerank(density, terms, np.ones(3), 0.5, 500, np.asarray([-1, 0, -1]))
    assert order.tolist() == [0, 1, 2] and gains == pytest.approx([1.0, 0.45, 0.4])
    with pytest.raises(ValueError, match="inside"):
        coverage_rerank(density, terms, np.ones(3), 0.5, 5, np.asarray([0, 3, -1]))


def test_coverage_rerank_edge_cases():
    got, gains = coverage_rerank(np.zeros(0), np.zeros((3, 0)), np.zeros(0), 0.9, 100)
    assert got.size == 0 and gains.size == 0
    # No query term: the density order, ties in list order.
    got, gains = coverage_rerank(np.asarray([0.2, 0.5, 0.5]), np.zeros((0, 3)), np.ones(3), 0.9, 9)
    assert got.tolist() == [1, 2, 0] and gains.tolist() == [0.5, 0.5, 0.2]
    with pytest.raises(ValueError, match="decay"):
        coverage_rerank(np.ones(1), np.ones((1, 1)), np.ones(1), 0.0, 1)
    with pytest.raises(ValueError, match=">= 0"):
        coverage_rerank(np.asarray([-1.0]), np.ones((1, 1)), np.ones(1), 0.9, 1)
    with pytest.raises(ValueError, match=">= 0"):
        coverage_rerank(np.asarray([np.nan]), np.ones((1, 1)), np.ones(1), 0.9, 1)
    with pytest.raises(ValueError, match="need"):
        coverage_rerank(np.ones(2), np.ones((1, 3)), np.ones(2), 0.9, 1)


@pytest.mark.parametrize("seed", range(6))
def test_feedback_vector_equals_the_oracle(seed):
    rng = np.random.default_rng(seed)
    d, m = int(rng.integers(1, 12)), int(rng.integers(0, 4))
    query = rng.normal(size=d).astype(np.float32)
    rows = rng.normal(size=(m, d)).astype(np.float32)
    if m > 1:
        rows[1] = rows[0]  # duplicates count twice in the mean
    weight = float(rng.choice([0.0, 0.3, 1.0, 2.5]))
    got = feedback_vector(query, rows, weight)
    assert got.dtype == np.float32 and got.shape == (d,)
    np.testing.assert_allclose(got, feedback_oracle(query, rows, weight), rtol=1e-5, atol=1e-6)


def test_feedback_vector_edge_cases():
    q = np.array([0.6, 0.8], np.float32)
    # no feedback rows, or weight 0: the query itself
    np.testing.assert_array_equal(feedback_vector(q, np.zeros((0, 2), np.float32), 0.5), q)
    np.testing.assert_array_equal(feedback_vector(q, np.ones((3, 2), np.float32), 0.0), q)
    # the feedback cancels the query exactly: the zero vector comes back unscaled
    np.testing.assert_array_equal(feedback_vector(q, -q[None, :], 1.0), [0.0, 0.0])
    # a large weight leans the query all the way onto the feedback
    far = feedback_vector(q, np.array([[1.0, 0.0]], np.float32), 1e6)
    np.testing.assert_allclose(far, [1.0, 0.0], atol=1e-5)
    for bad in (
        (q, np.ones((1, 3), np.float32), 0.3),  # dimensions differ
        (q[None, :], np.ones((1, 2), np.float32), 0.3),  # query not a vector
        (q, np.ones(2, np.float32), 0.3),  # feedback not a matrix
        (q, np.ones((1, 2), np.float32), -0.1),
        (q, np.ones((1, 2), np.float32), float("nan")),
    ):
        with pytest.raises(ValueError):
            feedback_vector(*bad)


# ------------------------------------------------------------------ query_dense_weight
def dense_weight_oracle(dense, sparse, base, signal, strength, depth):
    """Plain Python: min-max both lists, compare the tops, move the weight on the logit."""

    def norm(xs):
        lo, hi = min(xs), max(xs)
        return [1.0 if hi <= lo else (x - lo) / (hi - lo) for x in xs]

    def top(xs):
        return sorted(range(len(xs)), key=lambda i: (-xs[i], i))[:depth]

    if signal == "off" or strength == 0 or len(dense) < 2 or base in (0.0, 1.0):
        return base
    dn, sn = norm(dense), norm(sparse)
    td, ts = top(dn), top(sn)
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    if signal == "agreement":
        x = mean([sn[i] for i in td]) - mean([dn[i] for i in ts])
    else:
        x = mean([sn[i] for i in ts]) - mean([dn[i] for i in td])
    return 1 / (1 + math.exp(-(math.log(base / (1 - base)) + strength * x)))


@pytest.mark.parametrize("signal", ["agreement", "spread"])
def test_query_dense_weight_matches_oracle(signal):
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(0, 30)
        dense = [rng.choice([rng.random(), 0.5]) for _ in range(n)]  # ties included
        sparse = [rng.choice([rng.random() * 20, 0.0]) for _ in range(n)]
        base, strength, depth = rng.random(), rng.uniform(0, 6), rng.randint(1, 8)
        got = query_dense_weight(np.array(dense), np.array(sparse), base, signal, strength, depth)
        assert got == pytest.approx(
            dense_weight_oracle(dense, sparse, base, signal, strength, depth)
        )
        assert 0.0 <= got <= 1.0


def test_query_dense_weight_one_list_empty_or_tied_keeps_the_base():
    # A BM25 list with no match (every candidate 0) and a dense list of equal cosines: both
    # normalize to all ones, nothing tells them apart.
    assert query_dense_weight(np.ones(5), np.zeros(5), 0.3, "agreement", 4.0, 3) == 0.3
    assert query_dense_weight(np.ones(5), np.zeros(5), 0.3, "spread", 4.0, 3) == 0.3
    # No candidate or one: the base.
    assert query_dense_weight(np.zeros(0), np.zeros(0), 0.3, "agreement", 4.0, 3) == 0.3
    assert query_dense_weight(np.ones(1), np.ones(1), 0.3, "agreement", 4.0, 3) == 0.3
    # Off, zero strength, or a base at an end: unchanged.
    d, s = np.array([0.9, 0.1, 0.2]), np.array([0.0, 5.0, 1.0])
    assert query_dense_weight(d, s, 0.3, "off", 4.0, 1) == 0.3
    assert query_dense_weight(d, s, 0.3, "agreement", 0.0, 1) == 0.3
    assert query_dense_weight(d, s, 1.0, "agreement", 4.0, 1) == 1.0


def test_query_dense_weight_identical_lists_keep_the_base():
    scores = np.array([0.9, 0.5, 0.1, 0.3])
    for signal in ("agreement", "spread"):
        assert query_dense_weight(scores, scores * 7.0, 0.4, signal, 5.0, 2) == pytest.approx(0.4)


def test_query_dense_weight_moves_away_from_a_useless_retriever():
    rng = np.random.default_rng(1)
    good = np.concatenate([[1.0, 0.9], rng.uniform(0.0, 0.3, 18)])  # two stand out
    # A retriever that says nothing (every candidate scored alike: no query term matched,
    # or a constant vector) loses weight under both signals.
    for signal in ("agreement", "spread"):
        assert query_dense_weight(np.full(20, 0.5), good * 9, 0.5, signal, 4.0, 3) < 0.5
        assert query_dense_weight(good, np.zeros(20), 0.5, signal, 4.0, 3) > 0.5
    # Flat noise (no candidate stands out) against a list whose best stand out: spread
    # trusts the latter, whichever side it is on, and symmetrically so.
    flat = 0.5 + rng.uniform(0.0, 0.01, 20)
    w_dense_useless = query_dense_weight(flat, good * 9, 0.5, "spread", 4.0, 3)
    w_sparse_useless = query_dense_weight(good, flat * 9, 0.5, "spread", 4.0, 3)
    assert w_dense_useless < 0.5 < w_sparse_useless
    assert w_dense_useless == pytest.approx(1.0 - w_sparse_useless)


def test_query_dense_weight_rejects_bad_input():
    with pytest.raises(ValueError, match="aligned"):
        query_dense_weight(np.ones(2), np.ones(3), 0.5, "agreement", 1.0, 1)
    with pytest.raises(ValueError, match="signal"):
        query_dense_weight(np.ones(2), np.ones(2), 0.5, "vote", 1.0, 1)
    with pytest.raises(ValueError, match="strength"):
        query_dense_weight(np.ones(2), np.ones(2), 0.5, "agreement", -1.0, 1)
    with pytest.raises(ValueError, match="depth"):
        query_dense_weight(np.ones(2), np.ones(2), 0.5, "agreement", 1.0, 0)


def competing_oracle(ids, scores, ancestors, alone):
    out = []
    for j, node in enumerate(ids):
        below = [scores[i] for i in range(len(ids)) if node in [a for a in ancestors[i] if a >= 0]]
        out.append(alone if not below else scores[j] >= max(below))
    return out


def test_competing_matches_oracle_on_random_trees():
    rng = random.Random(3)
    for _ in range(200):
        # a tree: chunks 0..19 under summaries 100..104 under 200..201 under 300
        parent = {i: 100 + i // 4 for i in range(20)}
        parent.update({100 + s: 200 + s // 3 for s in range(5)})
        parent.update({200: 300, 201: 300, 300: -1})
        pool = sorted(parent)
        ids = rng.sample(pool, rng.randint(0, len(pool)))
        scores = [float(rng.randint(0, 5)) for _ in ids]  # ties on purpose
        anc = []
        for node in ids:
            chain, cur = [], parent[node]
            while cur >= 0:
                chain.append(cur)
                cur = parent[cur]
            anc.append(chain + [-1] * (3 - len(chain)))
        arr = np.asarray(anc, np.int64).reshape(len(ids), 3)
        for alone in (False, True):
            got = competing(np.asarray(ids, np.int64), np.asarray(scores), arr, alone)
            assert got.tolist() == competing_oracle(ids, scores, anc, alone)


def test_competing_edge_cases():
    empty = competing(np.zeros(0, np.int64), np.zeros(0), np.zeros((0, 2), np.int64))
    assert empty.dtype == bool and empty.size == 0
    # no tree at all (depth 0) or no member among the candidates: only ``alone`` competes
    flat = np.zeros((2, 0), np.int64)
    assert not competing(np.array([5, 7]), np.array([0.1, 0.9]), flat).any()
    assert competing(np.array([5, 7]), np.array([0.1, 0.9]), flat, alone=True).all()
    lone = competing(np.array([10, 1]), np.array([0.2, 0.9]), np.array([[-1], [99]]), True)
    assert lone.tolist() == [True, True]  # 1's parent 99 is not a candidate
    assert not competing(np.array([10, 1]), np.array([0.2, 0.9]), np.array([[-1], [99]])).any()
    # a summary tied with its best member competes; one below it does not
    tied = competing(np.array([10, 1, 2]), np.array([0.5, 0.5, 0.1]), np.array([[-1], [10], [10]]))
    assert tied.tolist() == [True, False, False]  # the chunks have nothing below them
    beaten = competing(np.array([10, 1]), np.array([0.4, 0.5]), np.array([[-1], [10]]), True)
    assert beaten.tolist() == [False, True]
    # a grandchild counts as below too
    deep = competing(
        np.array([20, 10, 1]), np.array([0.6, 0.1, 0.7]), np.array([[-1, -1], [20, -1], [10, 20]])
    )
    assert deep.tolist() == [False, False, False]
    # one retriever useless (all scores equal): every summary ties with its members
    same = competing(np.array([20, 10, 1]), np.ones(3), np.array([[-1, -1], [20, -1], [10, 20]]))
    assert same.tolist() == [True, True, False]


def test_competing_rejects_bad_input():
    with pytest.raises(ValueError, match="aligned"):
        competing(np.array([1, 2]), np.array([0.1]), np.zeros((2, 1), np.int64))
    with pytest.raises(ValueError, match="ancestors must be"):
        competing(np.array([1, 2]), np.array([0.1, 0.2]), np.zeros((3, 1), np.int64))
    with pytest.raises(ValueError, match="finite"):
        competing(np.array([1]), np.array([np.nan]), np.zeros((1, 1), np.int64))
    with pytest.raises(ValueError, match="distinct"):
        competing(np.array([1, 1]), np.array([0.1, 0.2]), np.zeros((2, 1), np.int64))
