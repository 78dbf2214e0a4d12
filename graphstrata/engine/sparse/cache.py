"""The BM25 cache: each indexed kind's postings saved at a version, memory-mapped on open.

Without it, the first sparse search of a process tokenized every text of its kinds (13-15 s
for the chunks and summaries of 100k chunks, ``benchmarks/results/scale.md``). Writers save
the postings when the cache is stale (``engine.store.caches.cache_is_stale``); a reader maps
the file and applies the rows committed since (``SparseIndex``, ``_build_part``). The files
are recorded in the manifest under ``sparse_cache`` (``engine.store.caches``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from graphstrata.engine.sparse.postings import KindIndex
from graphstrata.engine.store import Snapshot
from graphstrata.engine.store.caches import cache_kind_versions, map_arrays, save_arrays

__all__ = ["FORMAT", "cached_part", "load_part", "save_part"]

log = logging.getLogger(__name__)

#: Format of a postings file (its header's meta says it); another is ignored and rebuilt.
FORMAT = "graphstrata-postings-1"


def save_part(part: KindIndex, path: Path) -> None:
    """Write one kind's collection to ``path`` (compacted: one segment, no tombstones)."""
    save_arrays(path, part.to_arrays(), {"format": FORMAT})


def load_part(path: Path) -> KindIndex:
    """The collection :func:`save_part` wrote, its arrays memory-mapped.

    Raises
    ------
    ValueError
        The file is not a postings file of this format.
    """
    arrays, meta = map_arrays(path)
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path} holds postings of format {meta.get('format')!r}, not {FORMAT}")
    return KindIndex.from_arrays(arrays)


def cached_part(snapshot: Snapshot, kind: int) -> tuple[KindIndex, int] | None:
    """``(collection, version it was saved at)`` of ``kind`` from ``snapshot``'s sparse cache.

    None when the manifest records none for the kind, or its file cannot be read (a cache:
    the caller builds the collection from the texts instead, with a warning naming the file
    when it is there but unreadable).
    """
    entry = cache_kind_versions(snapshot.manifest.get("sparse_cache")).get(int(kind))
    if entry is None:
        return None
    path = snapshot.root / entry[0]
    try:
        return load_part(path), entry[1]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # JSONDecodeError is a ValueError: a corrupted header is read as unreadable.
        if path.exists() and not isinstance(exc, FileNotFoundError):
            log.warning(
                "%s: BM25 cache %s is unreadable (%s); rebuilding it from the texts "
                "(a cache: `graphstrata compact` writes it anew)",
                snapshot.root,
                entry[0],
                exc if not isinstance(exc, json.JSONDecodeError) else "corrupted header",
            )
        return None
