"""The engine's side of the index caches (``engine.store.caches``): opening the usearch
indexes from theirs, and writing the stale ones at a commit or a compaction.

A cache file that cannot be read (a corrupted header: usearch's "Not a dense USearch
index!") is rebuilt from the vector segments with a warning naming it, instead of failing
every command (issue 51). A cache write that fails (a full disk) removes the files it wrote
at once and is one ``StoreWriteError`` naming the file and the version the index stays at.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from usearch.index import Index as UsearchIndex

from graphstrata.engine.config import IndexConfig
from graphstrata.engine.policies import FoldPolicy
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
from graphstrata.engine.store.errors import StoreWriteError
from graphstrata.engine.store.files import write_failure_cause
from graphstrata.engine.vectors import VectorIndex

__all__ = ["open_vectors", "save_caches", "stale_vector_kinds"]

log = logging.getLogger(__name__)

#: What usearch's ``save`` raises when the file cannot be written (a full disk included).
_USEARCH_WRITE_FAILURES = ("serialize", "stream", "write")


def _unreadable(root: Path, paths: list[Path], exc: Exception) -> None:
    """Warn that the vector cache at ``paths`` is unusable and is rebuilt (naming the bad
    file: the one whose usearch header does not read, else every file of the cache)."""
    if not all(path.exists() for path in paths):
        # Removed since the manifest was read: a compaction committed meanwhile (not damage).
        log.info("%s: vector cache swept by a compaction; building from the segments", root)
        return
    bad = []
    for path in paths:
        try:
            UsearchIndex.metadata(str(path))
        except (ValueError, RuntimeError, OSError):
            bad.append(path)
    names = ", ".join(str(p.relative_to(root)) for p in bad or paths)
    log.warning(
        "%s: vector cache %s is unreadable (%s: %s); rebuilding the vector index from the "
        "vector segments (a cache: `graphstrata compact` writes it anew)",
        root,
        names,
        type(exc).__name__,
        exc,
    )


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
            try:
                return VectorIndex.restore(files, snapshot.vectors, dtype, ef, policy)
            except (ValueError, RuntimeError, OSError) as exc:
                _unreadable(root, [f.path for f in files.values()], exc)
    elif "file" in cache and (root / cache["file"]).exists():  # written before per kind
        try:
            return VectorIndex.restore_single_file(
                root / cache["file"], snapshot.vectors, int(cache["version"]), dtype, ef, policy
            )
        except (ValueError, RuntimeError, OSError) as exc:
            _unreadable(root, [root / cache["file"]], exc)
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
    (``engine.store.caches.cache_is_stale``, the ``cache_stale`` policy), so small writes write
    little and opening applies at most that quarter to the files it maps. The vector cache counts per kind
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
    with _removed_on_failure(root, snapshot.version) as track:
        return _save_caches(root, snapshot, sparse, vectors, policy, delta, track)


@contextlib.contextmanager
def _removed_on_failure(root: Path, version: int) -> Iterator[Callable[[Path], Path]]:
    """Track the cache files a block writes; if it fails, remove them at once, and a write
    error (an ``OSError``, or usearch's "Failed to serialize into stream") becomes one
    ``StoreWriteError`` naming the file being written and the version the index stays at."""
    written: list[Path] = []

    def track(path: Path) -> Path:
        written.append(path)
        return path

    try:
        yield track
    except (OSError, RuntimeError) as exc:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        text = str(exc).lower()
        if isinstance(exc, OSError):
            cause = write_failure_cause(exc)
        elif any(word in text for word in _USEARCH_WRITE_FAILURES):
            full = shutil.disk_usage(root).free < (1 << 20)
            cause = "no space left on device" if full else f"usearch could not save ({exc})"
        else:
            raise
        where = written[-1] if written else root
        raise StoreWriteError(
            f"{cause} while writing {where}: nothing was committed and the cache files "
            f"written were removed; the index is still at version {version}",
            getattr(exc, "errno", None),
        ) from exc


def _save_caches(
    root: Path,
    snapshot: Snapshot,
    sparse: SparseParts,
    vectors: VectorIndex,
    policy: FoldPolicy,
    delta: Delta | None,
    track: Callable[[Path], Path],
) -> tuple[Caches, dict[int, KindIndex]]:
    manifest = snapshot.manifest
    version = snapshot.version + 1
    caches: Caches = {}

    def vector_file(kind: int) -> Path:
        return track(cache_path(root, "vector_cache", version, kind, "usearch"))

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
            lambda kind: track(cache_path(root, "sparse_cache", version, kind, "postings")),
        )
        caches["sparse_cache"] = {kind: CacheFile(path, version) for kind, path in files.items()}
    return caches, parts
