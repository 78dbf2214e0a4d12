"""Work.live_edges_at against live_edges filtered afterwards (the oracle)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from graphstrata.engine.config import HeterographConfig, IndexConfig
from graphstrata.engine.heterograph.build.work import CommittedEdges, Work
from graphstrata.engine.store.edges import EdgeTable
from graphstrata.engine.store.schema import EDGE_SCHEMA
from graphstrata.engine.types import EdgeKind, NodeKind

KINDS = (int(EdgeKind.UNIT_ENTITY), int(EdgeKind.ENTITY_RELATION))


def _work(rng: np.random.Generator, n_nodes: int, n_edges: int, n_dead: int) -> Work:
    src = rng.integers(0, n_nodes, n_edges)
    dst = rng.integers(0, n_nodes, n_edges)
    kind = rng.choice(np.asarray(KINDS, np.uint8), n_edges)
    table = pa.table(
        {
            "src": pa.array(src, pa.int64()),
            "dst": pa.array(dst, pa.int64()),
            "kind": pa.array(kind, pa.uint8()),
            "weight": pa.array(np.ones(n_edges), pa.float32()),
            "version": pa.array(np.ones(n_edges, np.int64)),
        },
        schema=EDGE_SCHEMA,
    )
    dead = rng.choice(n_nodes, min(n_dead, n_nodes), replace=False).tolist()
    work = Work(
        snapshot=None,  # type: ignore[arg-type]  # only the edges are read here
        config=HeterographConfig(),
        allocate=lambda k: np.arange(n_nodes, n_nodes + k, dtype=np.int64),
        snap_edges=CommittedEdges(EdgeTable.of(table)),
        dead=set(dead),
    )
    for k in KINDS:  # new edges, some to new nodes, some to dead ones
        m = int(rng.integers(0, 12))
        work.edges.add(k, rng.integers(0, n_nodes + 5, m), rng.integers(0, n_nodes + 5, m))
    return work


@pytest.mark.parametrize("seed", range(10))
def test_live_edges_at_equals_live_edges_then_selected(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    work = _work(rng, n, int(rng.integers(0, 300)), int(rng.integers(0, 6)))
    ids = rng.integers(0, n + 5, int(rng.integers(0, 10)))
    for kind in KINDS:
        src, dst = work.live_edges([kind])
        for end in (0, 1):
            sel = np.isin((src, dst)[end], ids)
            got = work.live_edges_at(kind, ids, end)
            np.testing.assert_array_equal(got[0], src[sel])
            np.testing.assert_array_equal(got[1], dst[sel])


def test_live_edges_at_edge_cases():
    rng = np.random.default_rng(0)
    work = _work(rng, 1, 0, 0)  # one node, no committed edge
    got = work.live_edges_at(KINDS[0], np.zeros(0, np.int64), 1)
    assert got[0].size == got[1].size == 0
    work = _work(rng, 5, 40, 5)  # every node dead: only edges to new nodes can remain
    src, dst = work.live_edges_at(KINDS[0], np.arange(10), 1)
    assert not np.isin(src, list(work.dead)).any() and not np.isin(dst, list(work.dead)).any()


@pytest.fixture(scope="module")
def sample_work(tmp_path_factory, sample_docs):
    from graphstrata.bindings.api import Index
    from graphstrata.bindings.embed.models import HashingEmbedder

    cfg = IndexConfig()
    cfg.hierarchy.enabled = False
    index = Index.create(tmp_path_factory.mktemp("work") / "idx", cfg, embedder=HashingEmbedder(32))
    index.insert(sample_docs)
    snapshot = index.engine.state.snapshot
    return Work.start(snapshot, cfg.heterograph, np.zeros(0, np.int64), lambda k: np.arange(k))


def _cited_oracle(work, ids):
    """Sorted union of each id's doc keys, one Python list per node (the operation's
    rewritten docs first)."""
    out = set()
    for i in ids:
        out.update(work.docs[i] if i in work.docs else work.nodes.docs_of([i])[0])
    return sorted(out)


def test_cited_docs_by_equals_the_union_per_owner(sample_work):
    work = sample_work
    rng = np.random.default_rng(0)
    units = work.nodes.ids_of_kind(int(NodeKind.S))
    ids = rng.choice(units, 300)  # duplicates on purpose
    owners = rng.integers(0, 7, ids.size)
    # a node whose docs this operation rewrote is read from the operation, not the table
    work.docs[int(ids[0])] = [999_999, 3]
    got = work.cited_docs_by(owners, ids)
    assert sorted(got) == sorted(set(owners.tolist()))
    for owner in set(owners.tolist()):
        assert got[owner] == _cited_oracle(work, ids[owners == owner].tolist())
    assert 999_999 in got[int(owners[0])]
    assert work.cited_docs_by(np.zeros(0, np.int64), np.zeros(0, np.int64)) == {}
