"""Graph helpers of the heterograph: importance, communities, cluster count."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.engine.heterograph.graph import (
    cluster_count,
    group_by,
    important_entities,
    initial_membership,
    leiden,
    match_communities,
)


def test_cluster_count_is_ceil_sqrt_and_at_least_one():
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
