"""The engine's side of the index caches (``engine.store.caches``): opening the usearch
indexes from theirs, and writing the stale ones at a commit or a compaction."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphstrata.engine.config import FoldPolicy, IndexConfig
from graphstrata.engine.sparse.index import SparseParts, save_committed_parts
from graphstrata.engine.sparse.postings import KindIndex
from graphstrata.engine.store import Delta, Snapshot
from graphstrata.engine.store.caches import (
    CacheFile,
    Caches,
    cache_is_stale,
    cache_kind_versions,
    cache_path,
    cache_rows_since,
)
from graphstrata.engine.vectors import VectorIndex

__all__ = ["open_vectors", "save_caches", "stale_vector_kinds"]


def open_vectors(root: Path, snapshot: Snapshot, config: IndexConfig) -> VectorIndex:
    """The usearch indexes of ``snapshot``: its cache files mapped and brought to its
    version, or built from the vector segments when there is no usable cache.

    Parameters
    ----------
    root:
        The index directory.
    snapshot:
        The version opened.
    config:
        The index's configuration (vector dtype, search expansion, maintenance policies).
    """
    dtype = config.vector_dtype
    ef = config.search.expansion_search
    policy = config.maintenance
    cache = snapshot.manifest.get("vector_cache") or {}
    if "kinds" in cache:
        files = {k: CacheFile(root / f, v) for k, (f, v) in cache_kind_versions(cache).items()}
        if all(f.path.exists() for f in files.values()):
            return VectorIndex.restore(files, snapshot.vectors, dtype, ef, policy)
    elif "file" in cache and (root / cache["file"]).exists():  # written before per kind
        return VectorIndex.restore_single_file(
            root / cache["file"], snapshot.vectors, int(cache["version"]), dtype, ef, policy
        )
    return VectorIndex.build(snapshot.vectors, dtype, ef, policy)


def stale_vector_kinds(
    snapshot: Snapshot, delta: Delta, vectors: VectorIndex, policy: FoldPolicy
) -> list[int]:
    """Kinds whose usearch base should be written with the version ``delta`` commits.

    A kind whose base was rebuilt since its file (``VectorIndex.unsaved``) and whose vectors
    written since that file's version, this commit's included, reach the stale share of the
    kind (``cache_is_stale``). Writing a rebuilt base at once instead made every open of the
    1M-chunk scale index map it instead of copying it again (0.32 s), but wrote the
    summaries' 87 MB base every ~16 writes (5 MB a write, amortized) when the base was
    rewritten every 370 removals (the bound then: 1 in 256 of it, at most 1,024); a small base losing ~20-30 vectors a write, as those
    summaries did, would be rebuilt and written every few writes (inferred, not measured):
    bytes that grow with the kind, not with the change. A base made anew from its vectors
    (``VectorIndex.made_unsaved``: past the ``vector_removed`` policy, one in eight of it dead) is
    written at once, as a reader would make it again (seconds, not a copy): once per
    eighth of the base dying, so its bytes per dead vector are constant. A kind never
    rebuilt is not written: its reader applies the fresh vectors and dead ids the writer
    keeps, bounded as those. The kind's rows are counted from the vector segments newer than its file
    (``VectorTable.rows_since``), not from a pass over every live vector.
    """
    unsaved = vectors.unsaved()
    if not unsaved:
        return []
    made = set(vectors.made_unsaved())
    files = cache_kind_versions(snapshot.manifest.get("vector_cache"))
    added = np.bincount(delta.vector_kinds, minlength=256)
    since: dict[int, np.ndarray] = {}
    stale = []
    for kind in unsaved:
        version = files[kind][1] if kind in files else -1
        if version not in since:
            since[version] = snapshot.vectors.rows_since(version)
        rows = int(since[version][kind]) + int(added[kind])
        if kind in made or cache_is_stale(rows, vectors.count([kind]), policy):
            stale.append(kind)
    return stale


def save_caches(
    root: Path,
    snapshot: Snapshot,
    sparse: SparseParts,
    vectors: VectorIndex,
    policy: FoldPolicy,
    delta: Delta | None = None,
) -> tuple[Caches, dict[int, KindIndex]]:
    """Write the caches of the next version that are stale, before it is committed.

    Both amortized: a cache is written again when a quarter of its rows are newer than it
    (``engine.store.caches.cache_is_stale``, the ``cache_stale`` policy), so small writes write little and opening
    applies at most that quarter to the files it maps. The vector cache counts per kind
    (``stale_vector_kinds``) and writes a stale kind's base; the BM25 cache counts the node
    rows. A compaction writes both whole.

    Parameters
    ----------
    root:
        The index directory.
    snapshot:
        The version the commit is made on.
    sparse:
        Its BM25 parts: their kinds (``Component.sparse_kinds``) are the sparse cache's.
    vectors:
        The usearch indexes of the next version.
    policy:
        When a cache is stale (``MaintenanceConfig.cache_stale``).
    delta:
        What the commit writes; None for a compaction, which writes every cache.

    Returns
    -------
    tuple
        The files to record in the commit, and the BM25 collections saved (to share with
        the committed version: ``SparseParts.advanced``).
    """
    manifest = snapshot.manifest
    version = snapshot.version + 1
    caches: Caches = {}

    def vector_file(kind: int) -> Path:
        return cache_path(root, "vector_cache", version, kind, "usearch")

    if delta is None:
        caches["vector_cache"] = vectors.save_merged(vector_file, version)
    else:
        stale_kinds = stale_vector_kinds(snapshot, delta, vectors, policy)
        if stale_kinds:
            caches["vector_cache"] = vectors.save_bases(vector_file, stale_kinds)
    kinds = list(sparse.kinds)
    changed_nodes = int(delta.nodes.num_rows) if delta is not None else 0
    stale = cache_rows_since(manifest, "sparse_cache") + changed_nodes
    parts: dict[int, KindIndex] = {}
    if kinds and (delta is None or cache_is_stale(stale, len(snapshot.nodes), policy)):
        files, parts = save_committed_parts(
            sparse,
            delta,
            kinds,
            lambda kind: cache_path(root, "sparse_cache", version, kind, "postings"),
        )
        caches["sparse_cache"] = {kind: CacheFile(path, version) for kind, path in files.items()}
    return caches, parts
