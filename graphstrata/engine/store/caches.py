"""Cache files of an index: derived structures saved so that opening does not rebuild them.

Two caches, each rebuildable from the segments at any time:

``vector_cache``
    One usearch HNSW file per embedded node kind (``vcache/``), memory-mapped on open.
``sparse_cache``
    One BM25 postings file per indexed node kind (``scache/``, ``engine.sparse.cache``),
    memory-mapped on open.

A cache is recorded in the manifest as ``{"version": v, "kinds": {"<kind>": entry}}``, where
each entry is a file entry like a segment's (path, SHA-256, bytes) and the version whose rows
its file holds. A reader brings each kind's file to its own version with the changes
committed since that kind's version (rows with a newer ``version``, ids no longer live);
``v`` is the oldest kind's (manifests written before the per-kind versions have only ``v``).
A commit records the kinds it wrote and keeps the others' entries, so that a kind is written
when it changed enough, not when another did: the BM25 cache rewrites its kinds when
:func:`cache_is_stale` (the rows changed since it reach the ``cache_stale`` policy: a
quarter of the index), the vector
cache a kind whose own vectors since its file reach a quarter of the kind and whose HNSW
base a writer rebuilt since (``engine.read_caches.stale_vector_kinds``).

Array files (:func:`save_arrays`, :func:`map_arrays`) are a JSON header followed by raw
arrays at 64-byte aligned offsets, so that a reader maps them without a copy.
"""

from __future__ import annotations

import json
import mmap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from graphstrata.engine.policies import FoldPolicy

__all__ = [
    "CACHE_FOLDERS",
    "CACHE_NAMES",
    "CacheFile",
    "Caches",
    "cache_entries",
    "cache_is_stale",
    "cache_kind_versions",
    "cache_path",
    "cache_paths",
    "cache_rows_since",
    "map_arrays",
    "record_caches",
    "save_arrays",
]

#: Manifest key of each cache -> the folder its files live in.
CACHE_FOLDERS = {"vector_cache": "vcache", "sparse_cache": "scache"}
CACHE_NAMES = tuple(CACHE_FOLDERS)


@dataclass(frozen=True)
class CacheFile:
    """One kind's cache file written by a commit, and the version whose rows it holds (a
    reader applies the rows committed after it)."""

    path: Path
    version: int


#: Cache files a commit records: ``{cache name: {node kind: file written}}``.
Caches = dict[str, dict[int, CacheFile]]

_MAGIC = b"GSARRAY1"
_ALIGN = 64


def cache_path(root: Path, name: str, version: int, kind: int, suffix: str) -> Path:
    """Where a commit of ``version`` writes cache ``name``'s file for ``kind`` (folder made)."""
    folder = root / CACHE_FOLDERS[name]
    folder.mkdir(exist_ok=True)
    return folder / f"{name.split('_')[0]}-v{version:08d}-k{kind}.{suffix}"


def cache_is_stale(stale_rows: int, total_rows: int, policy: FoldPolicy) -> bool:
    """Whether a cache that misses ``stale_rows`` of ``total_rows`` should be written again
    (``policy``: ``MaintenanceConfig.cache_stale``; below its minimum a reader applies the
    changes itself)."""
    return policy.should_fold(stale_rows, total_rows)


def cache_rows_since(manifest: dict[str, Any], name: str) -> int:
    """Node rows committed after cache ``name``'s oldest kind (all rows if it has none)."""
    cache = manifest.get(name) or {}
    since = int(cache["version"]) if "kinds" in cache else -1
    return sum(int(e["rows"]) for e in manifest["segments"]["nodes"] if int(e["version"]) > since)


def cache_kind_versions(cache: dict[str, Any] | None) -> dict[int, tuple[str, int]]:
    """``{kind: (file, version its rows are of)}`` of a per-kind cache record (empty for
    none, or for the single-file record of older indexes)."""
    if not cache or "kinds" not in cache:
        return {}
    return {
        int(k): (e["file"], int(e.get("version", cache["version"])))
        for k, e in cache["kinds"].items()
    }


def cache_entries(manifest: dict[str, Any]) -> list[tuple[str, Any]]:
    """``(what, entry)`` of every cache file a manifest names (for checks and cleanup).

    A vector cache written before caches were per kind (one ``.npz``, ``{"file": ...}``) is
    listed as it is; readers ignore it and rebuild (it is a cache).
    """
    out: list[tuple[str, Any]] = []
    for name in CACHE_NAMES:
        cache = manifest.get(name)
        if not cache:
            continue
        label = name.replace("_", " ")
        if "kinds" not in cache:
            out.append((label, cache))
            continue
        out += [(f"{label} (kind {kind})", e) for kind, e in cache["kinds"].items()]
    return out


def cache_paths(caches: Caches | None) -> list[Path]:
    """Every file of ``caches``."""
    return [f.path for files in (caches or {}).values() for f in files.values()]


def record_caches(
    manifest: dict[str, Any],
    caches: Caches | None,
    version: int,
    entry: Callable[[Path], dict[str, Any]],
) -> int:
    """Record the cache files written for ``version`` in ``manifest``; their bytes.

    A kind given here replaces that kind's entry; the cache's other kinds keep theirs (a
    compaction clears the record first). The record's ``version`` becomes its oldest
    kind's. A record of the older single-file form is replaced whole.
    """
    written = 0
    for name, files in (caches or {}).items():
        if name not in CACHE_FOLDERS:
            raise ValueError(f"unknown cache {name!r} (known: {', '.join(CACHE_NAMES)})")
        before = manifest.get(name) or {}
        kinds = {
            k: {**e, "version": int(e.get("version", before["version"]))}
            for k, e in before.get("kinds", {}).items()
        }
        for kind, file in sorted(files.items()):
            if file.version > version:
                raise ValueError(f"{name} of kind {kind} holds version {file.version} > {version}")
            kinds[str(int(kind))] = {**entry(file.path), "version": int(file.version)}
            written += int(kinds[str(int(kind))]["bytes"])
        oldest = min((int(e["version"]) for e in kinds.values()), default=int(version))
        manifest[name] = {"version": oldest, "kinds": dict(sorted(kinds.items()))}
    return written


def save_arrays(path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    """Write named arrays and a JSON-able ``meta`` into one file for :func:`map_arrays`."""
    header: dict[str, Any] = {"meta": meta, "arrays": {}}
    offset = 0
    layout = []
    for key, array in arrays.items():
        a = np.ascontiguousarray(array)
        offset = -(-offset // _ALIGN) * _ALIGN
        header["arrays"][key] = [a.dtype.str, list(a.shape), offset]
        layout.append((offset, a))
        offset += a.nbytes
    head = json.dumps(header, sort_keys=True).encode()
    start = -(-(len(_MAGIC) + 8 + len(head)) // _ALIGN) * _ALIGN
    with open(path, "wb") as fh:
        fh.write(_MAGIC + len(head).to_bytes(8, "little") + head)
        fh.write(b"\0" * (start - fh.tell()))
        for at, a in layout:
            fh.write(b"\0" * (start + at - fh.tell()))
            a.tofile(fh)


def map_arrays(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and meta of a :func:`save_arrays` file, memory-mapped (read-only).

    Raises
    ------
    ValueError
        When the file is not such a file or is shorter than its header says.
    """
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        if size < len(_MAGIC) + 8:
            raise ValueError(f"{path} is not an array file (too short)")
        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    if buf[: len(_MAGIC)] != _MAGIC:
        raise ValueError(f"{path} is not an array file (bad magic)")
    n = int.from_bytes(buf[len(_MAGIC) : len(_MAGIC) + 8], "little")
    header = json.loads(buf[len(_MAGIC) + 8 : len(_MAGIC) + 8 + n])
    start = -(-(len(_MAGIC) + 8 + n) // _ALIGN) * _ALIGN
    arrays = {}
    for key, (dtype, shape, offset) in header["arrays"].items():
        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        if start + offset + count * dt.itemsize > size:
            raise ValueError(f"{path} is truncated (array {key!r})")
        arrays[key] = np.frombuffer(buf, dt, count, start + offset).reshape(shape)
    return arrays, header["meta"]
