"""Tiered merging of commit segments (``engine.store.merging``): what a version reads is the
same with and without merges, and the segment count stays logarithmic."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from graphstrata.engine.store import DOC_SCHEMA, Store, merging
from graphstrata.engine.store.merging import merged_rows, tier
from graphstrata.engine.store.segments import read_table_segment
from graphstrata.engine.types import EdgeKind, NodeKind
from tests.helpers.maintenance import maintenance

DIM = 4


def _create(path, fanin=None):
    """A store whose commits merge runs of ``fanin`` segments (None: the default)."""
    hp = np.random.default_rng(0).standard_normal((4, DIM)).astype(np.float32)
    config: dict = {"vector_dtype": "f32"}
    if fanin is not None:
        config["maintenance"] = {"store_merge_fanin": fanin}
    return Store.create(path, config, {"name": "e", "dim": DIM}, hp, 0)


def _docs_table(keys, version):
    n = len(keys)
    return pa.table(
        {
            "key": keys,
            "doc_id": [f"d{k}" for k in keys],
            "title": [""] * n,
            "source": [""] * n,
            "sha256": [""] * n,
            "metadata": ["{}"] * n,
            "n_chars": [1] * n,
            "n_chunks": [1] * n,
            "version": [version] * n,
            "layout": [None] * n,
        },
        schema=DOC_SCHEMA,
    )


def _random_commit(store: Store, rng: np.random.Generator) -> None:
    """One commit of random node adds, in-place rewrites, deletes, edges and docs."""
    with store.writer():
        snap = store.load()
        delta = store.new_delta()
        live = snap.nodes.ids
        live_keys = snap.docs.column("key").to_numpy()
        keys = delta.new_doc_keys(int(rng.integers(0, 3)))
        delta.add_docs(_docs_table(keys.tolist(), delta.version))
        n = int(rng.integers(0, 5))
        ids = delta.new_node_ids(n)
        kinds = rng.choice([int(NodeKind.T), int(NodeKind.S)], n).astype(np.uint8)
        pool = np.concatenate([live_keys, keys]) if live_keys.size + keys.size else np.zeros(1)
        docs = [rng.choice(pool, int(rng.integers(1, 4))).astype(np.int64) for _ in range(n)]
        delta.add_nodes(ids, kinds, [f"n{i} v{delta.version}" for i in ids], np.ones(n), docs)
        delta.add_vectors(ids, kinds, rng.standard_normal((n, DIM)).astype(np.float32))
        if live.size:
            again = rng.choice(live, min(live.size, int(rng.integers(0, 3))), replace=False)
            rows = snap.nodes.take(np.sort(again))
            delta.replace_rows(rows, parent=rng.integers(-1, 50, rows.num_rows))
            both = np.concatenate([live, ids])
            m = int(rng.integers(0, 6))
            delta.add_edges(
                rng.choice(both, m), rng.choice(both, m), int(EdgeKind.SEMANTIC), rng.random(m)
            )
            if rng.random() < 0.4:
                delta.delete_nodes(rng.choice(live, 1))
        if live_keys.size and rng.random() < 0.2:
            delta.delete_docs(rng.choice(live_keys, 1))
        store.commit(delta)


def _content(store_path, version=None):
    snap = Store.open(store_path, version=version).load()
    ids = snap.nodes.ids
    edges = snap.edges.to_pydict()
    edge_rows = zip(edges["src"], edges["dst"], edges["kind"], edges["weight"], strict=True)
    docs = snap.docs.to_pydict()
    return {
        "ids": ids.tolist(),
        "texts": snap.nodes.text_of(ids),
        "docs": snap.nodes.docs_of(ids),
        "parent": snap.nodes.parent.tolist(),
        "version": snap.nodes.version.tolist(),
        "edges": Counter(edge_rows),
        "doc_rows": sorted(zip(docs["key"], docs["doc_id"], docs["version"], strict=True)),
        "vectors": snap.vectors.get(ids).tolist(),
    }


def _assert_merges_dropped_dead_rows(root, version):
    """The segments merged by commit ``version`` hold no row its readers would drop."""
    segments = Store.open(root, version=version).manifest["segments"]

    def ids(table, column):
        parts = [read_table_segment(root / e["file"]).column(column) for e in segments[table]]
        return np.concatenate([p.to_numpy() for p in parts]) if parts else np.zeros(0, np.int64)

    dead_nodes, dead_docs = ids("node_tombstones", "id"), ids("doc_tombstones", "id")
    for table, entries in segments.items():
        for e in entries:
            if e.get("tier", 0) < 1 or e["version"] != version:
                continue
            rows = read_table_segment(root / e["file"])
            if table == "nodes":
                node_ids = rows.column("id").to_numpy()
                assert np.unique(node_ids).size == node_ids.size
                assert not np.isin(node_ids, dead_nodes).any()
            elif table == "edges":
                ends = np.concatenate([rows.column(c).to_numpy() for c in ("src", "dst")])
                assert not np.isin(ends, dead_nodes).any()
            elif table == "docs":
                assert not np.isin(rows.column("key").to_numpy(), dead_docs).any()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("fanin", [2, 3])
def test_every_version_reads_the_same_with_and_without_merges(tmp_path, seed, fanin):
    plain, merged = _create(tmp_path / "plain", 10**9), _create(tmp_path / "merged", fanin)
    n_commits = 20
    for store in (plain, merged):
        rng = np.random.default_rng(seed)
        writer = store
        for i in range(n_commits):
            if i % 4 == 3:  # a new writer: what it merges is read from the files
                writer = Store.open(store.root)
            _random_commit(writer, rng)
    for version in range(1, n_commits + 1):  # pinned readers of every kept version too
        assert _content(merged.root, version) == _content(plain.root, version), version
    for version in range(1, n_commits + 1):
        _assert_merges_dropped_dead_rows(merged.root, version)
    counts = {t: len(e) for t, e in Store.open(merged.root).manifest["segments"].items()}
    plain_counts = {t: len(e) for t, e in Store.open(plain.root).manifest["segments"].items()}
    assert counts["nodes"] < plain_counts["nodes"]
    assert counts["vectors"] == plain_counts["vectors"]  # vector segments are never merged


def test_segments_per_table_follow_the_digits_of_the_commit_count(tmp_path):
    store = _create(tmp_path / "ix", 3)
    rng = np.random.default_rng(1)
    for n in range(1, 30):
        with store.writer():
            delta = store.new_delta()
            ids = delta.new_node_ids(2)
            delta.add_nodes(ids, int(NodeKind.T), ["a", "b"], np.ones(2), [[0], [0]])
            delta.add_vectors(ids, int(NodeKind.T), rng.standard_normal((2, DIM)))
            store.commit(delta)
        entries = store.manifest["segments"]["nodes"]
        digits = np.base_repr(n, 3)
        assert len(entries) == sum(int(d) for d in digits), n
        # the tiers, oldest first, are the digits' places
        want = [len(digits) - 1 - p for p, d in enumerate(digits) for _ in range(int(d))]
        assert [tier(e) for e in entries] == want
    assert len(Store.open(tmp_path / "ix").load().nodes) == 58


def test_merged_rows_keep_what_the_new_version_reads():
    nodes = pa.table(
        {
            "id": [5, 3, 5, 7, 3],
            "kind": [1] * 5,
            "layer": [0] * 5,
            "text": ["old5", "old3", "new5", "dead7", "new3"],
            "tokens": [1] * 5,
            "docs": [[1], [2], [1, 4], [2], [2]],
            "code": [0] * 5,
            "parent": [-1] * 5,
            "version": [1, 1, 2, 2, 3],
        },
        schema=merging.MERGED_TABLES["nodes"][0],
    )
    dead_nodes, dead_docs = np.array([7], np.int64), np.array([4], np.int64)
    out = merged_rows("nodes", nodes, dead_nodes, dead_docs)
    assert out.column("id").to_pylist() == [5, 3]
    assert out.column("text").to_pylist() == ["new5", "new3"]
    edges = pa.table(
        {
            "src": [3, 7, 5],
            "dst": [5, 3, 9],
            "kind": [1] * 3,
            "weight": [1.0] * 3,
            "version": [1] * 3,
        },
        schema=merging.MERGED_TABLES["edges"][0],
    )
    out = merged_rows("edges", edges, dead_nodes, dead_docs)
    assert list(zip(out.column("src").to_pylist(), out.column("dst").to_pylist())) == [
        (3, 5),
        (5, 9),
    ]
    docs = _docs_table([4, 6, 2], 1)
    assert merged_rows("docs", docs, dead_nodes, dead_docs).column("key").to_pylist() == [6, 2]
    tombs = pa.table({"id": [9, 2, 9]}, schema=merging.MERGED_TABLES["node_tombstones"][0])
    out = merged_rows("node_tombstones", tombs, dead_nodes, dead_docs)
    assert out.column("id").to_pylist() == [2, 9]
    empty = nodes.slice(0, 0)
    assert merged_rows("nodes", empty, dead_nodes, dead_docs).num_rows == 0


def _entry(name, rows, t=None):
    e = {"file": name, "rows": rows}
    if t is not None:
        e["tier"] = t
    return e


def test_run_to_merge_takes_full_runs_of_one_tier_only():
    policy = maintenance(store_merge_fanin=3)

    def run_to_merge(entries):
        return merging.run_to_merge(entries, policy)

    parquet = [_entry(f"s{i}.parquet", 10) for i in range(3)]
    assert run_to_merge(parquet) == 3  # written before tiers: a commit's Parquet is tier 0
    assert run_to_merge(parquet[:2]) == 0
    base = _entry("build.arrow", 10**6)  # a build's or a compaction's mapped segment
    assert tier(base) is None
    assert run_to_merge([base, *parquet[:2]]) == 0
    assert run_to_merge([_entry("a.arrow", 9000, 1), *parquet[:2]]) == 0
    assert run_to_merge([_entry(f"m{i}.arrow", 9000, 1) for i in range(3)]) == 3
    big = [_entry(f"b{i}.parquet", policy.store_merge_max_rows // 2) for i in range(3)]
    assert run_to_merge(big) == 0  # bulk commits stay as they are


def test_a_full_disk_while_merging_keeps_the_last_version_and_removes_the_files(
    tmp_path, monkeypatch
):
    """The commit that merges runs out of space writing the merged segment: the index stays
    at its last version without the commit's files, and merges once there is room."""
    import pyarrow.parquet as pq

    from graphstrata.engine.store import StoreWriteError

    root = tmp_path / "ix"
    store = _create(root, 3)
    rng = np.random.default_rng(2)
    for _ in range(2):
        _random_commit(store, rng)
    files_before = sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())
    content_before = _content(root)
    real_write = pq.write_table
    node_files: list[str] = []
    merged_paths: list[str] = []

    def full_when_merging(table, where, **kwargs):
        if "nodes-" in str(where) and table.num_rows:
            node_files.append(str(where))
            if len(node_files) == 2:  # the commit's own node segment first, then the merged
                merged_paths.append(str(where))
                Path(where).write_bytes(b"PAR1 half a segment")
                raise OSError("6528 requested and 5088 written")
        return real_write(table, where, **kwargs)

    monkeypatch.setattr(pq, "write_table", full_when_merging)
    with pytest.raises(StoreWriteError, match="stays at version 2"):
        _random_commit(store, rng)
    assert merged_paths, "the commit did not reach its merge"
    assert sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file()) == files_before
    assert Store.open(root).version == 2 and _content(root) == content_before
    monkeypatch.setattr(pq, "write_table", real_write)
    _random_commit(store, rng)
    assert [tier(e) for e in Store.open(root).manifest["segments"]["nodes"]] == [1]


def test_a_run_whose_rows_all_died_leaves_no_segment(tmp_path):
    store = _create(tmp_path / "ix", 2)
    with store.writer():
        delta = store.new_delta()
        ids = delta.new_node_ids(2)
        delta.add_nodes(ids, int(NodeKind.T), ["a", "b"], np.ones(2), [[0], [0]])
        store.commit(delta)
    with store.writer():  # rewrites a and deletes both: the two node segments merge to nothing
        delta = store.new_delta()
        delta.replace_rows(store.load().nodes.take(ids[:1]), parent=[-1])
        delta.delete_nodes(ids)
        store.commit(delta)
    segments = Store.open(tmp_path / "ix").manifest["segments"]
    assert segments["nodes"] == [] and len(segments["node_tombstones"]) == 1
    assert len(Store.open(tmp_path / "ix").load().nodes) == 0


def test_a_merge_checks_the_segments_it_reads_from_disk(tmp_path):
    """A writer that did not write a segment reads it from its file to merge it: a file
    whose bytes changed (same size) stops the commit instead of being merged into a
    segment with a fresh checksum; the index stays at its last version."""
    from graphstrata.engine.store import CorruptIndexError

    root = tmp_path / "ix"
    store = _create(root, 2)
    with store.writer():
        delta = store.new_delta()
        ids = delta.new_node_ids(3)
        delta.add_nodes(ids, int(NodeKind.T), ["a", "b", "c"], np.ones(3), [[0], [0], [0]])
        store.commit(delta)
    (entry,) = Store.open(root).manifest["segments"]["nodes"]
    path = root / entry["file"]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    other = Store.open(root)  # holds nothing: the merge reads the file
    with pytest.raises(CorruptIndexError, match="checksum"), other.writer():
        delta = other.new_delta()
        delta.add_nodes(delta.new_node_ids(1), int(NodeKind.T), ["d"], np.ones(1), [[0]])
        other.commit(delta)
    assert Store.open(root).version == 1
