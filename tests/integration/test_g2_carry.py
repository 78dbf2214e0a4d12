"""A write hands G2 (nodes, edges, partition, groups on slots) to the next write of the
process (``engine.heterograph.g2``): it must equal G2 read from the committed tables, and
writes that start from it must commit what writes reading the tables commit."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder
from graphstrata.core.layered import flatten
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.heterograph.build import communities as communities_module
from graphstrata.engine.heterograph.build.work import Work
from graphstrata.engine.heterograph.schema import G2_KINDS, NAME, ST_GROUP_OF, ST_LEIDEN
from graphstrata.engine.heterograph.state import g2
from graphstrata.engine.store import Store
from tests.helpers.maintenance import maintenance
from tests.helpers.snapshots import assert_same_snapshot


def _carried(index: Index) -> g2.G2Graph | None:
    """G2 as the write that committed the served version left it for the next write."""
    return index.engine.state.carried.get(NAME)


def _steps(docs: list[dict]) -> list[tuple[str, list]]:
    return [
        ("insert", docs[10:13]),
        ("delete", [docs[1]["doc_id"], docs[10]["doc_id"]]),
        ("insert", [{**docs[4], "text": docs[4]["text"] + " Later the Orrin Guild sold it."}]),
        ("delete", [docs[5]["doc_id"]]),
        ("insert", docs[13:16]),
        ("delete", [docs[13]["doc_id"]]),
        ("insert", docs[16:18]),
    ]


def _write(index: Index, action: str, arg: list) -> None:
    index.insert(arg) if action == "insert" else index.delete(arg)


def _from_tables(index: Index) -> g2.G2Graph:
    """G2 of the served version as a write that holds no carried graph reads it."""
    state = index.engine.state
    snapshot = state.snapshot
    work = Work.start(snapshot, index.engine.config.heterograph, np.zeros(0, np.int64), None)
    ids = work.live_ids(*G2_KINDS)
    labels = work.node_state_on(ST_LEIDEN, G2_KINDS, ids)
    group_of = work.node_state_on(ST_GROUP_OF, G2_KINDS, ids)
    assert labels is not None and group_of is not None
    content = np.isin(ids, work.live_ids(*g2.CONTENT_KINDS))
    return g2.G2Graph.build(ids, g2.table_edges(work, ids), labels, group_of, content)


@pytest.fixture
def local_runs(monkeypatch):
    """Leiden runs locally whatever share of this small graph a write opens (the default
    runs it whole past half of it, which on 30 documents is most writes)."""
    monkeypatch.setattr(communities_module, "LOCAL_LEIDEN_MAX_SHARE", 1.0)


@pytest.mark.parametrize("compact", ["default", "never", "always"])
def test_the_carried_g2_equals_g2_read_from_the_tables(
    tmp_path, sample_docs, monkeypatch, local_runs, compact
):
    config = IndexConfig()
    if compact == "never":
        never = {"share": 10.0}
        config.maintenance = maintenance(
            g2_extra={"minimum": 10**9}, g2_dead=never, walk_graph_dead=never
        )
    elif compact == "always":  # the dead slots (none or more) always reach the limit
        always = {"share": 0.0, "inclusive": True}
        config.maintenance = maintenance(g2_dead=always, walk_graph_dead=always)
    steps_taken = 0
    step = g2.G2Graph.step

    def counted(self, work, policy):
        nonlocal steps_taken
        got = step(self, work, policy)
        steps_taken += got is not None
        return got

    monkeypatch.setattr(g2.G2Graph, "step", counted)
    index = Index.create(tmp_path / "ix", config, embedder=HashingEmbedder(64))
    docs = list(sample_docs)
    index.insert(docs[:10])
    layered = dead = 0
    for action, arg in _steps(docs):
        _write(index, action, arg)
        carried = _carried(index)
        assert carried is not None
        want = _from_tables(index)
        layered += carried.csr.extra_entries > 0
        dead += carried.csr.dead > 0
        np.testing.assert_array_equal(carried.dead_slots, np.flatnonzero(~carried.csr.alive))
        for name in ("ids", "degree", "labels", "group_of", "content"):
            np.testing.assert_array_equal(getattr(carried, name), getattr(want, name), name)
        for a, b in zip(flatten(carried.csr), flatten(want.csr), strict=True):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(carried.pairs, want.pairs, strict=True):
            np.testing.assert_array_equal(a, b)
    assert steps_taken == len(_steps(docs))  # every write after the build started from it
    if compact == "always":
        assert layered == 0 and dead == 0
    if compact == "never":
        assert layered > 0 and dead > 0


def test_writes_from_the_carried_g2_commit_what_writes_from_the_tables_commit(
    tmp_path, sample_docs, monkeypatch, local_runs
):
    """Two indexes take the same writes: one carries G2 from write to write, the other reads
    it from the tables every time. Their versions are the same, and some writes were local
    runs that read only the opened nodes' edges."""
    regions = []
    run = communities_module.leiden_local

    def recorded(*args, **kwargs):
        membership, region = run(*args, **kwargs)
        regions.append((type(args[1]).__name__, region.full))
        return membership, region

    monkeypatch.setattr(communities_module, "leiden_local", recorded)
    docs = list(sample_docs)
    indexes = []
    for name in ("carried", "tables"):
        index = Index.create(tmp_path / name, IndexConfig(), embedder=HashingEmbedder(64))
        index.insert(docs[:10])
        indexes.append(index)
    engine = indexes[1].engine
    context = engine._context  # every operation of this one starts with nothing carried
    monkeypatch.setattr(engine, "_context", lambda *a: dataclasses.replace(context(*a), carried={}))
    for action, arg in _steps(docs):
        for index in indexes:
            _write(index, action, arg)
        carried, fresh = (Store.open(tmp_path / name).load() for name in ("carried", "tables"))
        assert_same_snapshot(carried, fresh, same_files=False)
    local_from_slots = [r for r in regions if r == ("G2Step", False)]
    assert len(local_from_slots) >= 3
    assert ("EdgeArrays", False) in regions  # the other index ran the same writes locally


def test_a_failed_write_leaves_no_carried_g2(tmp_path, sample_docs, local_runs):
    """A write that fails after the heterograph's stage commits nothing, and what it left
    of G2 is not handed to the next write (which starts from the committed version's)."""
    index = Index.create(tmp_path / "ix", IndexConfig(), embedder=HashingEmbedder(64))
    docs = list(sample_docs)
    index.insert(docs[:10])
    index.insert(docs[10:12])
    before = index.engine.state.snapshot
    held = _carried(index)
    assert held is not None
    original = index.engine.store.commit

    def broken_commit(*args, **kwargs):
        raise OSError("disk full")

    index.engine.store.commit = broken_commit  # type: ignore[method-assign]
    with pytest.raises(OSError, match="disk full"):
        index.insert(docs[12:14])
    index.engine.store.commit = original  # type: ignore[method-assign]
    assert index.engine.state.snapshot is before
    assert _carried(index) is held
    index.insert(docs[12:14])
    carried = _carried(index)
    assert carried is not None
    np.testing.assert_array_equal(carried.labels, _from_tables(index).labels)
