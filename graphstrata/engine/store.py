"""The on-disk store: immutable segments + an atomically replaced manifest (DESIGN §4).

Layout of an index directory::

    manifest.json            the current version (write, fsync, rename)
    manifests/v00000007.json every committed version since the last compact (readers pin these)
    segments/*.parquet       nodes, edges, docs and tombstone segments (immutable)
    segments/*.arrow         vector segments: uncompressed Arrow IPC, memory-mapped
    segments/*.npy           component state blobs (e.g. community membership)
    hyperplanes.npy          the LSH hyperplanes, checksummed in the manifest
    vcache/                  usearch index files: a cache, rebuildable from the vector segments
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
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import signal
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from graphstrata.engine.schema import (
    DOC_SCHEMA,
    EDGE_SCHEMA,
    NODE_SCHEMA,
    TOMBSTONE_SCHEMA,
    vector_schema,
)

FORMAT_NAME = "graphstrata-index"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
TABLES = ("nodes", "edges", "docs", "vectors", "node_tombstones", "doc_tombstones")


class StoreError(RuntimeError):
    """Base class of store errors."""


class CorruptIndexError(StoreError):
    """A manifest or segment failed its checksum, is truncated, or is not ours."""


class IndexLockedError(StoreError):
    """Another writer holds the index lock."""


class IndexNotFoundError(StoreError):
    """The path holds no index."""


def _crashpoint(name: str) -> None:
    """Fault injection for crash-safety tests: SIGKILL this process at a named point."""
    target = os.environ.get("GRAPHSTRATA_CRASH_AT")
    if target and target == name:
        os.kill(os.getpid(), signal.SIGKILL)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _canonical(manifest: dict[str, Any]) -> bytes:
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _seal(manifest: dict[str, Any]) -> bytes:
    manifest["checksum"] = hashlib.sha256(_canonical(manifest)).hexdigest()
    return json.dumps(manifest, indent=1, sort_keys=True).encode()


def read_manifest(path: Path) -> dict[str, Any]:
    """Read and verify one manifest file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise IndexNotFoundError(
            f"no graphstrata index at {path.parent} ({path.name} missing)"
        ) from exc
    try:
        manifest = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptIndexError(f"{path}: manifest is not valid JSON ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise CorruptIndexError(f"{path}: not a graphstrata manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise CorruptIndexError(
            f"{path}: format version {manifest.get('format_version')} is not supported "
            f"(this graphstrata reads {FORMAT_VERSION})"
        )
    expected = hashlib.sha256(_canonical(manifest)).hexdigest()
    if manifest.get("checksum") != expected:
        raise CorruptIndexError(
            f"{path}: manifest checksum mismatch (file was modified or truncated)"
        )
    return manifest


# --------------------------------------------------------------------------------------------
# In-memory tables
# --------------------------------------------------------------------------------------------


def _empty(schema: pa.Schema) -> pa.Table:
    return schema.empty_table()


def _live_nodes(table: pa.Table, dead: np.ndarray) -> pa.Table:
    """Keep the newest row per id, drop tombstoned ids, sort by id."""
    if table.num_rows == 0:
        return table
    ids = table.column("id").to_numpy()
    versions = table.column("version").to_numpy()
    order = np.lexsort((versions, ids))
    sorted_ids = ids[order]
    last = np.ones(sorted_ids.shape[0], dtype=bool)
    last[:-1] = sorted_ids[1:] != sorted_ids[:-1]
    keep = order[last]
    if dead.size:
        keep = keep[~np.isin(ids[keep], dead)]
    return table.take(pa.array(keep))


def _live_edges(table: pa.Table, live_ids: np.ndarray) -> pa.Table:
    if table.num_rows == 0:
        return table
    src = table.column("src").to_numpy()
    dst = table.column("dst").to_numpy()
    mask = _member(src, live_ids) & _member(dst, live_ids)
    if mask.all():
        return table
    return table.filter(pa.array(mask))


def _member(values: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    """``values in sorted_ids`` by binary search (sorted_ids ascending, unique)."""
    if sorted_ids.size == 0:
        return np.zeros(values.shape[0], dtype=bool)
    pos = np.searchsorted(sorted_ids, values)
    pos[pos >= sorted_ids.size] = 0
    return sorted_ids[pos] == values


class NodeTable:
    """The live nodes of one version, sorted by id, with numpy views of the fixed columns."""

    def __init__(self, table: pa.Table):
        self.table = table
        self.ids: np.ndarray = table.column("id").to_numpy()
        self.kind: np.ndarray = table.column("kind").to_numpy()
        self.layer: np.ndarray = table.column("layer").to_numpy()
        self.tokens: np.ndarray = table.column("tokens").to_numpy()
        self.code: np.ndarray = table.column("code").to_numpy()
        self.parent: np.ndarray = table.column("parent").to_numpy()
        self._text: list[str] | None = None
        self._docs: list[list[int]] | None = None

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def contains(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        return _member(np.asarray(ids, dtype=np.int64), self.ids)

    def rows(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        """Row positions of ``ids``; raises KeyError for an id that is not live."""
        ids = np.asarray(ids, dtype=np.int64)
        pos = np.searchsorted(self.ids, ids)
        bad = (pos >= self.ids.shape[0]) | (self.ids[np.minimum(pos, max(len(self) - 1, 0))] != ids)
        if len(self) == 0 and ids.size:
            bad = np.ones(ids.shape[0], dtype=bool)
        if bad.any():
            raise KeyError(f"node ids not in this version: {ids[bad][:10].tolist()}")
        return pos

    @property
    def texts(self) -> list[str]:
        if self._text is None:
            self._text = self.table.column("text").to_pylist()
        return self._text

    @property
    def docs(self) -> list[list[int]]:
        if self._docs is None:
            self._docs = self.table.column("docs").to_pylist()
        return self._docs

    def text_of(self, ids: np.ndarray | Sequence[int]) -> list[str]:
        texts = self.texts
        return [texts[i] for i in self.rows(ids)]

    def docs_of(self, ids: np.ndarray | Sequence[int]) -> list[list[int]]:
        docs = self.docs
        return [docs[i] for i in self.rows(ids)]

    def ids_of_kind(self, *kinds: int) -> np.ndarray:
        return self.ids[np.isin(self.kind, np.asarray(kinds, dtype=np.uint8))]

    def take(self, ids: np.ndarray | Sequence[int]) -> pa.Table:
        return self.table.take(pa.array(self.rows(ids)))


@dataclass
class VectorSegment:
    ids: np.ndarray
    kinds: np.ndarray
    matrix: np.ndarray  # memory-mapped, read-only
    version: int


class VectorTable:
    """All vector segments of a version (memory-mapped); rows of dead nodes are ignored."""

    def __init__(self, dim: int, segments: list[VectorSegment], live_ids: np.ndarray):
        self.dim = dim
        self.segments = segments
        ids = [s.ids for s in segments]
        self._all_ids = np.concatenate(ids) if ids else np.zeros(0, np.int64)
        self._seg_of = (
            np.concatenate([np.full(s.ids.shape[0], i, np.int32) for i, s in enumerate(segments)])
            if segments
            else np.zeros(0, np.int32)
        )
        self._row_of = (
            np.concatenate([np.arange(s.ids.shape[0], dtype=np.int64) for s in segments])
            if segments
            else np.zeros(0, np.int64)
        )
        self._kinds = (
            np.concatenate([s.kinds for s in segments]) if segments else np.zeros(0, np.uint8)
        )
        live = _member(self._all_ids, live_ids)
        self._all_ids = self._all_ids[live]
        self._seg_of = self._seg_of[live]
        self._row_of = self._row_of[live]
        self._kinds = self._kinds[live]
        order = np.argsort(self._all_ids, kind="stable")
        self._sorted_ids = self._all_ids[order]
        self._sorted_pos = order

    def __len__(self) -> int:
        return int(self._all_ids.shape[0])

    @property
    def ids(self) -> np.ndarray:
        return self._all_ids

    @property
    def kinds(self) -> np.ndarray:
        return self._kinds

    def has(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        return _member(np.asarray(ids, dtype=np.int64), self._sorted_ids)

    def get(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        """float32 ``[len(ids), dim]`` (copied out of the mapped segments)."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.empty((ids.shape[0], self.dim), dtype=np.float32)
        if ids.size == 0:
            return out
        pos = np.searchsorted(self._sorted_ids, ids)
        pos = np.minimum(pos, max(self._sorted_ids.shape[0] - 1, 0))
        if self._sorted_ids.size == 0 or np.any(self._sorted_ids[pos] != ids):
            missing = ids if self._sorted_ids.size == 0 else ids[self._sorted_ids[pos] != ids]
            raise KeyError(f"no vector for node ids {missing[:10].tolist()}")
        flat = self._sorted_pos[pos]
        segs = self._seg_of[flat]
        rows = self._row_of[flat]
        for s in np.unique(segs):
            sel = segs == s
            out[sel] = self.segments[int(s)].matrix[rows[sel]]
        return out

    def of_kind(self, kind: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids, float32 matrix) of every live vector of one kind."""
        ids = self._all_ids[self._kinds == kind]
        return ids, self.get(ids)

    def since(self, version: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids, kinds) of live vectors written after ``version``."""
        seg_versions = np.array([s.version for s in self.segments], dtype=np.int64)
        if seg_versions.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.uint8)
        mask = seg_versions[self._seg_of] > version
        return self._all_ids[mask], self._kinds[mask]


@dataclass
class Snapshot:
    """One committed version of the index, fully loaded (vectors memory-mapped)."""

    root: Path
    manifest: dict[str, Any]
    nodes: NodeTable
    edges: pa.Table
    docs: pa.Table
    vectors: VectorTable
    hyperplanes: np.ndarray
    state_arrays: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def version(self) -> int:
        return int(self.manifest["version"])

    @property
    def config(self) -> dict[str, Any]:
        return self.manifest["config"]

    def state(self, component: str, name: str) -> np.ndarray | None:
        return self.state_arrays.get(f"{component}/{name}")

    def component_meta(self, component: str) -> dict[str, Any]:
        return dict(self.manifest.get("components", {}).get(component, {}))

    def doc_keys(self) -> np.ndarray:
        return self.docs.column("key").to_numpy()

    def doc_ids_of_keys(self, keys: Sequence[int]) -> list[str]:
        all_keys = self.docs.column("key").to_numpy()
        names = self.docs.column("doc_id").to_pylist()
        lookup = dict(zip(all_keys.tolist(), names, strict=True))
        return [lookup.get(int(k), f"#{int(k)}") for k in keys]


# --------------------------------------------------------------------------------------------
# Pending changes of one operation
# --------------------------------------------------------------------------------------------


class Delta:
    """Everything one operation will write. Nothing touches disk until ``Store.commit``."""

    def __init__(
        self, version: int, next_node_id: int, next_doc_key: int, dim: int, vector_dtype: str
    ):
        self.version = version
        self.next_node_id = next_node_id
        self.next_doc_key = next_doc_key
        self.dim = dim
        self.vector_dtype = vector_dtype
        self._nodes: list[pa.Table] = []
        self._edges: list[pa.Table] = []
        self._docs: list[pa.Table] = []
        self._vectors: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._dead_nodes: list[np.ndarray] = []
        self._dead_docs: list[np.ndarray] = []
        self.state: dict[str, np.ndarray] = {}
        self.components: dict[str, dict[str, Any]] = {}

    # ids ------------------------------------------------------------------------------------
    def new_node_ids(self, n: int) -> np.ndarray:
        ids = np.arange(self.next_node_id, self.next_node_id + n, dtype=np.int64)
        self.next_node_id += n
        return ids

    def new_doc_keys(self, n: int) -> np.ndarray:
        keys = np.arange(self.next_doc_key, self.next_doc_key + n, dtype=np.int64)
        self.next_doc_key += n
        return keys

    # nodes ----------------------------------------------------------------------------------
    def add_nodes(
        self,
        ids: np.ndarray,
        kind: int | np.ndarray,
        text: Sequence[str],
        tokens: np.ndarray | Sequence[int],
        docs: Sequence[Sequence[int]],
        layer: int | np.ndarray = 0,
        code: int | np.ndarray = 0,
        parent: int | np.ndarray = -1,
    ) -> None:
        """Add (or, for an existing id, replace) node rows. Scalars broadcast."""
        n = len(ids)
        if n == 0:
            return
        if len(text) != n or len(docs) != n or len(tokens) != n:
            raise ValueError("add_nodes: ids, text, tokens and docs must have equal length")

        def col(value: Any, dtype: Any) -> np.ndarray:
            arr = np.asarray(value, dtype=dtype)
            return np.full(n, arr, dtype=dtype) if arr.ndim == 0 else arr

        table = pa.table(
            {
                "id": pa.array(np.asarray(ids, dtype=np.int64)),
                "kind": pa.array(col(kind, np.uint8)),
                "layer": pa.array(col(layer, np.uint8)),
                "text": pa.array(list(text), type=pa.large_string()),
                "tokens": pa.array(col(tokens, np.int32)),
                "docs": pa.array([list(map(int, d)) for d in docs], type=pa.list_(pa.int64())),
                "code": pa.array(col(code, np.uint64)),
                "parent": pa.array(col(parent, np.int64)),
                "version": pa.array(np.full(n, self.version, dtype=np.int64)),
            },
            schema=NODE_SCHEMA,
        )
        self._nodes.append(table)

    def replace_rows(self, rows: pa.Table, **changes: np.ndarray | Sequence[Any]) -> None:
        """Rewrite existing node rows (same ids) with some columns changed, e.g. ``parent``."""
        if rows.num_rows == 0:
            return
        rows = rows.select(NODE_SCHEMA.names)
        for name, values in changes.items():
            idx = NODE_SCHEMA.get_field_index(name)
            rows = rows.set_column(
                idx, NODE_SCHEMA.field(name), pa.array(values, type=NODE_SCHEMA.field(name).type)
            )
        version_idx = NODE_SCHEMA.get_field_index("version")
        rows = rows.set_column(
            version_idx,
            NODE_SCHEMA.field("version"),
            pa.array(np.full(rows.num_rows, self.version, np.int64)),
        )
        self._nodes.append(rows.cast(NODE_SCHEMA))

    def delete_nodes(self, ids: np.ndarray | Sequence[int]) -> None:
        ids = np.asarray(ids, dtype=np.int64)
        if ids.size:
            self._dead_nodes.append(ids)

    # edges, vectors, docs -------------------------------------------------------------------
    def add_edges(
        self,
        src: np.ndarray | Sequence[int],
        dst: np.ndarray | Sequence[int],
        kind: int | np.ndarray,
        weight: float | np.ndarray = 1.0,
    ) -> None:
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        n = src.shape[0]
        if n == 0:
            return
        if dst.shape[0] != n:
            raise ValueError("add_edges: src and dst must have equal length")
        kinds = np.asarray(kind, dtype=np.uint8)
        weights = np.asarray(weight, dtype=np.float32)
        self._edges.append(
            pa.table(
                {
                    "src": src,
                    "dst": dst,
                    "kind": np.full(n, kinds, np.uint8) if kinds.ndim == 0 else kinds,
                    "weight": np.full(n, weights, np.float32) if weights.ndim == 0 else weights,
                    "version": np.full(n, self.version, np.int64),
                },
                schema=EDGE_SCHEMA,
            )
        )

    def add_vectors(self, ids: np.ndarray, kinds: np.ndarray | int, matrix: np.ndarray) -> None:
        ids = np.asarray(ids, dtype=np.int64)
        if ids.size == 0:
            return
        matrix = np.asarray(matrix)
        if matrix.ndim != 2 or matrix.shape != (ids.shape[0], self.dim):
            raise ValueError(
                f"add_vectors: expected matrix [{ids.shape[0]}, {self.dim}], got {matrix.shape}"
            )
        k = np.asarray(kinds, dtype=np.uint8)
        self._vectors.append(
            (ids, np.full(ids.shape[0], k, np.uint8) if k.ndim == 0 else k, matrix)
        )

    def add_docs(self, table: pa.Table) -> None:
        if table.num_rows:
            self._docs.append(table.cast(DOC_SCHEMA))

    def delete_docs(self, keys: np.ndarray | Sequence[int]) -> None:
        keys = np.asarray(keys, dtype=np.int64)
        if keys.size:
            self._dead_docs.append(keys)

    def put_state(self, component: str, name: str, array: np.ndarray) -> None:
        """Store a small array of component state (replaces the previous one on commit)."""
        self.state[f"{component}/{name}"] = np.ascontiguousarray(array)

    def set_component_meta(self, component: str, meta: dict[str, Any]) -> None:
        """JSON-serializable metadata of a component, kept in the manifest."""
        self.components[component] = meta

    # views ----------------------------------------------------------------------------------
    @property
    def nodes(self) -> pa.Table:
        """Node rows to write: the last row per id (a component may rewrite a new chunk)."""
        if not self._nodes:
            return _empty(NODE_SCHEMA)
        table = pa.concat_tables(self._nodes)
        ids = table.column("id").to_numpy()
        _, last_from_end = np.unique(ids[::-1], return_index=True)
        if last_from_end.size == ids.size:
            return table
        keep = np.sort(ids.size - 1 - last_from_end)
        return table.take(pa.array(keep))

    @property
    def edges(self) -> pa.Table:
        return pa.concat_tables(self._edges) if self._edges else _empty(EDGE_SCHEMA)

    @property
    def docs(self) -> pa.Table:
        return pa.concat_tables(self._docs) if self._docs else _empty(DOC_SCHEMA)

    @property
    def dead_nodes(self) -> np.ndarray:
        return (
            np.unique(np.concatenate(self._dead_nodes))
            if self._dead_nodes
            else np.zeros(0, np.int64)
        )

    @property
    def dead_docs(self) -> np.ndarray:
        return (
            np.unique(np.concatenate(self._dead_docs)) if self._dead_docs else np.zeros(0, np.int64)
        )

    def vectors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self._vectors:
            return np.zeros(0, np.int64), np.zeros(0, np.uint8), np.zeros((0, self.dim), np.float32)
        ids = np.concatenate([v[0] for v in self._vectors])
        kinds = np.concatenate([v[1] for v in self._vectors])
        mats = np.concatenate([np.asarray(v[2], dtype=np.float32) for v in self._vectors])
        return ids, kinds, mats

    def is_empty(self) -> bool:
        return not (
            self._nodes
            or self._edges
            or self._docs
            or self._vectors
            or self._dead_nodes
            or self._dead_docs
            or self.state
        )


# --------------------------------------------------------------------------------------------
# The store
# --------------------------------------------------------------------------------------------


@dataclass
class CommitResult:
    version: int
    bytes_written: int
    manifest: dict[str, Any]


class Store:
    """An index directory. Create or open it, read snapshots, and commit deltas."""

    def __init__(self, root: Path, manifest: dict[str, Any]):
        self.root = root
        self.manifest = manifest

    # creation and opening -------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        root: str | Path,
        config: dict[str, Any],
        embedder: dict[str, Any],
        hyperplanes: np.ndarray,
        hyperplane_seed: int,
        components: Sequence[str] = (),
    ) -> Store:
        """Create an empty index (version 0). Fails if ``root`` already holds one."""
        root = Path(root)
        if (root / MANIFEST).exists():
            raise StoreError(f"an index already exists at {root}; open it or choose another path")
        # The LLM response cache may already be there (kept across a rebuild, or opened by the
        # backend before the store): it is not part of the index.
        if root.exists() and any(
            p for p in root.iterdir() if not p.name.startswith(("LOCK", "llm-cache"))
        ):
            raise StoreError(f"{root} exists and is not empty; refusing to create an index there")
        (root / "segments").mkdir(parents=True, exist_ok=True)
        (root / "manifests").mkdir(exist_ok=True)
        hp = np.ascontiguousarray(hyperplanes, dtype=np.float32)
        hp_path = root / "hyperplanes.npy"
        with open(hp_path, "wb") as fh:
            np.save(fh, hp)
            fh.flush()
            os.fsync(fh.fileno())
        manifest: dict[str, Any] = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "version": 0,
            "created_at": time.time(),
            "committed_at": time.time(),
            "config": config,
            "embedder": embedder,
            "hyperplanes": {
                "file": "hyperplanes.npy",
                "sha256": sha256_file(hp_path),
                "n_bits": int(hp.shape[0]),
                "dim": int(hp.shape[1]),
                "seed": int(hyperplane_seed),
            },
            "next_node_id": 0,
            "next_doc_key": 0,
            "segments": {t: [] for t in TABLES},
            "state": {},
            "components": {},
            # Fixed at creation: a component that did not see every change cannot serve.
            "components_enabled": list(components),
            "vector_cache": None,
            "counts": {},
        }
        data = _seal(manifest)
        _write_atomic(root / "manifests" / "v00000000.json", data)
        _write_atomic(root / MANIFEST, data)
        return cls(root, manifest)

    @classmethod
    def open(cls, root: str | Path, version: int | None = None) -> Store:
        """Open the current version, or a pinned ``version`` kept since the last compact."""
        root = Path(root)
        if not root.is_dir():
            raise IndexNotFoundError(f"no graphstrata index at {root}")
        if version is None:
            manifest = read_manifest(root / MANIFEST)
        else:
            path = root / "manifests" / f"v{version:08d}.json"
            if not path.exists():
                raise StoreError(
                    f"version {version} of {root} is not available (compacted or never committed)"
                )
            manifest = read_manifest(path)
        return cls(root, manifest)

    def reload_manifest(self) -> bool:
        """Re-read the current manifest; True when a newer version was committed."""
        manifest = read_manifest(self.root / MANIFEST)
        changed = manifest["version"] != self.manifest["version"]
        self.manifest = manifest
        return changed

    @property
    def version(self) -> int:
        return int(self.manifest["version"])

    # reading --------------------------------------------------------------------------------
    def _check(self, entry: dict[str, Any], verify: bool) -> Path:
        path = self.root / entry["file"]
        if not path.exists():
            raise CorruptIndexError(
                f"{self.root}: segment {entry['file']} listed in the manifest is missing"
            )
        if verify:
            actual = sha256_file(path)
            if actual != entry["sha256"]:
                raise CorruptIndexError(
                    f"{self.root}: segment {entry['file']} failed its checksum (expected {entry['sha256'][:12]}, got {actual[:12]})"
                )
        return path

    def _read_parquet(
        self, entries: list[dict[str, Any]], schema: pa.Schema, verify: bool
    ) -> pa.Table:
        tables = []
        for entry in entries:
            path = self._check(entry, verify)
            try:
                table = pq.read_table(path)
            except (OSError, pa.ArrowInvalid) as exc:
                raise CorruptIndexError(
                    f"{self.root}: segment {entry['file']} is unreadable: {exc}"
                ) from exc
            tables.append(table.cast(schema))
        return pa.concat_tables(tables) if tables else _empty(schema)

    def _read_vectors(self, entry: dict[str, Any], verify: bool) -> VectorSegment:
        path = self._check(entry, verify)
        dim = int(self.manifest["embedder"]["dim"])
        try:
            reader = pa.ipc.open_file(pa.memory_map(str(path), "r"))
            table = reader.read_all()
        except (OSError, pa.ArrowInvalid) as exc:
            raise CorruptIndexError(
                f"{self.root}: vector segment {entry['file']} is unreadable: {exc}"
            ) from exc
        ids = table.column("id").to_numpy()
        kinds = table.column("kind").to_numpy()
        column = table.column("vector")
        if column.num_chunks == 1:
            flat = column.chunk(0).flatten().to_numpy(zero_copy_only=True)
        else:  # written by us as one batch; tolerate others with a copy
            flat = np.concatenate(
                [c.flatten().to_numpy(zero_copy_only=False) for c in column.chunks]
            )
        matrix = flat.reshape(-1, dim)
        return VectorSegment(ids=ids, kinds=kinds, matrix=matrix, version=int(entry["version"]))

    def load(self, verify: bool = True) -> Snapshot:
        """Load this store's version into memory (vectors memory-mapped)."""
        segs = self.manifest["segments"]
        dead_nodes = self._read_parquet(segs["node_tombstones"], TOMBSTONE_SCHEMA, verify)
        dead_docs = self._read_parquet(segs["doc_tombstones"], TOMBSTONE_SCHEMA, verify)
        dead = np.unique(dead_nodes.column("id").to_numpy())
        nodes = NodeTable(_live_nodes(self._read_parquet(segs["nodes"], NODE_SCHEMA, verify), dead))
        edges = _live_edges(self._read_parquet(segs["edges"], EDGE_SCHEMA, verify), nodes.ids)
        docs = self._read_parquet(segs["docs"], DOC_SCHEMA, verify)
        if dead_docs.num_rows:
            docs = docs.filter(
                pa.array(~np.isin(docs.column("key").to_numpy(), dead_docs.column("id").to_numpy()))
            )
        vectors = VectorTable(
            int(self.manifest["embedder"]["dim"]),
            [self._read_vectors(e, verify) for e in segs["vectors"]],
            nodes.ids,
        )
        hp_entry = self.manifest["hyperplanes"]
        hp_path = self._check({"file": hp_entry["file"], "sha256": hp_entry["sha256"]}, True)
        hyperplanes = np.load(hp_path)
        state = {}
        for key, entry in self.manifest.get("state", {}).items():
            state[key] = np.load(self._check(entry, verify))
        return Snapshot(self.root, self.manifest, nodes, edges, docs, vectors, hyperplanes, state)

    # writing --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def writer(self, wait: float = 0.0) -> Iterator[None]:
        """Hold the one-writer lock; clean files left by writers that died."""
        lock_path = self.root / "LOCK"
        with open(lock_path, "a+") as fh:
            self._acquire(fh, wait)
            try:
                fh.seek(0)
                fh.truncate()
                fh.write(str(os.getpid()))
                fh.flush()
                self.reload_manifest()
                self._remove_orphans()
                yield
            finally:
                fh.seek(0)
                fh.truncate()
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _acquire(self, fh: Any, wait: float) -> None:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError as exc:
                if time.monotonic() >= deadline:
                    fh.seek(0)
                    holder = fh.read().strip() or "unknown"
                    raise IndexLockedError(
                        f"{self.root} is locked by another writer (pid {holder}); one writer at a time"
                    ) from exc
                time.sleep(0.05)

    def new_delta(self) -> Delta:
        m = self.manifest
        return Delta(
            version=int(m["version"]) + 1,
            next_node_id=int(m["next_node_id"]),
            next_doc_key=int(m["next_doc_key"]),
            dim=int(m["embedder"]["dim"]),
            vector_dtype=str(m["config"].get("vector_dtype", "f32")),
        )

    def _segment_name(self, table: str, version: int, ext: str) -> str:
        return f"segments/{table}-v{version:08d}-{uuid.uuid4().hex[:8]}.{ext}"

    def _write_parquet(self, table: pa.Table, name: str, version: int) -> dict[str, Any]:
        path = self.root / self._segment_name(name, version, "parquet")
        # Readers cast to the known schema, so the Arrow schema and column statistics are not
        # stored: they are most of a small segment's bytes, and small commits should write little.
        pq.write_table(table, path, compression="zstd", store_schema=False, write_statistics=False)
        return self._entry(path, table.num_rows, version)

    def _entry(self, path: Path, rows: int, version: int) -> dict[str, Any]:
        with open(path, "rb+") as fh:
            os.fsync(fh.fileno())
        return {
            "file": str(path.relative_to(self.root)),
            "sha256": sha256_file(path),
            "rows": int(rows),
            "bytes": path.stat().st_size,
            "version": version,
        }

    def _write_vectors(
        self, ids: np.ndarray, kinds: np.ndarray, matrix: np.ndarray, version: int
    ) -> dict[str, Any]:
        dim = int(self.manifest["embedder"]["dim"])
        dtype = str(self.manifest["config"].get("vector_dtype", "f32"))
        np_dtype = np.float16 if dtype == "f16" else np.float32
        flat = pa.array(np.ascontiguousarray(matrix, dtype=np_dtype).reshape(-1))
        vec = pa.FixedSizeListArray.from_arrays(flat, dim)
        table = pa.Table.from_arrays(
            [pa.array(ids), pa.array(kinds), vec], schema=vector_schema(dim, dtype)
        )
        path = self.root / self._segment_name("vectors", version, "arrow")
        # Uncompressed IPC so readers memory-map it and reach numpy without a copy.
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        return self._entry(path, table.num_rows, version)

    def commit(
        self,
        delta: Delta,
        config: dict[str, Any] | None = None,
        counts: dict[str, Any] | None = None,
        extra_files: dict[str, Path] | None = None,
    ) -> CommitResult:
        """Write the delta's segments, then atomically switch the manifest to the new version.

        Must be called inside ``writer()``. ``extra_files`` are already-written files to record
        (e.g. the usearch cache), as ``{logical name: path}``.
        """
        if delta.version != self.version + 1:
            raise StoreError(
                f"delta was prepared for version {delta.version - 1} but the index is at {self.version}"
            )
        version = delta.version
        written = 0
        new = {t: [] for t in TABLES}
        _crashpoint("before_segments")
        nodes = delta.nodes
        if nodes.num_rows:
            new["nodes"].append(self._write_parquet(nodes, "nodes", version))
        _crashpoint("after_nodes")
        edges = delta.edges
        if edges.num_rows:
            new["edges"].append(self._write_parquet(edges, "edges", version))
        docs = delta.docs
        if docs.num_rows:
            new["docs"].append(self._write_parquet(docs, "docs", version))
        dead = delta.dead_nodes
        if dead.size:
            new["node_tombstones"].append(
                self._write_parquet(
                    pa.table({"id": dead}, schema=TOMBSTONE_SCHEMA), "tomb-nodes", version
                )
            )
        dead_docs = delta.dead_docs
        if dead_docs.size:
            new["doc_tombstones"].append(
                self._write_parquet(
                    pa.table({"id": dead_docs}, schema=TOMBSTONE_SCHEMA), "tomb-docs", version
                )
            )
        _crashpoint("after_tables")
        vids, vkinds, vmat = delta.vectors()
        if vids.size:
            new["vectors"].append(self._write_vectors(vids, vkinds, vmat, version))
        _crashpoint("after_vectors")
        state = dict(self.manifest.get("state", {}))
        for key, array in delta.state.items():
            path = self.root / self._segment_name(
                "state-" + re.sub(r"[^A-Za-z0-9_-]", "_", key), version, "npy"
            )
            with open(path, "wb") as fh:
                np.save(fh, array)
            state[key] = self._entry(path, int(array.shape[0]) if array.ndim else 1, version)
            written += state[key]["bytes"]
        for entries in new.values():
            written += sum(e["bytes"] for e in entries)
        manifest = json.loads(json.dumps(self.manifest))
        for table, entries in new.items():
            manifest["segments"][table].extend(entries)
        manifest["version"] = version
        manifest["committed_at"] = time.time()
        manifest["next_node_id"] = int(delta.next_node_id)
        manifest["next_doc_key"] = int(delta.next_doc_key)
        manifest["state"] = state
        components = dict(manifest.get("components", {}))
        components.update(delta.components)
        manifest["components"] = components
        if config is not None:
            manifest["config"] = config
        if counts is not None:
            manifest["counts"] = counts
        written += self._record_extra_files(manifest, extra_files, version)
        _crashpoint("before_manifest")
        data = _seal(manifest)
        _write_atomic(self.root / "manifests" / f"v{version:08d}.json", data)
        _crashpoint("after_history_manifest")
        _write_atomic(self.root / MANIFEST, data)
        _crashpoint("after_manifest")
        written += 2 * len(data)
        self.manifest = manifest
        return CommitResult(version=version, bytes_written=written, manifest=manifest)

    def _record_extra_files(
        self, manifest: dict[str, Any], extra_files: dict[str, Path] | None, version: int
    ) -> int:
        """Checksum already-written files (the usearch cache) into ``manifest``; their bytes."""
        written = 0
        for name, path in (extra_files or {}).items():
            entry = self._entry(path, 0, version)
            written += entry["bytes"]
            if name == "vector_cache":
                manifest["vector_cache"] = {
                    "version": version,
                    "file": entry["file"],
                    "sha256": entry["sha256"],
                }
        return written

    def referenced_files(self, manifest: dict[str, Any] | None = None) -> set[str]:
        manifest = manifest or self.manifest
        files = {manifest["hyperplanes"]["file"]}
        for entries in manifest["segments"].values():
            files.update(e["file"] for e in entries)
        files.update(e["file"] for e in manifest.get("state", {}).values())
        if manifest.get("vector_cache"):
            files.add(manifest["vector_cache"]["file"])
        return files

    def _remove_orphans(self) -> None:
        """Delete files no manifest refers to: the leftovers of a writer that died."""
        current = self.version
        keep: set[str] = set()
        history = self.root / "manifests"
        for path in sorted(history.glob("v*.json")):
            try:
                num = int(path.stem[1:])
            except ValueError:
                continue
            if num > current:  # written by a writer that died before switching manifest.json
                path.unlink(missing_ok=True)
                continue
            try:
                keep |= self.referenced_files(read_manifest(path))
            except StoreError:
                continue
        keep |= self.referenced_files()
        for sub in ("segments", "vcache"):
            folder = self.root / sub
            if not folder.exists():
                continue
            for path in folder.iterdir():
                rel = f"{sub}/{path.name}"
                if rel not in keep:
                    path.unlink(missing_ok=True)
        for tmp in list(self.root.glob(".*.tmp")) + list(history.glob(".*.tmp")):
            tmp.unlink(missing_ok=True)

    def rewrite(
        self, snapshot: Snapshot, extra_files: dict[str, Path] | None = None
    ) -> CommitResult:
        """Compact: write every live row into one segment per table as a new version.

        Older versions' manifests and segments are removed afterwards; a reader that already
        loaded an older version keeps it (tables are in memory, vectors stay mapped).
        """
        delta = self.new_delta()
        version = delta.version
        segs: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
        written = 0
        if snapshot.nodes.table.num_rows:
            segs["nodes"].append(self._write_parquet(snapshot.nodes.table, "nodes", version))
        if snapshot.edges.num_rows:
            segs["edges"].append(self._write_parquet(snapshot.edges, "edges", version))
        if snapshot.docs.num_rows:
            segs["docs"].append(self._write_parquet(snapshot.docs, "docs", version))
        vt = snapshot.vectors
        if len(vt):
            segs["vectors"].append(self._write_vectors(vt.ids, vt.kinds, vt.get(vt.ids), version))
        for entries in segs.values():
            written += sum(e["bytes"] for e in entries)
        manifest = json.loads(json.dumps(self.manifest))
        manifest["segments"] = segs
        manifest["version"] = version
        manifest["committed_at"] = time.time()
        manifest["vector_cache"] = None
        written += self._record_extra_files(manifest, extra_files, version)
        data = _seal(manifest)
        _write_atomic(self.root / "manifests" / f"v{version:08d}.json", data)
        _write_atomic(self.root / MANIFEST, data)
        self.manifest = manifest
        for path in (self.root / "manifests").glob("v*.json"):
            if path.name != f"v{version:08d}.json":
                path.unlink(missing_ok=True)
        self._remove_orphans()
        return CommitResult(version=version, bytes_written=written + len(data), manifest=manifest)

    def size_bytes(self) -> int:
        """Bytes of the files the current version refers to."""
        total = 0
        for rel in self.referenced_files():
            p = self.root / rel
            if p.exists():
                total += p.stat().st_size
        return total + len(_seal(json.loads(json.dumps(self.manifest))))
