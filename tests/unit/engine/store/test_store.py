from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.store import (
    CorruptIndexError,
    IndexLockedError,
    IndexNotFoundError,
    Store,
    StoreError,
)
from graphstrata.engine.store.tables import VectorSegment, VectorTable
from graphstrata.engine.types import EdgeKind, NodeKind

DIM = 8


def _create(tmp_path):
    hp = np.random.default_rng(0).standard_normal((4, DIM)).astype(np.float32)
    return Store.create(tmp_path / "ix", {"vector_dtype": "f32"}, {"name": "e", "dim": DIM}, hp, 0)


def _commit_nodes(store, n, kind=NodeKind.T, docs=0):
    with store.writer():
        delta = store.new_delta()
        ids = delta.new_node_ids(n)
        delta.add_nodes(ids, int(kind), [f"text {i}" for i in ids], np.ones(n), [[docs]] * n)
        vecs = (
            np.random.default_rng(int(ids[0]) if n else 0)
            .standard_normal((n, DIM))
            .astype(np.float32)
        )
        delta.add_vectors(ids, int(kind), vecs)
        result = store.commit(delta)
    return ids, vecs, result


def test_create_open_and_commit_roundtrip(tmp_path):
    store = _create(tmp_path)
    assert store.version == 0
    ids, vecs, result = _commit_nodes(store, 5)
    assert result.version == 1 and result.bytes_written > 0
    snap = Store.open(tmp_path / "ix").load()
    assert snap.version == 1
    assert snap.nodes.ids.tolist() == ids.tolist()
    assert snap.nodes.text_of([ids[2]]) == ["text 2"]
    np.testing.assert_array_equal(snap.vectors.get(ids), vecs)


def test_vectors_are_memory_mapped_without_copy(tmp_path):
    store = _create(tmp_path)
    _commit_nodes(store, 10)
    snap = Store.open(tmp_path / "ix").load()
    (segment,) = snap.vectors.segments
    assert not segment.matrix.flags.owndata  # a view into the mapped Arrow buffer
    assert segment.matrix.dtype == np.float32 and segment.matrix.shape == (10, DIM)


def test_vector_count_by_kind_equals_a_mask_over_the_vectors(tmp_path):
    store = _create(tmp_path)
    t_ids, _, _ = _commit_nodes(store, 6, NodeKind.T)
    s_ids, _, _ = _commit_nodes(store, 4, NodeKind.S)
    with store.writer():
        delta = store.new_delta()
        delta.delete_nodes([t_ids[0]])
        store.commit(delta)
    vt = Store.open(tmp_path / "ix").load().vectors
    for kinds in ([int(NodeKind.T)], [int(NodeKind.S)], [int(NodeKind.T), int(NodeKind.S)], []):
        for without in ([], [t_ids[1], s_ids[0]], [t_ids[0], 10**9], list(t_ids) + list(s_ids)):
            want = np.isin(vt.ids, vt.ids[np.isin(vt.kinds, kinds)]) & ~np.isin(vt.ids, without)
            assert vt.count(kinds, without=np.asarray(sorted(without), np.int64)) == want.sum()


def _segment(rng: np.random.Generator, ids: np.ndarray, version: int) -> VectorSegment:
    kinds = rng.integers(0, 4, ids.size).astype(np.uint8)
    return VectorSegment(ids, kinds, rng.standard_normal((ids.size, 3)).astype(np.float32), version)


def _same_table(got: VectorTable, want: VectorTable) -> None:
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(got.kinds, want.kinds)
    np.testing.assert_array_equal(got.get(want.ids), want.get(want.ids))
    probe = np.arange(-1, int(want.ids.max(initial=0)) + 3, dtype=np.int64)
    np.testing.assert_array_equal(got.has(probe), want.has(probe))
    for kinds in ([0], [1, 3], []):
        for without in (probe[:0], probe[::3]):
            assert got.count(kinds, without) == want.count(kinds, without)


@pytest.mark.parametrize("seed", range(6))
def test_advanced_vector_table_equals_a_fresh_one(seed):
    """A commit's table (dead rows spliced out, new segments appended) is the one the
    constructor builds from every segment and the new live ids, on random commits: none,
    every or a few rows dead, empty segments, a new row of a node the commit deleted, and
    new ids below the last (the constructor's path)."""
    rng = np.random.default_rng(seed)
    segments = [_segment(rng, np.arange(0, 8, dtype=np.int64), 1)]
    live = np.arange(0, 12, dtype=np.int64)  # 8..11: live nodes without a vector
    table = VectorTable(3, segments, live)
    top = 12
    for step in range(8):
        n_new = int(rng.integers(0, 5))
        new_ids = np.arange(top, top + n_new, dtype=np.int64)
        if step == 5 and table.ids.size:
            new_ids = np.sort(np.concatenate([new_ids, [int(table.ids[0]) - 1]]))  # not above
        top += n_new
        new = [_segment(rng, new_ids, step + 2), _segment(rng, new_ids[:0], step + 2)]
        share = [0.0, 1.0, 0.3][step % 3]
        dead = live[rng.random(live.size) < share]
        if new_ids.size:
            dead = np.union1d(dead, new_ids[-1:])  # added and deleted by one commit
        live = np.union1d(np.setdiff1d(live, dead), new_ids[new_ids >= 0])
        live = np.setdiff1d(live, dead)
        got = table.advanced(new, live, dead)
        _same_table(got, VectorTable(3, [*segments, *new], live))
        segments, table = [*segments, *new], got


def test_replace_rows_tombstones_and_edge_liveness(tmp_path):
    store = _create(tmp_path)
    ids, _, _ = _commit_nodes(store, 4)
    with store.writer():
        snap = store.load()
        delta = store.new_delta()
        delta.replace_rows(snap.nodes.take(ids[:2]), parent=[ids[3], ids[3]])
        delta.add_edges(ids[:3], ids[1:], int(EdgeKind.SEMANTIC))
        delta.add_edges([ids[0]], [ids[1]], int(EdgeKind.SEMANTIC), 2.0)  # duplicate: weights add
        store.commit(delta)
    with store.writer():
        delta = store.new_delta()
        delta.delete_nodes([ids[2]])
        store.commit(delta)
    snap = Store.open(tmp_path / "ix").load()
    assert snap.nodes.ids.tolist() == [ids[0], ids[1], ids[3]]
    assert snap.nodes.parent[:2].tolist() == [ids[3], ids[3]]
    assert not snap.vectors.has([ids[2]])[0]
    edges = snap.edges.to_pydict()
    pairs = list(zip(edges["src"], edges["dst"], strict=True))
    assert (ids[1], ids[2]) not in pairs and (ids[2], ids[3]) not in pairs  # died with ids[2]
    assert pairs.count((ids[0], ids[1])) == 2


def test_pinned_reader_keeps_its_version(tmp_path):
    store = _create(tmp_path)
    _commit_nodes(store, 3)
    _commit_nodes(store, 2)
    assert len(Store.open(tmp_path / "ix", version=1).load().nodes) == 3
    assert len(Store.open(tmp_path / "ix").load().nodes) == 5
    with pytest.raises(StoreError, match="version 7"):
        Store.open(tmp_path / "ix", version=7)


def test_one_writer_at_a_time(tmp_path):
    store = _create(tmp_path)
    other = Store.open(tmp_path / "ix")
    with (
        store.writer(),
        pytest.raises(IndexLockedError, match="locked by another writer"),
        other.writer(),
    ):
        pass


def test_corrupt_segment_is_detected(tmp_path):
    store = _create(tmp_path)
    _commit_nodes(store, 3)
    seg = tmp_path / "ix" / store.manifest["segments"]["nodes"][0]["file"]
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0xFF
    seg.write_bytes(bytes(data))
    # Opening hashes no segment (sizes only); a caller that wants every byte verified asks.
    with pytest.raises(CorruptIndexError, match="failed its checksum"):
        Store.open(tmp_path / "ix").load(verify=True)
    (bad,) = Store.open(tmp_path / "ix").verify_files().problems
    assert bad.file == store.manifest["segments"]["nodes"][0]["file"]


def test_corrupt_or_foreign_manifest_is_detected(tmp_path):
    store = _create(tmp_path)
    _commit_nodes(store, 3)
    path = tmp_path / "ix" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["next_node_id"] = 0
    path.write_text(json.dumps(manifest))
    with pytest.raises(CorruptIndexError, match="checksum mismatch"):
        Store.open(tmp_path / "ix")
    path.write_text(path.read_text()[:50])
    with pytest.raises(CorruptIndexError, match="not valid JSON"):
        Store.open(tmp_path / "ix")
    path.write_text(json.dumps({"hello": "world"}))
    with pytest.raises(CorruptIndexError, match="not a graphstrata manifest"):
        Store.open(tmp_path / "ix")
    with pytest.raises(IndexNotFoundError):
        Store.open(tmp_path / "nothing-here")


def test_missing_segment_is_detected(tmp_path):
    store = _create(tmp_path)
    _commit_nodes(store, 3)
    (tmp_path / "ix" / store.manifest["segments"]["vectors"][0]["file"]).unlink()
    with pytest.raises(CorruptIndexError, match="missing"):
        Store.open(tmp_path / "ix").load()


def test_orphans_of_a_dead_writer_are_removed(tmp_path):
    store = _create(tmp_path)
    _commit_nodes(store, 3)
    orphan = tmp_path / "ix" / "segments" / "nodes-v00000002-deadbeef.parquet"
    orphan.write_bytes(b"half written")
    (tmp_path / "ix" / "LOCK").write_text("4242")  # the pid a killed writer leaves there
    with store.writer():
        pass
    assert not orphan.exists()
    assert len(store.load().nodes) == 3
    assert (tmp_path / "ix" / "LOCK").read_text() == ""  # handed over cleanly


def test_writers_sweep_only_after_a_writer_that_died_or_left_files(tmp_path, monkeypatch):
    """The sweep reads every history manifest (O(versions) per write): a store sweeps on its
    first write, then only when ``LOCK`` says the previous writer died or left files."""
    from graphstrata.engine.store import orphans
    from graphstrata.engine.store import store as store_mod

    sweeps = []
    real = orphans.OrphanSweeper.sweep

    def counted(self, *args):
        sweeps.append(1)
        return real(self, *args)

    monkeypatch.setattr(orphans.OrphanSweeper, "sweep", counted)
    _create(tmp_path)
    store = Store.open(tmp_path / "ix")
    for _ in range(3):
        _commit_nodes(store, 1)
    assert len(sweeps) == 1  # its first write only
    lock = tmp_path / "ix" / "LOCK"
    lock.write_text("4242")  # a writer of another process was killed
    _commit_nodes(store, 1)
    assert len(sweeps) == 2
    # A failed write whose files could not be removed says so in LOCK: the next writer, of
    # this process or another, sweeps.
    store._leftovers = True
    with store.writer():
        pass
    assert lock.read_text() == store_mod.LEFTOVERS and len(sweeps) == 2
    _commit_nodes(store, 1)
    assert len(sweeps) == 3
    _commit_nodes(store, 1)
    assert len(sweeps) == 3 and lock.read_text() == ""
    assert len(Store.open(tmp_path / "ix").load().nodes) == 6


def test_history_manifests_are_read_once_per_store_and_still_protect_their_files(
    tmp_path, monkeypatch
):
    from graphstrata.engine.store import orphans

    store = _create(tmp_path)
    for _ in range(3):
        _commit_nodes(store, 2)
    reads: list[str] = []
    real = orphans.read_manifest

    def counting(path):
        reads.append(path.name)
        return real(path)

    monkeypatch.setattr(orphans, "read_manifest", counting)
    store = Store.open(tmp_path / "ix")  # a new process: reads every history manifest once
    with store.writer():
        pass
    first = sorted(reads)
    assert first == sorted(p.name for p in (tmp_path / "ix" / "manifests").glob("v*.json"))
    reads.clear()
    _commit_nodes(store, 2)  # one new history manifest (a clean hand-over: no sweep)
    assert reads == []
    (tmp_path / "ix" / "LOCK").write_text("4242")  # then a writer dies: the next one sweeps
    with store.writer():
        pass
    assert reads == ["v00000004.json"]  # only the one committed since
    # every version's segments are still there: an old version opens
    for version in range(1, 5):
        assert len(Store.open(tmp_path / "ix", version=version).load().nodes) == 2 * version
    orphan = tmp_path / "ix" / "segments" / "nodes-v00000009-deadbeef.parquet"
    orphan.write_bytes(b"half written")
    (tmp_path / "ix" / "LOCK").write_text("4242")  # left by the writer that wrote it
    with store.writer():
        pass
    assert not orphan.exists()


def test_compact_merges_segments_and_keeps_content(tmp_path):
    store = _create(tmp_path)
    for _ in range(4):
        _commit_nodes(store, 3)
    with store.writer():
        snap = store.load()
        delta = store.new_delta()
        delta.delete_nodes(snap.nodes.ids[:2])
        store.commit(delta)
    before = store.load()
    with store.writer():
        store.rewrite(before)
    after = Store.open(tmp_path / "ix").load()
    assert after.nodes.ids.tolist() == before.nodes.ids.tolist()
    np.testing.assert_array_equal(
        after.vectors.get(after.nodes.ids), before.vectors.get(before.nodes.ids)
    )
    assert {k: len(v) for k, v in after.manifest["segments"].items()}["nodes"] == 1
    assert after.manifest["segments"]["node_tombstones"] == []
    assert not any((tmp_path / "ix" / "manifests").glob("v00000001.json"))


def test_delta_for_a_stale_version_is_refused(tmp_path):
    store = _create(tmp_path)
    stale = store.new_delta()
    _commit_nodes(store, 1)
    with store.writer(), pytest.raises(StoreError, match="prepared for version 0"):
        store.commit(stale)


def _commit_nodes_and_edges(store, n=4):
    with store.writer():
        delta = store.new_delta()
        ids = delta.new_node_ids(n)
        delta.add_nodes(ids, int(NodeKind.T), [f"t {i}" for i in ids], np.ones(n), [[0]] * n)
        delta.add_edges(ids[:-1], ids[1:], int(EdgeKind.SEMANTIC))
        delta.add_vectors(ids, int(NodeKind.T), np.ones((n, DIM), dtype=np.float32))
        return store.commit(delta)


def _files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_a_full_disk_mid_commit_says_so_and_removes_the_partial_files(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from graphstrata.engine.store import StoreWriteError

    store = _create(tmp_path)
    _commit_nodes(store, 3)
    root = tmp_path / "ix"
    before = _files(root)
    real_write = pq.write_table
    calls = []

    def full_disk(table, where, **kwargs):
        calls.append(where)
        if len(calls) == 1:
            return real_write(table, where, **kwargs)
        Path(where).write_bytes(b"PAR1 half a segment")  # what a short write leaves behind
        raise OSError("6528 requested and 5088 written")  # pyarrow's words for ENOSPC

    monkeypatch.setattr(pq, "write_table", full_disk)
    with pytest.raises(StoreWriteError) as err:
        _commit_nodes_and_edges(store)
    message = str(err.value)
    assert message.startswith("no space left on device while writing ")
    assert str(calls[1]) in message and "stays at version 1" in message
    assert _files(root) == before  # the partial edges file and the nodes segment are gone
    assert store.version == 1 and Store.open(root).version == 1
    assert len(Store.open(root).load().nodes) == 3

    monkeypatch.setattr(pq, "write_table", real_write)
    assert _commit_nodes_and_edges(store).version == 2  # room again: the next commit works
    assert len(Store.open(root).load().nodes) == 7


def test_a_full_disk_while_switching_the_manifest_keeps_the_last_version(tmp_path, monkeypatch):
    import errno

    from graphstrata.engine.store import StoreWriteError
    from graphstrata.engine.store import store as store_module

    store = _create(tmp_path)
    _commit_nodes(store, 3)
    root = tmp_path / "ix"
    before = _files(root)
    real_atomic = store_module.write_atomic

    def no_room_for_manifest(path, data):
        if path.name == "manifest.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_atomic(path, data)

    monkeypatch.setattr(store_module, "write_atomic", no_room_for_manifest)
    with pytest.raises(StoreWriteError, match=r"no space left on device while writing .*manifest"):
        _commit_nodes(store, 2)
    assert _files(root) == before  # manifests/v00000002.json and the v2 segments removed
    assert Store.open(root).version == 1


def test_write_atomic_leaves_no_temporary_file_on_a_full_disk(tmp_path, monkeypatch):
    import errno
    import os

    from graphstrata.engine.store.files import write_atomic

    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError):
        write_atomic(tmp_path / "manifest.json", b"{}")
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_while_creating_leaves_nothing(tmp_path, monkeypatch):
    import errno

    from graphstrata.engine.store import StoreWriteError

    def no_room(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "save", no_room)
    with pytest.raises(StoreWriteError, match="no space left on device while creating"):
        _create(tmp_path)
    assert not (tmp_path / "ix").exists()


def test_row_accessors_equal_the_whole_columns_before_and_after_they_exist(
    tmp_path, sample_docs, hashing_embedder
):
    from graphstrata.bindings.api import Index
    from graphstrata.engine.config import IndexConfig

    config = IndexConfig()
    config.heterograph.enabled = False  # its view indexes every name (issue #17)
    index = Index.create(tmp_path / "idx", config, embedder=hashing_embedder)
    index.insert(sample_docs[:6])
    nodes = index.engine.state.snapshot.nodes
    rows = np.array([len(nodes) - 1, 0, 3, 3], dtype=np.int64)
    # A query packs its hits from the rows it needs: the first query after a commit must
    # not convert every text of the new version (O(N) per write).
    index.query("Who founded Meridian Optics?", mode="naive", budget_tokens=300)
    assert nodes._text is None and nodes._docs is None
    lazy_texts, lazy_docs = nodes.texts_at(rows), nodes.docs_at(rows)
    assert lazy_texts == [nodes.texts[r] for r in rows]
    assert lazy_docs == [nodes.docs[r] for r in rows]
    assert nodes.texts_at(rows) == lazy_texts and nodes.docs_at(rows) == lazy_docs
    assert nodes.texts_at(np.zeros(0, np.int64)) == []


def _live_oracle(rows: list[tuple[int, int]], dead: set[int]) -> list[tuple[int, int]]:
    """(id, version) of the newest row per id, tombstoned ids dropped, sorted by id."""
    newest: dict[int, int] = {}
    for node_id, version in rows:
        newest[node_id] = max(version, newest.get(node_id, version))
    return sorted((i, v) for i, v in newest.items() if i not in dead)


@pytest.mark.parametrize("seed", range(16))
def test_live_nodes_equals_the_oracle(seed):
    """Sorted single segments (the no-copy path), unsorted repeated ids, and a sorted
    segment followed by later ones (a build's segment and the writes since)."""
    import pyarrow as pa

    from graphstrata.engine.store.schema import NODE_SCHEMA
    from graphstrata.engine.store.tables import live_nodes

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 30))
    if seed % 4 == 1:  # one sorted segment: ascending unique ids
        ids = np.sort(rng.choice(100, n, replace=False)).astype(np.int64)
    elif seed % 4 == 3:  # a sorted build segment, then writes rewriting or adding ids
        first = np.sort(rng.choice(60, n, replace=False)).astype(np.int64)
        later = rng.integers(0, 70, int(rng.integers(1, 12))).astype(np.int64)
        ids = np.concatenate([first, later])
        n = ids.size
    else:  # several segments: ids repeat (a rewritten row) in any order
        ids = rng.integers(0, 20, n).astype(np.int64)
    versions = rng.integers(1, 5, n).astype(np.int64)
    if seed % 4 != 1:  # a later row of one id has a larger version, as commits write them
        versions = np.arange(1, n + 1, dtype=np.int64)
    if seed == 7:  # a tail row older than the sorted segment's row of its id loses
        versions = rng.permutation(n).astype(np.int64) + 1
    dead = np.unique(rng.choice(np.arange(100), int(rng.integers(0, 6)))).astype(np.int64)
    if seed == 5:
        dead = np.zeros(0, np.int64)
    table = pa.table(
        {
            "id": ids,
            "kind": np.zeros(n, np.uint8),
            "layer": np.zeros(n, np.uint8),
            "text": [f"t{i}-{v}" for i, v in zip(ids, versions, strict=True)],
            "tokens": np.ones(n, np.int32),
            "docs": [[0]] * n,
            "code": np.zeros(n, np.uint64),
            "parent": np.full(n, -1, np.int64),
            "version": versions,
        },
        schema=NODE_SCHEMA,
    )
    nodes = live_nodes(table, dead)
    got = nodes.table
    pairs = list(zip(ids.tolist(), versions.tolist(), strict=True))
    want = _live_oracle(pairs, set(dead.tolist()))
    have = list(zip(got.column("id").to_pylist(), got.column("version").to_pylist(), strict=True))
    assert have == want
    assert got.column("text").to_pylist() == [f"t{i}-{v}" for i, v in want]
    # the same rows through the row accessors, before the table is copied out
    fresh = live_nodes(table, dead)
    assert fresh.ids.tolist() == [i for i, _ in want]
    assert fresh.version.tolist() == [v for _, v in want]
    rows = np.arange(len(fresh))[::-1]
    assert fresh.texts_at(rows) == [f"t{i}-{v}" for i, v in want][::-1]


def _node_rows(ids, versions):
    import pyarrow as pa

    from graphstrata.engine.store.schema import NODE_SCHEMA

    n = len(ids)
    return pa.table(
        {
            "id": np.asarray(ids, np.int64),
            "kind": np.asarray([i % 3 for i in ids], np.uint8),
            "layer": np.zeros(n, np.uint8),
            "text": [f"t{i}-{v}" for i, v in zip(ids, versions, strict=True)],
            "tokens": np.asarray(versions, np.int32),
            "docs": [[int(i), int(v)] for i, v in zip(ids, versions, strict=True)],
            "code": np.asarray(ids, np.uint64),
            "parent": np.full(n, -1, np.int64),
            "version": np.asarray(versions, np.int64),
        },
        schema=NODE_SCHEMA,
    )


@pytest.mark.parametrize("row_by_row_below", [128, 1])
@pytest.mark.parametrize("seed", range(6))
def test_merged_node_tables_equal_the_oracle(seed, row_by_row_below, monkeypatch):
    """``NodeTable.merged`` over random commits (new ids, rewritten ids, tombstones, empty
    commits) refers to the rows it keeps, combines the chunks it appended, copies the rows
    into one table past its garbage limit, and reads back like a dict of id -> newest row;
    texts and doc lists read row by row or gathered alike."""
    from graphstrata.engine.store import tables
    from graphstrata.engine.store.tables import live_nodes

    monkeypatch.setattr(tables, "ROW_BY_ROW_BELOW", row_by_row_below)
    rng = np.random.default_rng(seed)
    first = sorted(set(rng.integers(0, 40, int(rng.integers(0, 12))).tolist()))
    table = live_nodes(_node_rows(first, [1] * len(first)), np.zeros(0, np.int64))
    want = dict.fromkeys(first, 1)
    dead_ever: set[int] = set()
    for version in range(2, 14):
        pool = [i for i in range(60) if i not in dead_ever]
        picked = rng.choice(pool, int(rng.integers(0, 6)), replace=False).tolist()
        dead = sorted(i for i in picked[:2] if rng.random() < 0.5)
        fresh = sorted(set(picked) - set(dead))
        dead_ever.update(dead)
        rows = _node_rows(fresh, [version] * len(fresh))
        table = table.merged(rows, np.asarray(dead, np.int64), MaintenanceConfig())
        for i in dead:
            want.pop(i, None)
        want.update(dict.fromkeys(fresh, version))
        ids = sorted(want)
        assert table.ids.tolist() == ids
        assert table.version.tolist() == [want[i] for i in ids]
        assert table.tokens.tolist() == [want[i] for i in ids]
        assert table.kind.tolist() == [i % 3 for i in ids]
        # ids of kinds, carried from the previous table once asked for
        assert version == 2 or set(table._of_kinds) == {(0,), (1, 2)}
        for key in ((0,), (1, 2)):
            assert table.ids_of_kind(*key).tolist() == [i for i in ids if i % 3 in key]
        texts = [f"t{i}-{want[i]}" for i in ids]
        rows_all = np.arange(len(ids))
        assert table.texts_at(rows_all) == texts
        assert table.docs_at(rows_all[::-1]) == [[i, want[i]] for i in ids][::-1]
        picked_rows = rng.integers(0, len(ids), int(rng.integers(0, 9))) if ids else rows_all
        assert table.texts_at(picked_rows) == [texts[r] for r in picked_rows]  # repeats too
        assert table.docs_at(picked_rows) == [[ids[r], want[ids[r]]] for r in picked_rows]
        with pytest.raises(IndexError):
            table.texts_at(np.asarray([len(ids)], np.int64))
        flat, parent = table.doc_lists_at(rows_all)
        assert flat.tolist() == [x for i in ids for x in (i, want[i])]
        assert parent.tolist() == [r for r in range(len(ids)) for _ in range(2)]
        newer = table.newer_than(version - 2)
        assert newer.column("id").to_pylist() == [i for i in ids if want[i] > version - 2]
        held, _ = table._held
        # appended chunks are combined as they pile up: O(log rows) chunks
        assert held.column("id").num_chunks <= 2 + int(np.log2(max(held.num_rows, 1)))
        if version % 4 == 0:  # the copy into one table reads the same
            assert table.table.column("text").to_pylist() == texts
            assert table._held[1] is None


@pytest.mark.parametrize("seed", range(5))
def test_gather_rows_equals_a_plain_take(seed):
    """Chunk by chunk, in the order asked (repeats, empty chunks, one chunk, no rows)."""
    import pyarrow as pa

    from graphstrata.engine.store.tables import gather_rows

    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 5, int(rng.integers(1, 5))).tolist()
    start, parts = 0, []
    for size in sizes:
        ids = list(range(start, start + size))
        parts.append(_node_rows(ids, [1] * size))
        start += size
    table = pa.concat_tables(parts)
    at = rng.integers(0, max(start, 1), int(rng.integers(0, 12))) if start else np.zeros(0)
    for columns in (None, ["text"], ["docs", "id"]):
        got = gather_rows(table, at, columns)
        want = table.combine_chunks().take(pa.array(np.asarray(at, np.int64)))
        if columns is not None:
            want = want.select(columns)
        assert got.to_pylist() == want.to_pylist()
        assert got.schema == want.schema and got.num_rows == len(at)


def test_large_segments_are_mapped_arrow_and_read_like_parquet(tmp_path, monkeypatch):
    """From ``MAPPED_ROWS`` rows a table segment is Arrow IPC (mapped on open); below it,
    Parquet. Both read back the same rows, and an unreadable mapped segment says so."""
    from graphstrata.engine.store import segments

    small = _create(tmp_path / "small")
    ids_small, _, _ = _commit_nodes(small, 6)
    monkeypatch.setattr(segments, "MAPPED_ROWS", 4)
    big = _create(tmp_path / "big")
    ids_big, _, _ = _commit_nodes(big, 6)
    _commit_nodes(big, 2)  # a small commit stays Parquet
    files = [e["file"] for e in big.manifest["segments"]["nodes"]]
    assert files[0].endswith(".arrow") and files[1].endswith(".parquet")
    assert small.manifest["segments"]["nodes"][0]["file"].endswith(".parquet")
    got = Store.open(tmp_path / "big" / "ix").load()
    want = Store.open(tmp_path / "small" / "ix").load()
    assert got.nodes.text_of(ids_big) == want.nodes.text_of(ids_small)
    assert got.nodes.tokens[: len(ids_big)].tolist() == want.nodes.tokens.tolist()
    assert len(got.nodes) == 8
    # rewritten whole (compaction): one mapped segment of the live rows
    big.rewrite(got)
    again = Store.open(tmp_path / "big" / "ix").load()
    assert again.nodes.table.equals(got.nodes.table)
    seg = tmp_path / "big" / "ix" / big.manifest["segments"]["nodes"][0]["file"]
    assert seg.suffix == ".arrow"
    data = bytearray(seg.read_bytes())
    data[-16:] = b"\0" * 16  # the footer gone: no longer an Arrow file, same size
    seg.write_bytes(bytes(data))
    with pytest.raises(CorruptIndexError, match="unreadable"):
        Store.open(tmp_path / "big" / "ix").load()


def test_doc_lists_column_equals_python_lists():
    import pyarrow as pa

    from graphstrata.engine.store.delta import doc_lists

    docs = [[3, 1], np.asarray([7], np.int64), [], np.zeros(0, np.int64), list(range(5))]
    want = pa.array([list(map(int, d)) for d in docs], type=pa.list_(pa.int64()))
    assert doc_lists(docs).equals(want)
    assert doc_lists([]).equals(pa.array([], type=pa.list_(pa.int64())))


@pytest.mark.parametrize("seed", range(4))
def test_merged_tail_keeps_the_rows_and_few_chunks(seed):
    """Appending chunks one by one through ``_merged_tail`` keeps every row in order and
    O(log rows) chunks; no chunk, one chunk and empty chunks pass through."""
    import pyarrow as pa

    from graphstrata.engine.store.tables import _merged_tail as merged_tail

    def _merged_tail(rows: pa.Table) -> pa.Table:
        return merged_tail(rows, MaintenanceConfig().table_chunk_merge_factor)

    rng = np.random.default_rng(seed)
    table = pa.table({"id": pa.array([], pa.int64())})
    assert _merged_tail(table).num_rows == 0
    want: list[int] = []
    for _ in range(200):
        part = rng.integers(0, 1000, int(rng.integers(0, 40))).tolist()
        want += part
        table = _merged_tail(
            pa.concat_tables([table, pa.table({"id": pa.array(part, pa.int64())})])
        )
        assert table.column("id").to_pylist() == want
        assert table.column("id").num_chunks <= 3 + int(np.log2(max(len(want), 1)))


@pytest.mark.parametrize("ordered", [True, False])
def test_row_reads_across_chunks_equal_the_oracle(ordered):
    """``texts_at`` / ``docs_at`` of rows spread over many Arrow chunks, with and without an
    order (rows held out of id order), one by one and gathered, against Python lists."""
    from graphstrata.engine.store.schema import NODE_SCHEMA
    from graphstrata.engine.store.tables import ROW_BY_ROW_BELOW, NodeTable

    rng = np.random.default_rng(5)
    n = 300
    ids = np.arange(n, dtype=np.int64) * 3
    texts = [f"node {i} " + "é" * int(rng.integers(0, 5)) for i in range(n)]
    docs = [rng.integers(0, 50, int(rng.integers(0, 4))).tolist() for _ in range(n)]
    held = np.arange(n) if ordered else rng.permutation(n)  # held row -> position in id order
    columns = {
        "id": ids[held],
        "kind": np.ones(n, np.uint8),
        "layer": np.zeros(n, np.uint8),
        "text": [texts[i] for i in held],
        "tokens": np.ones(n, np.int32),
        "docs": [docs[i] for i in held],
        "code": np.zeros(n, np.uint64),
        "parent": np.full(n, -1, np.int64),
        "version": np.ones(n, np.int64),
    }
    whole = pa.table(columns, schema=NODE_SCHEMA)
    cuts = [0, 1, 2, 40, 41, 170, n]  # chunks of 1, 1, 38, 1, 129 and 130 rows
    rows_table = pa.concat_tables([whole.slice(a, b - a) for a, b in itertools.pairwise(cuts)])
    order = None if ordered else np.argsort(held)  # position in id order -> held row
    nodes = NodeTable(rows_table, order)
    assert nodes.ids.tolist() == ids.tolist()
    for size in (1, 5, ROW_BY_ROW_BELOW - 1, ROW_BY_ROW_BELOW, n):
        rows = rng.integers(0, n, size)
        assert nodes.texts_at(rows) == [texts[r] for r in rows]
        assert nodes.docs_at(rows) == [docs[r] for r in rows]
    with pytest.raises(IndexError):
        nodes.texts_at(np.array([n]))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_vector_reads_across_segments_equal_the_oracle(dtype):
    """``VectorTable.get`` of ids spread over many segments, in any order and repeated, is
    each id's row as float32 (ids are never reused); a dead id raises."""
    rng = np.random.default_rng(11)
    dim, segments, row_of = 6, [], {}
    next_id = 0
    for version in range(1, 13):
        n = int(rng.integers(1, 9))
        ids = np.arange(next_id, next_id + n, dtype=np.int64)
        next_id += n
        matrix = rng.standard_normal((ids.size, dim)).astype(dtype)
        segments.append(VectorSegment(ids, np.ones(ids.size, np.uint8), matrix, version))
        for i, node in enumerate(ids.tolist()):
            row_of[node] = matrix[i].astype(np.float32)
    dead = rng.choice(next_id, size=5, replace=False)
    live = np.asarray(sorted(set(row_of) - set(dead.tolist())), np.int64)
    table = VectorTable(dim, segments, live)
    for size in (0, 1, 7, 60):
        want = rng.choice(live, size=size, replace=True)
        got = table.get(want)
        assert got.dtype == np.float32 and got.shape == (size, dim)
        for row, node in zip(got, want.tolist(), strict=True):
            np.testing.assert_array_equal(row, row_of[node])
    with pytest.raises(KeyError):
        table.get(np.asarray([live[0], dead[0]]))
