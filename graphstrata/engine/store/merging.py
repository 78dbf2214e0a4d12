"""Tiered merging of the small table segments commits leave, so that opening reads few files.

Every commit appends one Parquet segment per table it changed. Opening reads every segment
since the last ``compact``, so without merging its cost grew with the versions: at a million
chunks each one-document commit rewrites the top summaries, whose doc lists cite most
documents (~565k keys, 0.6-0.95 MB a segment), and after 46 writes reading those node
segments took 0.59-0.76 s of a 1.9 s open (issue 17, ``Index.open`` <= 2 s).

A commit's own segments are tier 0. When the last ``F`` segments of a table are all of one
tier (``F``: ``MaintenanceConfig.store_merge_fanin``), they are merged into one segment of
the next tier, and the check repeats (a counter in base ``F``, as a size-tiered LSM tree or
Lucene's tiered merge policy): after ``v`` commits a table has at most ``F - 1`` segments
per tier,
``O(log v)`` in all, and each row is rewritten once per tier. A merge drops what no reader
of the new version needs: node rows replaced by a newer row of their id (a summary rewritten
in place), and rows of tombstoned nodes and documents, with the edges that die with them.
So the hot rows the commits kept rewriting are stored once per merged segment.

Segments are immutable: the merged segment is a new file of the commit that merged, named by
the new manifest; the manifests kept since the last ``compact`` still name the segments they
were written with. A commit killed before its manifest switch leaves files no manifest names,
which the next writer removes, as for any commit.

Vector segments are not merged: they are memory-mapped Arrow, cheap to open, and their
versions say what the vector cache has not seen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from graphstrata.core import sets
from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.store.schema import (
    DOC_SCHEMA,
    EDGE_SCHEMA,
    NODE_SCHEMA,
    TOMBSTONE_SCHEMA,
    conformed,
)
from graphstrata.engine.store.tables import member, newest_live_rows

__all__ = [
    "MERGED_TABLES",
    "HeldSegments",
    "merge_tails",
    "merged_rows",
    "run_to_merge",
    "tier",
]

#: The tables whose segments are merged, tombstones first (the other merges drop the rows
#: they kill), with their schemas and the names of their segment files.
MERGED_TABLES: dict[str, tuple[pa.Schema, str]] = {
    "node_tombstones": (TOMBSTONE_SCHEMA, "tomb-nodes"),
    "doc_tombstones": (TOMBSTONE_SCHEMA, "tomb-docs"),
    "nodes": (NODE_SCHEMA, "nodes"),
    "edges": (EDGE_SCHEMA, "edges"),
    "docs": (DOC_SCHEMA, "docs"),
}


class HeldSegments:
    """The table segments this process wrote, held in memory for the merges that read them.

    A writer merges what it committed a few writes before: reading the 8 node segments back
    took 0.12-0.16 s of a 0.26 s merge at a million chunks (a one-off script, not kept).
    A commit's segments are its delta's tables, which the new snapshot holds anyway; a writer
    process that did not write a segment (a new process, or another writer's commit) reads
    it from its file. Segment files are immutable and uniquely named, so what is held stays
    true whoever commits in between.
    """

    def __init__(self) -> None:
        self._tables: dict[str, pa.Table] = {}

    def hold(self, entry: dict[str, Any], table: pa.Table, policy: MaintenanceConfig) -> None:
        """Keep the table just written as ``entry``'s file, if a merge may read it
        (``policy.store_merge_max_rows``)."""
        if int(entry["rows"]) <= policy.store_merge_max_rows:
            self._tables[str(entry["file"])] = table

    def keep_named(self, segments: dict[str, list[dict[str, Any]]]) -> None:
        """Drop the tables no merge of ``segments`` (a manifest's lists) can read."""
        named = {str(e["file"]) for es in segments.values() for e in es if tier(e) is not None}
        self._tables = {f: t for f, t in self._tables.items() if f in named}

    def read(
        self,
        entries: list[dict[str, Any]],
        schema: pa.Schema,
        read_files: Callable[[list[dict[str, Any]], pa.Schema], pa.Table],
    ) -> pa.Table:
        """``entries``' rows in order: held ones from memory, the others by ``read_files``."""
        parts = [
            conformed(self._tables[str(e["file"])], schema)
            if str(e["file"]) in self._tables
            else read_files([e], schema)
            for e in entries
        ]
        return pa.concat_tables(parts) if parts else read_files([], schema)


#: Reads the segments of a table (its manifest entries, its name) into one table.
ReadSegments = Callable[[list[dict[str, Any]], str], pa.Table]
#: Writes one segment of a table (rows, table name, file name) and returns its entry.
WriteSegment = Callable[[pa.Table, str, str], dict[str, Any]]


def tier(entry: dict[str, Any]) -> int | None:
    """The merge tier of a segment entry; None for a segment never merged.

    Segments written before tiers were recorded count as tier 0 when they are Parquet (a
    commit's) and are never merged when they are mapped Arrow (a build or a compaction).
    """
    if "tier" in entry:
        return int(entry["tier"])
    return 0 if str(entry["file"]).endswith(".parquet") else None


def run_to_merge(entries: list[dict[str, Any]], policy: MaintenanceConfig) -> int:
    """How many trailing ``entries`` to merge now: ``policy.store_merge_fanin`` or 0.

    The trailing ``store_merge_fanin`` segments are merged when they are all of one tier
    and hold at most ``store_merge_max_rows`` rows together.
    """
    fanin = policy.store_merge_fanin
    if len(entries) < fanin:
        return 0
    run = entries[-fanin:]
    t = tier(run[-1])
    if t is None or any(tier(e) != t for e in run):
        return 0
    if sum(int(e["rows"]) for e in run) > policy.store_merge_max_rows:
        return 0
    return fanin


def merged_rows(
    table: str, rows: pa.Table, dead_nodes: np.ndarray, dead_docs: np.ndarray
) -> pa.Table:
    """The rows of merged segments that readers of the new version need.

    Parameters
    ----------
    table:
        The manifest's name of the table (a key of ``MERGED_TABLES``).
    rows:
        Every row of the segments merged, in manifest order.
    dead_nodes, dead_docs:
        Ascending, unique tombstoned node ids and doc keys of the new version.

    Returns
    -------
    pyarrow.Table
        Nodes: the newest row of each id that is not tombstoned. Edges: those whose two
        endpoints are not tombstoned. Docs: those not tombstoned. These keep their order.
        Tombstones: each id once, ascending.
    """
    if table == "nodes":
        keep = newest_live_rows(rows, dead_nodes)
        if keep is None:
            return rows
        # A filter keeps the segments' order chunk by chunk; a take of rows in id order
        # concatenated the chunks first (8 one-document segments at 1M chunks, 5.7M doc
        # keys: 0.13-0.24 s against 0.04-0.07 s).
        mask = np.zeros(rows.num_rows, bool)
        mask[keep] = True
        return rows.filter(pa.array(mask))
    if table == "edges":
        src, dst = rows.column("src").to_numpy(), rows.column("dst").to_numpy()
        dead = member(src, dead_nodes) | member(dst, dead_nodes)
        return rows.filter(pa.array(~dead)) if dead.any() else rows
    if table == "docs":
        dead = member(rows.column("key").to_numpy(), dead_docs)
        return rows.filter(pa.array(~dead)) if dead.any() else rows
    ids = sets.unique(rows.column("id").to_numpy())
    return pa.table({"id": ids}, schema=TOMBSTONE_SCHEMA)


def merge_tails(
    segments: dict[str, list[dict[str, Any]]],
    read: ReadSegments,
    write: WriteSegment,
    policy: MaintenanceConfig,
) -> int:
    """Merge the trailing runs of every table's segments in place (``run_to_merge``).

    Parameters
    ----------
    segments:
        The new manifest's segment lists, the commit's own segments appended (changed in
        place: each merged run is replaced by its merged segment's entry).
    read:
        Reads segments of a table into one table.
    write:
        Writes a merged segment and returns its entry (``version`` the commit's).
    policy:
        The index's ``store_merge_fanin`` and ``store_merge_max_rows``.

    Returns
    -------
    int
        Bytes written.
    """
    written = 0
    dead: dict[str, np.ndarray] = {}
    for table, (_, file_name) in MERGED_TABLES.items():
        entries = segments[table]
        while n := run_to_merge(entries, policy):
            run = entries[-n:]
            if table not in _TOMBSTONES and not dead:
                dead = {t: _tombstones(segments[t], read, t) for t in _TOMBSTONES}
            rows = read(run, table)
            merged = merged_rows(
                table,
                rows,
                dead.get("node_tombstones", _NONE),
                dead.get("doc_tombstones", _NONE),
            )
            if merged.num_rows == 0:  # every row died: the run leaves no segment
                entries[-n:] = []
                continue
            entry = write(merged, table, file_name)
            entry["tier"] = int(tier(run[-1]) or 0) + 1
            entries[-n:] = [entry]
            written += int(entry["bytes"])
    return written


_TOMBSTONES = ("node_tombstones", "doc_tombstones")
_NONE = np.zeros(0, np.int64)


def _tombstones(entries: list[dict[str, Any]], read: ReadSegments, table: str) -> np.ndarray:
    """Ascending, unique ids of every tombstone segment of ``table``."""
    if not entries:
        return _NONE
    return sets.unique(read(entries, table).column("id").to_numpy())
