"""core.centrality: sampled Brandes betweenness (oracle: networkx 3.6)."""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphstrata.core.centrality import BETWEENNESS_PARALLEL_MIN, sampled_betweenness
from graphstrata.core.graph import csr_from_edges


class FixedSources(random.Random):
    """A networkx ``seed`` whose ``sample`` returns the given sources: networkx then runs
    exactly its sampled path (accumulation and rescale) from our sources."""

    def __init__(self, sources) -> None:
        super().__init__(0)
        self.sources = [int(s) for s in sources]

    def sample(self, population, k, **_):  # type: ignore[override]
        assert k == len(self.sources)
        return list(self.sources)


def graph_and_csr(n: int, src, dst):
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(np.asarray(src).tolist(), np.asarray(dst).tolist(), strict=True))
    csr = csr_from_edges(src, dst, np.ones(len(src), np.float32), n)
    return g, csr


def nx_array(d: dict, n: int) -> np.ndarray:
    return np.array([d[i] for i in range(n)], dtype=np.float64)


def random_graph(seed: int, n: int, e: int):
    rng = np.random.default_rng(seed)
    return graph_and_csr(n, rng.integers(0, n, e), rng.integers(0, n, e))


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize(("n", "e"), [(30, 60), (80, 120), (150, 600)])
def test_exact_equals_networkx(n: int, e: int, normalized: bool) -> None:
    g, (ip, ix, _) = random_graph(n + e, n, e)  # sparse ones are disconnected
    ours = sampled_betweenness(ip, ix, k=n, seed=0, normalized=normalized)
    ref = nx_array(nx.betweenness_centrality(g, normalized=normalized), n)
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)
    # all nodes given as sources is the exact computation too
    ours2 = sampled_betweenness(ip, ix, k=1, seed=0, sources=np.arange(n), normalized=normalized)
    np.testing.assert_allclose(ours2, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("normalized", [True, False])
@pytest.mark.parametrize("k", [1, 2, 10])
def test_fixed_sources_equal_networkx(k: int, normalized: bool) -> None:
    n = 120
    g, (ip, ix, _) = random_graph(k, n, 300)
    sources = np.random.default_rng(k).choice(n, k, replace=False)
    ours = sampled_betweenness(ip, ix, k=k, seed=0, sources=sources, normalized=normalized)
    ref = nx_array(
        nx.betweenness_centrality(g, k=k, normalized=normalized, seed=FixedSources(sources)), n
    )
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12, equal_nan=True)
    if k == 1:  # networkx's 0/0 for the lone source is NaN; so is ours
        assert np.isnan(ours[sources[0]])


def test_sampling_is_seeded_without_replacement() -> None:
    n = 200
    g, (ip, ix, _) = random_graph(3, n, 700)
    a = sampled_betweenness(ip, ix, k=10, seed=42)
    b = sampled_betweenness(ip, ix, k=10, seed=42)
    np.testing.assert_array_equal(a, b)
    # it is the computation from default_rng(seed).choice(n, k, replace=False)
    srcs = np.random.default_rng(42).choice(n, 10, replace=False)
    np.testing.assert_allclose(a, sampled_betweenness(ip, ix, k=10, seed=0, sources=srcs))
    ref = nx_array(nx.betweenness_centrality(g, k=10, seed=FixedSources(np.sort(srcs))), n)
    np.testing.assert_allclose(a, ref, rtol=1e-10, atol=1e-12)
    assert not np.array_equal(a, sampled_betweenness(ip, ix, k=10, seed=43))


def test_edge_cases() -> None:
    # empty, one node, two nodes (no rescale below n = 3), self-loops and duplicates ignored
    ip0, ix0, _ = csr_from_edges([], [], [], 0)
    assert sampled_betweenness(ip0, ix0, k=10, seed=0).shape == (0,)
    ip1, ix1, _ = csr_from_edges([0], [0], [1.0], 1)
    np.testing.assert_array_equal(sampled_betweenness(ip1, ix1, k=10, seed=0), [0.0])
    g, (ip, ix, _) = graph_and_csr(5, [0, 1, 1, 2, 2, 3], [1, 2, 2, 3, 2, 3])
    g.remove_edges_from(list(nx.selfloop_edges(g)))
    ref = nx_array(nx.betweenness_centrality(g), 5)
    np.testing.assert_allclose(sampled_betweenness(ip, ix, k=5, seed=0), ref)
    assert sampled_betweenness(ip, ix, k=3, seed=0, sources=np.array([], np.int64)).sum() == 0
    star_src, star_dst = np.zeros(6, np.int64), np.arange(1, 7)
    g, (ip, ix, _) = graph_and_csr(7, star_src, star_dst)
    np.testing.assert_allclose(
        sampled_betweenness(ip, ix, k=100, seed=0), nx_array(nx.betweenness_centrality(g), 7)
    )


def test_rejects_bad_input() -> None:
    ip, ix, _ = csr_from_edges([0, 1], [1, 2], [1.0, 1.0], 3)
    with pytest.raises(ValueError):
        sampled_betweenness(ip, ix, k=0, seed=0)
    with pytest.raises(ValueError):
        sampled_betweenness(ip, ix, k=1, seed=0, sources=np.array([3]))
    with pytest.raises(ValueError):
        sampled_betweenness(ip, ix[:-1], k=1, seed=0)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 25).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=60),
            st.sets(st.integers(0, n - 1), min_size=1, max_size=n),
        )
    ),
    st.booleans(),
)
def test_property_matches_networkx(data, normalized: bool) -> None:
    n, edges, sources = data
    src = np.array([e[0] for e in edges], np.int64)
    dst = np.array([e[1] for e in edges], np.int64)
    g, (ip, ix, _) = graph_and_csr(n, src, dst)
    g.remove_edges_from(list(nx.selfloop_edges(g)))
    srcs = np.array(sorted(sources), np.int64)
    ours = sampled_betweenness(ip, ix, k=len(srcs), seed=0, sources=srcs, normalized=normalized)
    if len(srcs) == n:
        ref = nx.betweenness_centrality(g, normalized=normalized)
    else:
        ref = nx.betweenness_centrality(
            g, k=len(srcs), normalized=normalized, seed=FixedSources(srcs)
        )
    np.testing.assert_allclose(ours, nx_array(ref, n), rtol=1e-9, atol=1e-12, equal_nan=True)


def test_parallel_path_equals_networkx() -> None:
    # enough sources x entries to take the multi-threaded path (one chunk per thread)
    n = 1500
    g, (ip, ix, _) = random_graph(11, n, 6000)
    sources = np.random.default_rng(1).choice(n, 120, replace=False)
    assert sources.size * ix.size >= BETWEENNESS_PARALLEL_MIN
    ours = sampled_betweenness(ip, ix, k=120, seed=0, sources=sources)
    ref = nx_array(nx.betweenness_centrality(g, k=120, seed=FixedSources(np.sort(sources))), n)
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-12)


def test_parallel_min_work_picks_the_path_not_the_result() -> None:
    # The crossover is a per-call setting: forced serial and forced parallel agree.
    n = 400
    _, (ip, ix, _) = random_graph(5, n, 1600)
    serial = sampled_betweenness(ip, ix, k=24, seed=3, parallel_min_work=1 << 62)
    parallel = sampled_betweenness(ip, ix, k=24, seed=3, parallel_min_work=0)
    np.testing.assert_allclose(parallel, serial, rtol=1e-12, atol=1e-15)
