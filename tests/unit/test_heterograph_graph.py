"""Graph helpers of the heterograph: sampling, communities, clusters, neighbours."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.engine.heterograph_graph import (
    cluster_count,
    consistent_sample,
    group_by,
    important_entities,
    initial_membership,
    kmeans_assign,
    kmeans_fit,
    leiden,
    match_communities,
    nearest_neighbours,
)


def test_consistent_sample_is_stable_when_nodes_are_added():
    ids = np.arange(1000, 3000, dtype=np.int64)
    picked = set(ids[consistent_sample(ids, 10, seed=7)].tolist())
    grown = np.concatenate([ids, np.arange(5000, 5020, dtype=np.int64)])
    again = set(grown[consistent_sample(grown, 10, seed=7)].tolist())
    assert len(picked) == 10 and len(picked & again) >= 9
    assert picked != set(ids[consistent_sample(ids, 10, seed=8)].tolist())
    assert consistent_sample(ids[:4], 10, seed=7).tolist() == [0, 1, 2, 3]


def test_nearest_neighbours_equal_brute_force_and_skip_self():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((300, 16)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    base_ids = np.arange(100, 400, dtype=np.int64)
    new = base[-40:]
    new_ids = base_ids[-40:]
    src, dst = nearest_neighbours(new, new_ids, base, base_ids, m=5, block_rows=7)
    assert src.size == 40 * 5 and not np.any(src == dst)
    sims = new @ base.T
    sims[np.arange(40), np.arange(260, 300)] = -np.inf
    want = np.argsort(-sims, axis=1)[:, :5]
    for i, node in enumerate(new_ids.tolist()):
        assert set(dst[src == node].tolist()) == set(base_ids[want[i]].tolist())
    empty = nearest_neighbours(new[:0], new_ids[:0], base, base_ids, m=5)
    assert empty[0].size == 0


def test_kmeans_is_seeded_and_assignment_picks_the_nearest_centroid():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(c, 0.05, (50, 4)) for c in (0.0, 1.0, 2.0)]).astype(np.float32)
    c1, l1 = kmeans_fit(x, 3, seed=5)
    c2, l2 = kmeans_fit(x, 3, seed=5)
    assert np.array_equal(l1, l2) and np.allclose(c1, c2)
    assert np.array_equal(kmeans_assign(x, c1), l1)
    assert cluster_count(100) == 10 and cluster_count(101) == 11 and cluster_count(0) == 1


def _two_cliques() -> tuple[np.ndarray, np.ndarray]:
    a = [(i, j) for i in range(6) for j in range(i + 1, 6)]
    b = [(i, j) for i in range(6, 12) for j in range(i + 1, 12)]
    edges = np.asarray([*a, *b, (5, 6)], dtype=np.int64)
    return edges[:, 0], edges[:, 1]


@pytest.mark.parametrize("backend", ["igraph", "leidenalg"])
def test_leiden_finds_the_two_cliques_and_is_deterministic(backend):
    src, dst = _two_cliques()
    m = leiden(12, src, dst, np.ones(src.size), seed=3, backend=backend)
    assert len(set(m[:6].tolist())) == 1 and len(set(m[6:].tolist())) == 1 and m[0] != m[6]
    assert np.array_equal(m, leiden(12, src, dst, np.ones(src.size), seed=3, backend=backend))
    again = leiden(12, src, dst, np.ones(src.size), seed=3, initial=m, backend=backend)
    assert len(group_by(again, np.arange(12))) == 2


def test_initial_membership_keeps_known_labels_and_gives_new_nodes_singletons():
    prev_ids = np.asarray([10, 20, 30], dtype=np.int64)
    prev_labels = np.asarray([0, 0, 4], dtype=np.int64)
    init = initial_membership(np.asarray([10, 25, 30, 40]), prev_ids, prev_labels)
    assert init.tolist() == [0, 5, 4, 6]
    assert initial_membership(np.asarray([1]), None, None) is None


def test_match_communities_keeps_small_changes_and_regenerates_large_ones():
    groups = {0: np.arange(0, 10), 1: np.arange(10, 20), 2: np.arange(20, 25)}
    communities = {
        7: np.arange(0, 11),  # one node joined: Jaccard distance 1/11 -> kept
        8: np.arange(10, 15),  # half left: regenerated, replacing group 1
        9: np.arange(30, 36),  # new
    }
    match = match_communities(communities, groups, change_share=0.2)
    assert match.kept == {7: 0}
    assert match.regenerate == [(8, 1), (9, None)]
    assert match.dropped == [1, 2]


def test_important_entities_pick_the_hub_and_need_two_mentions():
    # A star of units around entity 0 (mentioned 30 times) plus a chain of rarely named ones.
    units = np.arange(100, 130, dtype=np.int64)
    src = np.concatenate([units, units[:10]])
    dst = np.concatenate([np.zeros(30, np.int64), np.arange(1, 11, dtype=np.int64)])
    ids = np.unique(np.concatenate([src, dst]))
    is_entity = ids < 100
    support = np.zeros(ids.size, np.int64)
    np.add.at(support, np.searchsorted(ids, dst), 1)
    imp = important_entities(ids, is_entity, support, src, dst, n_sources=10, seed=1)
    assert imp.entities.tolist() == [0]
    assert imp.n_nodes == ids.size
