"""The store: an index directory of immutable segments and an atomically replaced manifest.

See the package docstring for the layout and the rules that make it crash safe
(docs/architecture.md, "Store").
"""

from __future__ import annotations

import contextlib
import json
import re
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from graphstrata.core import sets
from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.store.arrow_numpy import arrow_of, numpy_of
from graphstrata.engine.store.caches import (
    CACHE_NAMES,
    Caches,
    cache_paths,
    record_caches,
)
from graphstrata.engine.store.creation import create_index_files
from graphstrata.engine.store.delta import Delta
from graphstrata.engine.store.edges import EdgeTable
from graphstrata.engine.store.errors import (
    CorruptIndexError,
    IndexNotFoundError,
    StoreError,
    StoreWriteError,
)
from graphstrata.engine.store.files import (
    MANIFEST,
    TABLES,
    FileCheck,
    check_manifest_paths,
    crashpoint,
    file_problem,
    fsync_file,
    leftover_siblings,
    read_manifest,
    seal,
    sha256_file,
    write_atomic,
    write_failure_cause,
)
from graphstrata.engine.store.integrity import HELP, newest_read, verify_newest
from graphstrata.engine.store.lock import LEFTOVERS, held_lock
from graphstrata.engine.store.merging import MERGED_TABLES, HeldSegments, merge_tails
from graphstrata.engine.store.node_state import apply_rows, collapsed, commit_chains
from graphstrata.engine.store.orphans import OrphanSweeper, referenced_files
from graphstrata.engine.store.schema import (
    DOC_SCHEMA,
    EDGE_SCHEMA,
    NODE_SCHEMA,
    TOMBSTONE_SCHEMA,
    conformed,
    vector_numpy_dtype,
    vector_schema,
)
from graphstrata.engine.store.segments import (
    read_table_segment,
    table_segment_format,
    write_table_segment,
)
from graphstrata.engine.store.snapshot import Snapshot
from graphstrata.engine.store.tables import (
    VectorSegment,
    VectorTable,
    empty_table,
    live_edges,
    live_nodes,
)
from graphstrata.engine.store.validation import check_manifest_fields, check_next_ids


@dataclass
class CommitResult:
    """What a commit wrote: the new version, its bytes on disk, and its manifest."""

    version: int
    bytes_written: int
    manifest: dict[str, Any]


class Store:
    """An index directory. Create or open it, read snapshots, and commit deltas."""

    def __init__(self, root: Path, manifest: dict[str, Any], paths_checked: set[str] | None = None):
        self.root = root
        self.manifest = manifest
        self._pinned = False
        #: Files the write in progress created (removed if it fails), and the one it writes now.
        self._pending: list[Path] = []
        self._writing: Path | None = None
        #: Manifest entries already found inside ``root`` (``check_manifest_paths``).
        self._paths_checked: set[str] = set() if paths_checked is None else paths_checked
        self._orphans = OrphanSweeper(root)
        #: Whether this store swept since it was opened, and whether a failed write of its
        #: own could not remove a file it wrote (the next writer then sweeps).
        self._swept = False
        self._leftovers = False
        #: The table segments this store wrote that a later merge may read.
        self._held = HeldSegments()
        #: The manifest config and the fold policies read from it (``maintenance``).
        self._maintenance: tuple[dict[str, Any], MaintenanceConfig] | None = None

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
        """Create an empty index (version 0). Fails if ``root`` already holds one.

        A failure part-way (a full disk) removes what was written, so the path can be reused
        (:func:`~graphstrata.engine.store.creation.create_index_files`).
        """
        root = Path(root)
        manifest = create_index_files(
            root, config, embedder, hyperplanes, hyperplane_seed, components
        )
        return cls(root, manifest)

    @classmethod
    def open(cls, root: str | Path, version: int | None = None) -> Store:
        """Open the current version, or a pinned ``version`` kept since the last compact."""
        root = Path(root)
        if not root.is_dir():
            hint = ""
            aside = leftover_siblings(root, "old")
            if aside:
                hint = (
                    f"; an interrupted rebuild left the previous index at {aside[0]} "
                    f"(`graphstrata index --out {root}` restores it on its next run, or rename "
                    "it back yourself)"
                )
            raise IndexNotFoundError(f"no graphstrata index at {root}{hint}")
        checked: set[str] = set()  # the opening check's, so that reads do not repeat it
        if version is None:
            manifest = cls._read(root, root / MANIFEST, checked)
        else:
            path = root / "manifests" / f"v{version:08d}.json"
            if not path.exists():
                raise StoreError(
                    f"version {version} of {root} is not available (compacted or never committed)"
                )
            manifest = cls._read(root, path, checked)
        store = cls(root, manifest, checked)
        store._pinned = version is not None  # a pinned version never moves on
        return store

    @staticmethod
    def _read(root: Path, path: Path, checked: set[str] | None = None) -> dict[str, Any]:
        """A verified, well-typed manifest whose files all lie inside ``root``."""
        manifest = read_manifest(path)
        check_manifest_fields(path, manifest)
        check_manifest_paths(root, manifest, checked)
        return manifest

    def reload_manifest(self) -> bool:
        """Re-read the current manifest; True when a newer version was committed."""
        manifest = self._read(self.root, self.root / MANIFEST, self._paths_checked)
        changed = manifest["version"] != self.manifest["version"]
        self.manifest = manifest
        return changed

    @property
    def version(self) -> int:
        """The version of the manifest this store holds."""
        return int(self.manifest["version"])

    @property
    def maintenance(self) -> MaintenanceConfig:
        """The index's fold policies (``IndexConfig.maintenance``; the defaults for an index
        created before the section existed), read once per manifest config."""
        config = self.manifest["config"]
        held = self._maintenance
        if held is None or held[0] is not config:
            held = self._maintenance = (config, MaintenanceConfig.of_config(config))
        return held[1]

    @property
    def vector_dtype(self) -> str:
        """How the index stores vectors, ``"f16"`` or ``"f32"`` (indexes from before the
        setting existed record none and are ``"f32"``)."""
        return str(self.manifest["config"].get("vector_dtype", "f32"))

    # reading --------------------------------------------------------------------------------
    def _check(self, entry: dict[str, Any], verify: bool) -> Path:
        """The path of a file to read: present, of its recorded size, hashed if ``verify``."""
        problem = file_problem(self.root, entry, "file", verify, self._paths_checked)
        if problem is not None:
            raise CorruptIndexError(f"{self.root}: segment {entry['file']} {problem}; {HELP}")
        return self.root / entry["file"]  # file_problem found it inside the index

    def _read_tables(
        self, entries: list[dict[str, Any]], schema: pa.Schema, verify: bool
    ) -> pa.Table:
        tables = []
        for entry in entries:
            path = self._check(entry, verify)
            try:
                table = read_table_segment(path)
            except (OSError, pa.ArrowInvalid) as exc:
                raise CorruptIndexError(
                    f"{self.root}: segment {entry['file']} is unreadable: {exc}; {HELP}"
                ) from exc
            tables.append(conformed(table, schema))
        return pa.concat_tables(tables) if tables else empty_table(schema)

    def _read_vectors(self, entry: dict[str, Any], verify: bool) -> VectorSegment:
        path = self._check(entry, verify)
        dim = int(self.manifest["embedder"]["dim"])
        try:
            reader = pa.ipc.open_file(pa.memory_map(str(path), "r"))
            table = reader.read_all()
        except (OSError, pa.ArrowInvalid) as exc:
            raise CorruptIndexError(
                f"{self.root}: vector segment {entry['file']} is unreadable: {exc}; {HELP}"
            ) from exc
        ids = numpy_of(table.column("id"))
        kinds = numpy_of(table.column("kind"))
        # Written by us as one batch: viewed without a copy (several chunks are concatenated).
        column = table.column("vector")
        values = [c.flatten() for c in column.chunks]
        flat = numpy_of(pa.chunked_array(values, column.type.value_type))
        matrix = flat.reshape(-1, dim)
        return VectorSegment(ids=ids, kinds=kinds, matrix=matrix, version=int(entry["version"]))

    def load(self, verify: bool = False) -> Snapshot:
        """Load this store's version into memory (vectors memory-mapped).

        Parameters
        ----------
        verify:
            Also compare every file's SHA-256 with the manifest's. Off by default: the
            manifest is sealed with its own checksum and every file's size is checked, which
            catches a truncated or partly written file; a flipped byte inside a file is
            found by :meth:`verify_files` (``graphstrata check``), not on every open.

        A file swept by a compaction committed since this store read its manifest is not
        corruption: the load moves on to the newer manifest (``integrity.newest_read``).

        Raises
        ------
        CorruptIndexError
            A file is missing, has another size than the manifest records, fails its checksum
            (``verify``), or cannot be read; or its next ids are not past the live ones.
        """
        reload = self.reload_manifest if not self._pinned else lambda: False
        return newest_read(partial(self._load_once, verify), reload)

    def _load_once(self, verify: bool) -> Snapshot:
        segs = self.manifest["segments"]
        dead_nodes = self._read_tables(segs["node_tombstones"], TOMBSTONE_SCHEMA, verify)
        dead_docs = self._read_tables(segs["doc_tombstones"], TOMBSTONE_SCHEMA, verify)
        dead = sets.unique(numpy_of(dead_nodes.column("id")))
        nodes = live_nodes(self._read_tables(segs["nodes"], NODE_SCHEMA, verify), dead)
        edges = live_edges(self._read_tables(segs["edges"], EDGE_SCHEMA, verify), nodes.ids)
        docs = self._read_tables(segs["docs"], DOC_SCHEMA, verify)
        if dead_docs.num_rows:
            docs = docs.filter(
                arrow_of(~np.isin(numpy_of(docs.column("key")), numpy_of(dead_docs.column("id"))))
            )
        check_next_ids(self.root, self.manifest, nodes.ids, numpy_of(docs.column("key")))
        vectors = VectorTable(
            int(self.manifest["embedder"]["dim"]),
            [self._read_vectors(e, verify) for e in segs["vectors"]],
            nodes.ids,
        )
        hp_entry = self.manifest["hyperplanes"]
        # A few kilobytes, read whole: always hashed.
        hp_path = self._check({"file": hp_entry["file"], "sha256": hp_entry["sha256"]}, True)
        hyperplanes = np.load(hp_path)
        state = {}
        for key, entry in self.manifest.get("state", {}).items():
            state[key] = np.load(self._check(entry, verify))
        per_node = {
            key: apply_rows([np.load(self._check(e, verify)) for e in chain])
            for key, chain in self.manifest.get("node_state", {}).items()
        }
        return Snapshot(
            self.root,
            self.manifest,
            nodes,
            EdgeTable.of(edges),
            docs,
            vectors,
            hyperplanes,
            state,
            per_node,
        )

    def advance(self, previous: Snapshot, delta: Delta) -> Snapshot:
        """The version ``delta`` just committed on ``previous``, in memory (no reread)."""
        segs = self.manifest["segments"]["vectors"]
        new = [self._read_vectors(e, False) for e in segs if e.get("version") == self.version]
        return previous.advanced(self.manifest, delta, new, self.maintenance)

    # writing --------------------------------------------------------------------------------
    def verify_files(self, all_versions: bool = False) -> FileCheck:
        """Hash every file of this version (or of every kept version) against its manifest.

        Parameters
        ----------
        all_versions:
            Also every version kept under ``manifests/`` since the last ``compact`` (each
            history manifest is verified too); a file shared by versions is read once.

        Returns
        -------
        FileCheck
            Files hashed, one problem per bad file (none for a file compacted away since).
        """
        reload = self.reload_manifest if not self._pinned else lambda: False
        return verify_newest(self.root, lambda: self.manifest, all_versions, reload)

    @contextlib.contextmanager
    def writer(self, wait: float = 0.0) -> Iterator[None]:
        """Hold the one-writer lock; clean files left by writers that died.

        The files no manifest names are swept only where there can be some: on the first
        write of this store (an index written by a version without this rule), and when the
        lock says its previous holder died or left files (``store.lock``). The sweep reads
        every history manifest and lists the segments, O(versions) per write (18.6 ms of a
        write at 100k chunks after ~450 versions, cProfile; issue 17).
        """
        with held_lock(self.root, wait) as lock:
            try:
                self.reload_manifest()
                if lock.left or not self._swept:
                    self._orphans.sweep(self.version, self.manifest)
                    self._swept = True
                yield
            finally:
                lock.leave, self._leftovers = (LEFTOVERS if self._leftovers else ""), False

    def new_delta(self) -> Delta:
        """An empty delta for the next version (ids continue where this version stopped)."""
        m = self.manifest
        return Delta(
            version=int(m["version"]) + 1,
            next_node_id=int(m["next_node_id"]),
            next_doc_key=int(m["next_doc_key"]),
            dim=int(m["embedder"]["dim"]),
            vector_dtype=self.vector_dtype,
        )

    def _segment_name(self, table: str, version: int, ext: str) -> str:
        return f"segments/{table}-v{version:08d}-{uuid.uuid4().hex[:8]}.{ext}"

    def _track(self, path: Path) -> Path:
        """Record a file the write in progress is about to create (removed if the write fails)."""
        self._pending.append(path)
        self._writing = path
        return path

    @contextlib.contextmanager
    def _abandon_on_failure(self, version: int, caches: Caches | None) -> Iterator[None]:
        """Remove the files of a commit that failed; a write error becomes ``StoreWriteError``."""
        self._pending, self._writing = [], None
        try:
            yield
        except BaseException as exc:
            if self._committed(version):
                raise
            where = self._writing or self.root
            referenced = self.referenced_files()
            extra = [p for p in cache_paths(caches) if self._rel(p) not in referenced]
            for path in [*self._pending, *extra]:
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)
            self._leftovers = any(p.exists() for p in [*self._pending, *extra])
            if isinstance(exc, OSError):
                raise StoreWriteError(
                    f"{write_failure_cause(exc)} while writing {where}: the commit of version "
                    f"{version} was abandoned and its partial files removed; the index stays at "
                    f"version {version - 1}",
                    exc.errno,
                ) from exc
            raise
        finally:
            self._pending, self._writing = [], None

    def _committed(self, version: int) -> bool:
        """Whether ``manifest.json`` already names ``version`` (unknown counts as yes)."""
        try:
            return int(read_manifest(self.root / MANIFEST)["version"]) >= version
        except (StoreError, OSError, KeyError, TypeError, ValueError):
            return True

    def _rel(self, path: Path) -> str:
        try:
            return str(Path(path).relative_to(self.root))
        except ValueError:
            return str(path)

    def _write_table(self, table: pa.Table, name: str, version: int) -> dict[str, Any]:
        """One table segment, mapped Arrow or Parquet by its size (``segments``)."""
        ext = table_segment_format(table.num_rows)
        path = self._track(self.root / self._segment_name(name, version, ext))
        write_table_segment(table, path)
        entry = self._entry(path, table.num_rows, version)
        self._held.hold(entry, table, self.maintenance)
        return entry

    def _entry(self, path: Path, rows: int, version: int) -> dict[str, Any]:
        fsync_file(path)
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
        dtype = self.vector_dtype
        flat = arrow_of(np.ascontiguousarray(matrix, dtype=vector_numpy_dtype(dtype)).reshape(-1))
        vec = pa.FixedSizeListArray.from_arrays(flat, dim)
        table = pa.Table.from_arrays(
            [arrow_of(ids), arrow_of(kinds), vec], schema=vector_schema(dim, dtype)
        )
        # Uncompressed IPC so readers memory-map it and reach numpy without a copy.
        path = self._track(self.root / self._segment_name("vectors", version, "arrow"))
        write_table_segment(table, path)
        return self._entry(path, table.num_rows, version)

    def commit(
        self,
        delta: Delta,
        config: dict[str, Any] | None = None,
        counts: dict[str, Any] | None = None,
        caches: Caches | None = None,
    ) -> CommitResult:
        """Write the delta's segments, then atomically switch the manifest to the new version.

        Must be called inside ``writer()``. ``caches`` are already-written cache files to
        record (``engine.store.caches``: the usearch and BM25 caches of this version).

        A failure before the manifest switch (a full disk, a kill) leaves the previous version;
        the files this commit wrote, ``caches`` included, are removed, and a write error is
        raised as ``StoreWriteError`` ("no space left on device while writing PATH ...").
        """
        if delta.version != self.version + 1:
            raise StoreError(
                f"delta was prepared for version {delta.version - 1} but the index is at {self.version}"
            )
        with self._abandon_on_failure(delta.version, caches):
            return self._commit(delta, config, counts, caches)

    def _commit(
        self,
        delta: Delta,
        config: dict[str, Any] | None,
        counts: dict[str, Any] | None,
        caches: Caches | None,
    ) -> CommitResult:
        version = delta.version
        written = 0
        new: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
        crashpoint("before_segments")
        nodes = delta.nodes
        if nodes.num_rows:
            new["nodes"].append(self._write_table(nodes, "nodes", version))
        crashpoint("after_nodes")
        edges = delta.edges
        if edges.num_rows:
            new["edges"].append(self._write_table(edges, "edges", version))
        docs = delta.docs
        if docs.num_rows:
            new["docs"].append(self._write_table(docs, "docs", version))
        dead = delta.dead_nodes
        if dead.size:
            new["node_tombstones"].append(
                self._write_table(
                    pa.table({"id": dead}, schema=TOMBSTONE_SCHEMA), "tomb-nodes", version
                )
            )
        dead_docs = delta.dead_docs
        if dead_docs.size:
            new["doc_tombstones"].append(
                self._write_table(
                    pa.table({"id": dead_docs}, schema=TOMBSTONE_SCHEMA), "tomb-docs", version
                )
            )
        crashpoint("after_tables")
        vids, vkinds, vmat = delta.vectors()
        if vids.size:
            new["vectors"].append(self._write_vectors(vids, vkinds, vmat, version))
        crashpoint("after_vectors")
        state = dict(self.manifest.get("state", {}))
        for key, array in delta.state.items():
            rows = int(array.shape[0]) if array.ndim else 1
            state[key] = self._write_state_file(key, array, rows, version)
            written += state[key]["bytes"]
        before = self.manifest.get("node_state", {})
        write = partial(self._write_state_file, version=version)
        chains = commit_chains(before, delta.node_state, write, self.maintenance)
        written += sum(c[-1]["bytes"] for k, c in chains.items() if c != before.get(k))
        for entries in new.values():
            written += sum(e["bytes"] for e in entries)
        manifest = json.loads(json.dumps(self.manifest))
        manifest["node_state"] = chains
        for key in chains:  # state written whole by an older version gives way
            state.pop(key, None)
        for table, entries in new.items():
            manifest["segments"][table].extend(entries)
        self._held.keep_named(manifest["segments"])
        # Segments read back from disk are checksummed: a merged segment gets a checksum of
        # its own, so a corrupt input merged unverified would pass `graphstrata check` after.
        written += merge_tails(
            manifest["segments"],
            lambda entries, table: self._held.read(
                entries, MERGED_TABLES[table][0], partial(self._read_tables, verify=True)
            ),
            lambda rows, _, name: self._write_table(rows, name, version),
            self.maintenance,
        )
        crashpoint("after_merges")
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
        written += record_caches(manifest, caches, version, self._cache_entry)
        crashpoint("before_manifest")
        data = seal(manifest)
        write_atomic(self._track(self.root / "manifests" / f"v{version:08d}.json"), data)
        crashpoint("after_history_manifest")
        self._writing = self.root / MANIFEST
        write_atomic(self.root / MANIFEST, data)
        crashpoint("after_manifest")
        written += 2 * len(data)
        self.manifest = manifest
        return CommitResult(version=version, bytes_written=written, manifest=manifest)

    def _write_state_file(
        self, key: str, array: np.ndarray, rows: int, version: int
    ) -> dict[str, Any]:
        path = self._track(
            self.root
            / self._segment_name("state-" + re.sub(r"[^A-Za-z0-9_-]", "_", key), version, "npy")
        )
        with open(path, "wb") as fh:
            np.save(fh, array)
        return self._entry(path, rows, version)

    def _cache_entry(self, path: Path) -> dict[str, Any]:
        entry = self._entry(path, 0, self.version + 1)
        return {k: entry[k] for k in ("file", "sha256", "bytes")}

    def referenced_files(self, manifest: dict[str, Any] | None = None) -> set[str]:
        """Paths, relative to the root, of every file ``manifest`` (default: ours) needs."""
        return referenced_files(manifest or self.manifest)

    def rewrite(self, snapshot: Snapshot, caches: Caches | None = None) -> CommitResult:
        """Compact: write every live row into one segment per table as a new version.

        Older versions' manifests and segments are removed afterwards; a reader that already
        loaded an older version keeps it (tables are in memory, vectors stay mapped). A failure
        before the switch is handled as in :meth:`commit`.
        """
        with self._abandon_on_failure(self.version + 1, caches):
            return self._rewrite(snapshot, caches)

    def _rewrite(self, snapshot: Snapshot, caches: Caches | None) -> CommitResult:
        delta = self.new_delta()
        version = delta.version
        segs: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
        written = 0
        if snapshot.nodes.table.num_rows:
            segs["nodes"].append(self._write_table(snapshot.nodes.table, "nodes", version))
        if snapshot.edges.num_rows:
            segs["edges"].append(self._write_table(snapshot.edges, "edges", version))
        if snapshot.docs.num_rows:
            segs["docs"].append(self._write_table(snapshot.docs, "docs", version))
        vt = snapshot.vectors
        if len(vt):
            segs["vectors"].append(self._write_vectors(vt.ids, vt.kinds, vt.get(vt.ids), version))
        for entries in segs.values():
            written += sum(e["bytes"] for e in entries)
        # Each node-state chain collapses into one base of the live nodes.
        bases = collapsed(snapshot.node_state_arrays, snapshot.nodes.contains)
        write = partial(self._write_state_file, version=version)
        chains = commit_chains({}, bases, write, self.maintenance)
        written += sum(c[0]["bytes"] for c in chains.values())
        manifest = json.loads(json.dumps(self.manifest))
        manifest["segments"] = segs
        manifest["node_state"] = chains
        manifest["version"] = version
        manifest["committed_at"] = time.time()
        for name in CACHE_NAMES:  # callers pass the caches of the compacted version
            manifest[name] = None
        written += record_caches(manifest, caches, version, self._cache_entry)
        data = seal(manifest)
        write_atomic(self._track(self.root / "manifests" / f"v{version:08d}.json"), data)
        self._writing = self.root / MANIFEST
        write_atomic(self.root / MANIFEST, data)
        self.manifest = manifest
        for path in (self.root / "manifests").glob("v*.json"):
            if path.name != f"v{version:08d}.json":
                path.unlink(missing_ok=True)
        self._orphans.sweep(self.version, self.manifest)
        return CommitResult(version=version, bytes_written=written + len(data), manifest=manifest)

    def history(self, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` versions kept under ``manifests/`` (all since the last
        ``compact``), newest first: ``{"version", "committed_at"}`` (seconds since the epoch;
        None for a manifest that is unreadable or being swept by a compaction)."""
        names = sorted((self.root / "manifests").glob("v*.json"), reverse=True)[:limit]
        out: list[dict[str, Any]] = []
        for path in names:
            try:
                committed = json.loads(path.read_bytes()).get("committed_at")
            except (OSError, ValueError):
                committed = None
            out.append({"version": int(path.stem[1:]), "committed_at": committed})
        return out

    def size_bytes(self) -> int:
        """Bytes of the files the current version refers to."""
        total = 0
        for rel in self.referenced_files():
            p = self.root / rel
            if p.exists():
                total += p.stat().st_size
        return total + len(seal(json.loads(json.dumps(self.manifest))))
