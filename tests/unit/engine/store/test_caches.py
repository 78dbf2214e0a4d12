"""Cache files: mapped arrays, BM25 postings and usearch indexes saved and opened again."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from graphstrata.bindings.llm.extractive import ExtractiveLLM
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.index import Engine
from graphstrata.engine.modes.bm25 import SparseComponent
from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.sparse import cache as sparse_cache
from graphstrata.engine.sparse import index as sparse_index
from graphstrata.engine.sparse.postings import KindIndex
from graphstrata.engine.store import caches
from graphstrata.engine.store.caches import cache_is_stale, map_arrays, save_arrays
from graphstrata.engine.store.tables import VectorSegment, VectorTable
from graphstrata.engine.types import NodeKind
from graphstrata.engine.vectors import VectorIndex
from tests.helpers.maintenance import maintenance
from tests.helpers.sparse import QUERIES, assert_same_as_fresh, fresh_ranking, random_texts

T = int(NodeKind.T)


# ---------------------------------------------------------------------- array files
def test_arrays_come_back_equal_and_read_only(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {
        "ints": rng.integers(-(2**40), 2**40, 1001),
        "empty": np.zeros(0, np.int32),
        "bytes": np.frombuffer(b"lens\nferry", np.uint8),
        "matrix": rng.standard_normal((7, 5)).astype(np.float32),
        "flags": rng.random(13) < 0.5,
        "one": np.array([3], np.uint8),
    }
    path = tmp_path / "a.bin"
    save_arrays(path, arrays, {"format": "x", "n": 3})
    got, meta = map_arrays(path)
    assert meta == {"format": "x", "n": 3}
    assert set(got) == set(arrays)
    for key, want in arrays.items():
        assert got[key].dtype == want.dtype and got[key].shape == want.shape
        np.testing.assert_array_equal(got[key], want)
        assert not got[key].flags.writeable
    with pytest.raises(ValueError):
        got["ints"][0] = 1


def test_a_truncated_or_foreign_array_file_is_refused(tmp_path):
    path = tmp_path / "a.bin"
    save_arrays(path, {"x": np.arange(1000)}, {})
    data = path.read_bytes()
    path.write_bytes(data[:-8])
    with pytest.raises(ValueError, match="truncated"):
        map_arrays(path)
    path.write_bytes(b"NOTARRAY" + data[8:])
    with pytest.raises(ValueError, match="magic"):
        map_arrays(path)
    path.write_bytes(b"GS")
    with pytest.raises(ValueError, match="too short"):
        map_arrays(path)


def test_a_cache_is_stale_from_a_quarter_of_the_rows_and_a_floor():
    policy = MaintenanceConfig().cache_stale
    assert not cache_is_stale(policy.minimum - 1, 100, policy)
    assert cache_is_stale(policy.minimum, 100, policy)
    assert not cache_is_stale(24_999, 100_000, policy)
    assert cache_is_stale(25_000, 100_000, policy)


# ---------------------------------------------------------------------- postings
def _change(
    rng: random.Random,
    index: KindIndex,
    live: dict[int, str],
    n_dead: int,
    n_new: int,
    first_id: int,
) -> KindIndex:
    """``index`` with ``n_dead`` random live ids removed and ``n_new`` texts added; ``live``
    (id -> text) is updated to match."""
    dead = rng.sample(sorted(live), n_dead)
    add = {first_id + i: t for i, t in enumerate(random_texts(rng, n_new))}
    for i in dead:
        del live[i]
    live.update(add)
    return index.changed(
        np.array(dead), np.array(list(add)), list(add.values()), MaintenanceConfig()
    )


@pytest.mark.parametrize("seed", range(3))
def test_saved_postings_search_like_a_fresh_build_and_advance_alike(tmp_path, seed):
    rng = random.Random(seed)
    live = dict(enumerate(random_texts(rng, 40)))
    index = KindIndex.build(np.array(sorted(live)), [live[i] for i in sorted(live)])
    # Tombstones and several segments before saving: the file holds the compacted index.
    index = _change(rng, index, live, n_dead=9, n_new=6, first_id=100)
    path = tmp_path / "k.postings"
    sparse_cache.save_part(index, path)
    loaded = sparse_cache.load_part(path)
    queries = QUERIES + random_texts(rng, 3)
    assert_same_as_fresh(loaded, live, queries)
    assert not loaded.segments[0].post_slot.flags.writeable  # mapped, not copied
    # The mapped collection advances like any other (nothing of it is written).
    advanced = _change(rng, loaded, live, n_dead=5, n_new=5, first_id=200)
    assert_same_as_fresh(advanced, live, queries)


def test_an_empty_collection_saves_and_loads(tmp_path):
    path = tmp_path / "k.postings"
    sparse_cache.save_part(KindIndex.build(np.zeros(0, np.int64), []), path)
    loaded = sparse_cache.load_part(path)
    assert loaded.n_live == 0 and loaded.search("lens", 5)[0].size == 0
    grown = loaded.changed(np.zeros(0, np.int64), np.array([4]), ["lens maker"], None)
    assert grown.search("lens", 5)[0].tolist() == [4]


def test_a_postings_file_of_another_format_is_refused(tmp_path):
    path = tmp_path / "k.postings"
    save_arrays(path, {"x": np.arange(3)}, {"format": "something-else"})
    with pytest.raises(ValueError, match="format"):
        sparse_cache.load_part(path)


# ---------------------------------------------------------------------- an engine
def _engine(path, hashing_embedder, create: bool, min_rows: int | None = None) -> Engine:
    """A bm25-only engine; ``min_rows``: the ``cache_stale`` policy's floor of rows."""
    config = IndexConfig()
    config.hierarchy.enabled = False
    config.heterograph.enabled = False
    if min_rows is not None:
        config.maintenance = maintenance(cache_stale={"minimum": min_rows})
    if create:
        return Engine.create(
            path, config, hashing_embedder, ExtractiveLLM(), components=[SparseComponent()]
        )
    return Engine.open(path, hashing_embedder, ExtractiveLLM(), components=[SparseComponent()])


def _bm25(engine: Engine, query: str) -> tuple[list[int], list[float]]:
    ids, scores = engine.state.views["bm25"].sparse.search(query, [T], 50)
    return ids.tolist(), scores.tolist()


def _no_tokenizing(*args):
    raise AssertionError("the postings were tokenized from the texts, not read from the cache")


def _cached(tmp_path, hashing_embedder, docs, monkeypatch) -> tuple[Path, Engine]:
    """An index of ``docs`` whose first commit wrote the caches (no row floor)."""
    path = tmp_path / "idx"
    engine = _engine(path, hashing_embedder, create=True, min_rows=0)
    engine.insert(docs)
    return path, engine


def _assert_bm25_as_fresh(engine: Engine, query: str) -> None:
    want_ids, want_scores = fresh_ranking(engine, query)
    got_ids, got_scores = _bm25(engine, query)
    assert got_ids == want_ids
    np.testing.assert_allclose(got_scores, want_scores, rtol=1e-6)


def test_a_new_process_reads_the_postings_from_the_cache(
    tmp_path, hashing_embedder, sample_docs, monkeypatch
):
    path, engine = _cached(tmp_path, hashing_embedder, sample_docs[:20], monkeypatch)
    manifest = engine.store.manifest
    assert set(manifest["sparse_cache"]["kinds"]) == {str(T)}
    assert manifest["vector_cache"]["kinds"]
    query = "Meridian Optics lens gratings observatory"
    want = fresh_ranking(engine, query)
    with monkeypatch.context() as m:
        m.setattr(sparse_index, "_texts_part", _no_tokenizing)
        reopened = _engine(path, hashing_embedder, create=False)
        _assert_bm25_as_fresh(reopened, query)
        # the committing process shares the collections it saved: nothing rebuilt there
        assert _bm25(engine, query)[0] == want[0]
    # Writes too small to rewrite the cache: a reader applies them to the cached postings.
    engine.config.maintenance = maintenance(cache_stale={"minimum": 10**9})
    cached_at = manifest["sparse_cache"]["version"]
    engine.insert(sample_docs[20:26])
    engine.delete([d["doc_id"] for d in sample_docs[:3]])
    engine.insert([dict(sample_docs[5], text="The quokkaberry harvest began in Brekkvik.")])
    assert engine.store.manifest["sparse_cache"]["version"] == cached_at
    with monkeypatch.context() as m:
        m.setattr(sparse_index, "_texts_part", _no_tokenizing)
        reopened = _engine(path, hashing_embedder, create=False)
        for q in [query, "quokkaberry harvest", "lens"]:
            _assert_bm25_as_fresh(reopened, q)
        hits = reopened.query("quokkaberry", mode="bm25").nodes
        assert [h.docs for h in hits] == [[sample_docs[5]["doc_id"]]]


def test_an_unreadable_postings_cache_is_rebuilt_from_the_texts(
    tmp_path, hashing_embedder, sample_docs, monkeypatch
):
    path, engine = _cached(tmp_path, hashing_embedder, sample_docs[:12], monkeypatch)
    entry = engine.store.manifest["sparse_cache"]["kinds"][str(T)]
    file = path / entry["file"]
    file.write_bytes(b"\0" * file.stat().st_size)  # same size: opening does not notice
    reopened = _engine(path, hashing_embedder, create=False)
    query = "observatory spectrograph lens"
    assert _bm25(reopened, query)[0] == fresh_ranking(reopened, query)[0]


def test_compact_writes_both_caches_of_the_compacted_version(
    tmp_path, hashing_embedder, sample_docs, monkeypatch
):
    path = tmp_path / "idx"
    engine = _engine(path, hashing_embedder, create=True, min_rows=10**9)  # no write rewrites
    engine.insert(sample_docs[:15])
    assert not engine.store.manifest.get("sparse_cache")
    engine.compact()
    manifest = engine.store.manifest
    assert manifest["sparse_cache"]["version"] == manifest["version"]
    assert manifest["vector_cache"]["version"] == manifest["version"]
    query = "harvest ferry fjord"
    with monkeypatch.context() as m:
        m.setattr(sparse_index, "_texts_part", _no_tokenizing)
        reopened = _engine(path, hashing_embedder, create=False)
        assert _bm25(reopened, query)[0] == fresh_ranking(reopened, query)[0]
        naive = [h.id for h in reopened.query(query, mode="naive").nodes]
        assert naive == [h.id for h in engine.query(query, mode="naive").nodes]


# ---------------------------------------------------------------------- vectors
def _rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("removed_max", [64, 3])
def test_mapped_vector_cache_brought_to_a_later_version_answers_exactly(tmp_path, removed_max):
    """The cache of version 1 opened at version 2 (vectors removed and added since): the
    mapped bases are never modified; below vector_exact_below usearch is exact, so the results are
    the brute-force top-k of the live vectors (with a small ``vector_removed`` minimum, the
    merge path)."""
    policy = maintenance(vector_removed={"minimum": removed_max})
    rng = np.random.default_rng(0)
    dim, s, t = 16, int(NodeKind.S), int(NodeKind.T)
    ids1 = np.arange(1, 201, dtype=np.int64)
    kinds1 = np.where(ids1 % 3 == 0, t, s).astype(np.uint8)
    mat1 = _rows(rng, ids1.size, dim)
    seg1 = VectorSegment(ids1, kinds1, mat1, 1)
    built = VectorIndex.build(VectorTable(dim, [seg1], ids1), maintenance=policy)
    assert built.unsaved() == sorted([s, t])
    paths = built.save_bases(lambda kind: tmp_path / f"k{kind}.usearch", built.unsaved())
    assert sorted(paths) == sorted([s, t]) and {f.version for f in paths.values()} == {1}
    ids2 = np.arange(201, 231, dtype=np.int64)
    kinds2 = np.where(ids2 % 2 == 0, t, s).astype(np.uint8)
    mat2 = _rows(rng, ids2.size, dim)
    dead = rng.choice(ids1, 10, replace=False)
    live = np.setdiff1d(np.concatenate([ids1, ids2]), dead)
    table = VectorTable(dim, [seg1, VectorSegment(ids2, kinds2, mat2, 2)], live)
    opened = VectorIndex.restore(paths, table, maintenance=policy)
    queries = _rows(rng, 6, dim)
    all_ids = np.concatenate([ids1, ids2])
    all_kinds = np.concatenate([kinds1, kinds2])
    all_mat = np.concatenate([mat1, mat2])
    for kind in (s, t):
        keep = (all_kinds == kind) & np.isin(all_ids, live)
        sims = queries @ all_mat[keep].T
        want = [all_ids[keep][np.argsort(-row, kind="stable")[:5]].tolist() for row in sims]
        got, _ = opened.search(queries, [kind], 5)
        assert [g.tolist() for g in got] == want
        assert opened.count([kind]) == int(keep.sum())
    # The files were mapped, not modified: the version-1 cache still answers as before.
    again = VectorIndex.restore(paths, VectorTable(dim, [seg1], ids1), maintenance=policy)
    for kind in (s, t):
        a, _ = again.search(queries, [kind], 5)
        b, _ = built.search(queries, [kind], 5)
        assert [x.tolist() for x in a] == [x.tolist() for x in b]


def test_the_single_file_cache_of_older_indexes_still_opens(tmp_path):
    rng = np.random.default_rng(1)
    dim, s = 16, int(NodeKind.S)
    ids = np.arange(1, 81, dtype=np.int64)
    kinds = np.full(ids.size, s, np.uint8)
    seg = VectorSegment(ids, kinds, _rows(rng, ids.size, dim), 1)
    built = VectorIndex.build(VectorTable(dim, [seg], ids))
    path = tmp_path / "usearch-v00000001.npz"
    blob = bytes(built.by_kind[s].save())
    np.savez(path, **{str(s): np.frombuffer(blob, np.uint8)})  # the format written until now
    live = ids[ids % 7 != 0]
    opened = VectorIndex.restore_single_file(path, VectorTable(dim, [seg], live), 1)
    queries = _rows(rng, 4, dim)
    got, _ = opened.search(queries, [s], 5)
    want, _ = VectorIndex.build(VectorTable(dim, [seg], live)).search(queries, [s], 5)
    assert [g.tolist() for g in got] == [w.tolist() for w in want]


def _brute_top(table: VectorTable, kind: int, queries: np.ndarray, k: int) -> list[list[int]]:
    ids = table.ids[table.kinds == kind]
    sims = queries @ table.get(ids).T
    return [ids[np.argsort(-row, kind="stable")[:k]].tolist() for row in sims]


def test_a_base_rebuilt_by_a_write_is_saved_alone_and_opens_without_a_copy(tmp_path):
    """Writes that rewrite one kind's vectors pass its removal limit: the writer makes that
    base anew from its live and fresh vectors. Saved as a base with the version it holds,
    the file opens into the writer's state (same fresh and dead parts after the writes
    since, nothing rebuilt: ``unsaved`` empty), answering exactly; the other kind is not
    rewritten."""
    policy = maintenance(vector_removed={"minimum": 3})
    rng = np.random.default_rng(11)
    dim, s, t = 16, int(NodeKind.S), int(NodeKind.T)
    ids = np.arange(1, 121, dtype=np.int64)
    kinds = np.where(ids <= 90, t, s).astype(np.uint8)
    segs = [VectorSegment(ids, kinds, _rows(rng, ids.size, dim), 1)]
    table = VectorTable(dim, segs, ids)
    writer = VectorIndex.build(table, maintenance=policy)
    files = writer.save_bases(lambda k: tmp_path / f"v1-k{k}.usearch", writer.unsaved())
    writer.mark_saved(files)
    rebuilt_at = None
    next_id = 121
    for version in range(2, 8):  # each write replaces one S vector (a rewritten summary)
        dead = np.asarray([90 + version - 1], np.int64)
        new = np.asarray([next_id], np.int64)
        next_id += 1
        mat = _rows(rng, 1, dim)
        live = np.sort(np.concatenate([np.setdiff1d(table.ids, dead), new]))
        segs.append(VectorSegment(new, np.full(1, s, np.uint8), mat, version))
        table = VectorTable(dim, segs, live)
        writer = writer.updated(new, np.full(1, s, np.uint8), mat, dead, version)
        if writer.unsaved():
            assert writer.unsaved() == [s]  # only the kind whose base was copied
            rebuilt_at = rebuilt_at or version
            written = writer.save_bases(
                lambda k, v=version: tmp_path / f"v{v}-k{k}.usearch", writer.unsaved()
            )
            assert {k: f.version for k, f in written.items()} == {s: version}
            writer.mark_saved(written)
            files.update(written)
    assert rebuilt_at is not None and writer.fresh[s][0].size > 0
    opened = VectorIndex.restore(files, table, maintenance=policy)
    assert opened.unsaved() == []  # nothing copied at the open
    np.testing.assert_array_equal(opened.fresh[s][0], writer.fresh[s][0])
    np.testing.assert_array_equal(opened.removed.get(s, ids[:0]), writer.removed.get(s, ids[:0]))
    queries = _rows(rng, 5, dim)
    for kind in (s, t):
        got, _ = opened.search(queries, [kind], 6)
        assert [g.tolist() for g in got] == _brute_top(table, kind, queries, 6)
        assert opened.count([kind]) == int((table.kinds == kind).sum())


def test_a_kind_without_a_cache_file_is_built_at_the_open(tmp_path):
    rng = np.random.default_rng(12)
    dim, s, t = 16, int(NodeKind.S), int(NodeKind.T)
    ids = np.arange(1, 61, dtype=np.int64)
    kinds = np.where(ids % 2 == 0, t, s).astype(np.uint8)
    table = VectorTable(dim, [VectorSegment(ids, kinds, _rows(rng, ids.size, dim), 3)], ids)
    built = VectorIndex.build(table)
    files = built.save_bases(lambda k: tmp_path / f"k{k}.usearch", [t])
    opened = VectorIndex.restore(files, table)
    assert opened.unsaved() == [s]  # built here, so the next commit writes it
    queries = _rows(rng, 3, dim)
    for kind in (s, t):
        got, _ = opened.search(queries, [kind], 4)
        assert [g.tolist() for g in got] == _brute_top(table, kind, queries, 4)


def test_a_commit_records_only_the_kinds_it_wrote():
    manifest = {"vector_cache": {"version": 4, "kinds": {"3": {"file": "a", "bytes": 1}}}}

    def entry(path: Path) -> dict:
        return {"file": path.name, "sha256": "x", "bytes": 10}

    written = caches.record_caches(
        manifest, {"vector_cache": {5: caches.CacheFile(Path("b"), 7)}}, 9, entry
    )
    assert written == 10
    assert manifest["vector_cache"] == {
        "version": 4,
        "kinds": {
            "3": {"file": "a", "bytes": 1, "version": 4},
            "5": {"file": "b", "sha256": "x", "bytes": 10, "version": 7},
        },
    }
    assert caches.cache_kind_versions(manifest["vector_cache"]) == {3: ("a", 4), 5: ("b", 7)}
    with pytest.raises(ValueError, match="holds version 10 > 9"):
        caches.record_caches(
            manifest, {"vector_cache": {5: caches.CacheFile(Path("c"), 10)}}, 9, entry
        )


def test_rows_since_counts_each_kind_of_the_newer_segments():
    """Against a count over every row with its segment's version (dead rows included)."""
    rng = np.random.default_rng(13)
    dim, segs, next_id = 4, [], 1
    for version in (1, 2, 2, 5, 7):
        n = int(rng.integers(0, 9))
        ids = np.arange(next_id, next_id + n, dtype=np.int64)
        next_id += n
        kinds = rng.choice([1, 2, 8], n).astype(np.uint8)
        segs.append(VectorSegment(ids, kinds, _rows(rng, n, dim), version))
    every = np.concatenate([s.ids for s in segs])
    table = VectorTable(dim, segs, every[every % 3 != 0])  # some rows dead
    for since in (-1, 0, 1, 2, 4, 5, 7, 9):
        want = np.zeros(256, np.int64)
        for s in segs:
            if s.version > since:
                np.add.at(want, s.kinds.astype(np.int64), 1)
        np.testing.assert_array_equal(table.rows_since(since), want)
    assert VectorTable(dim, [], np.zeros(0, np.int64)).rows_since(-1).sum() == 0
