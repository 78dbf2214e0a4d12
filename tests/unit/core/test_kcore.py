"""core.kcore: igraph coreness on CSR graphs (oracle: networkx core_number)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from graphstrata.core.graph import csr_from_edges
from graphstrata.core.kcore import coreness, igraph_from_csr


def nx_core(n: int, src, dst) -> np.ndarray:
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(np.asarray(src).tolist(), np.asarray(dst).tolist(), strict=True))
    g.remove_edges_from(list(nx.selfloop_edges(g)))
    core = nx.core_number(g)
    return np.array([core[i] for i in range(n)], dtype=np.int64)


@pytest.mark.parametrize(("n", "e", "seed"), [(10, 15, 0), (200, 800, 1), (500, 5000, 2)])
def test_coreness_matches_networkx(n: int, e: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, e), rng.integers(0, n, e)  # self-loops and duplicates too
    ip, ix, _ = csr_from_edges(src, dst, np.ones(e, np.float32), n)
    got = coreness(ip, ix)
    assert got.dtype == np.int64 and got.shape == (n,)
    np.testing.assert_array_equal(got, nx_core(n, src, dst))


def test_coreness_edge_cases() -> None:
    assert coreness(np.zeros(1, np.int64), np.zeros(0, np.int64)).shape == (0,)
    ip, ix, _ = csr_from_edges([0], [0], [1.0], 3)  # a self-loop only: ignored
    np.testing.assert_array_equal(coreness(ip, ix), [0, 0, 0])
    # a 4-clique plus a pendant and an isolated node
    src = [0, 0, 0, 1, 1, 2, 3]
    dst = [1, 2, 3, 2, 3, 3, 4]
    ip, ix, _ = csr_from_edges(src, dst, np.ones(7, np.float32), 6)
    np.testing.assert_array_equal(coreness(ip, ix), [3, 3, 3, 3, 1, 0])
    g = igraph_from_csr(ip, ix)
    assert g.vcount() == 6 and g.ecount() == 7 and not g.is_directed()


def test_coreness_rejects_bad_csr() -> None:
    with pytest.raises(ValueError):
        coreness(np.array([0, 2]), np.array([1]))
    with pytest.raises(ValueError):
        coreness(np.array([[0, 1]]), np.array([0]))
