"""The on-disk store: immutable segments and an atomically replaced manifest.

(docs/architecture.md, "Store".)

Layout of an index directory::

    manifest.json            the current version (write, fsync, rename)
    manifests/v00000007.json every committed version since the last compact (readers pin these)
    segments/*.parquet       nodes, edges, docs and tombstone segments (immutable)
    segments/*.arrow         vector segments: uncompressed Arrow IPC, memory-mapped
    segments/*.npy           component state blobs (e.g. community membership)
    hyperplanes.npy          the LSH hyperplanes, checksummed in the manifest
    vcache/                  usearch index files, one per kind (a cache: ``caches``)
    scache/                  BM25 postings files, one per kind (a cache: ``caches``)
    LOCK                     one writer at a time (flock)

Rules that keep it simple and crash safe:

* A commit writes new segment files first, then the manifest. A writer killed at any point
  leaves the previous manifest, hence the previous version, intact; files it wrote but never
  referenced are removed by the next writer.
* Node rows are keyed by ``id``; a later row with the same id (higher ``version``) replaces an
  earlier one (used to re-parent hierarchy nodes); a tombstone deletes the id for good. Ids
  are never reused.
* Edges are append-only. An edge is live while both of its endpoints are live; duplicate
  edges add their weights. So deleting a node deletes its edges, and "+1 weight" is an append.
* Vectors are keyed by node id and die with their node.
* A commit's table segments are merged with the commits' before them in tiers of
  ``MaintenanceConfig.store_merge_fanin`` (a new segment named by the new manifest; the old ones stay for
  the versions that name them), so a version reads O(log versions) segments per table.
* A commit that cannot write (a full disk) removes the files it wrote and raises
  ``StoreWriteError`` ("no space left on device while writing PATH ..."); the index stays at
  its last version.
* Every file a manifest names is a relative path inside the index directory; an absolute
  path, a ``..`` component or a symlink leading out makes the manifest a ``CorruptIndexError``.
* A whole index is replaced (``graphstrata index --force``) by building a sibling
  ``.NAME.new-*`` and renaming it in (``files.replace_directory``); a swap killed half-way is
  undone by ``files.recover_replace`` (a missing ``NAME`` gets its ``.NAME.old-*`` back).

Modules: ``files`` (checksums, atomic writes, sealed manifests), ``caches`` (cache files:
when to rewrite them, mapped array files), ``schema`` (Arrow schemas), ``merging`` (tiered
merges of commit segments), ``tables`` (live nodes, memory-mapped vectors), ``snapshot`` (one
loaded version), ``delta`` (one operation's pending changes), ``store`` (the directory: open,
load, commit).
"""

from graphstrata.engine.store.delta import Delta
from graphstrata.engine.store.errors import (
    CorruptIndexError,
    IndexLockedError,
    IndexNotFoundError,
    StoreError,
    StoreWriteError,
)
from graphstrata.engine.store.files import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST,
    TABLES,
    read_manifest,
    sha256_file,
)
from graphstrata.engine.store.schema import (
    DOC_SCHEMA,
    EDGE_SCHEMA,
    NODE_SCHEMA,
    TOMBSTONE_SCHEMA,
    vector_schema,
)
from graphstrata.engine.store.snapshot import Snapshot
from graphstrata.engine.store.store import CommitResult, Store
from graphstrata.engine.store.tables import NodeTable, VectorSegment, VectorTable

__all__ = [
    "DOC_SCHEMA",
    "EDGE_SCHEMA",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MANIFEST",
    "NODE_SCHEMA",
    "TABLES",
    "TOMBSTONE_SCHEMA",
    "CommitResult",
    "CorruptIndexError",
    "Delta",
    "IndexLockedError",
    "IndexNotFoundError",
    "NodeTable",
    "Snapshot",
    "Store",
    "StoreError",
    "StoreWriteError",
    "VectorSegment",
    "VectorTable",
    "read_manifest",
    "sha256_file",
    "vector_schema",
]
