"""The in-memory tables of one version: live nodes and memory-mapped vectors.

Node rows are keyed by ``id``: the row of the highest ``version`` wins and a tombstone
deletes the id for good. An edge is live while both of its endpoints are; a vector dies with
its node (docs/architecture.md, "Data model").
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphstrata.core import sets
from graphstrata.core.ids import contains, find_positions
from graphstrata.core.splice import splice_positions, spliced
from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.store.arrow_numpy import arrow_of, numpy_of
from graphstrata.engine.types import kind_table


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table with ``schema`` and no rows."""
    # Not ``schema.empty_table()``: that imports pandas (0.3 s of a cold query).
    return pa.Table.from_batches([], schema=schema)


def _segment_columns(
    segments: Sequence[VectorSegment], first: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(ids, segment, row, kind)`` of every row of ``segments``, in segment order, the
    segments numbered from ``first``."""
    if not segments:
        return (
            np.zeros(0, np.int64),
            np.zeros(0, np.int32),
            np.zeros(0, np.int64),
            np.zeros(0, np.uint8),
        )
    return (
        np.concatenate([s.ids for s in segments]),
        np.concatenate(
            [np.full(s.ids.shape[0], first + i, np.int32) for i, s in enumerate(segments)]
        ),
        np.concatenate([np.arange(s.ids.shape[0], dtype=np.int64) for s in segments]),
        np.concatenate([s.kinds for s in segments]),
    )


def _ascending(ids: np.ndarray) -> bool:
    """Strictly ascending (so already sorted and unique)."""
    return ids.size < 2 or bool(np.all(ids[1:] > ids[:-1]))


def member(values: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    """``values in sorted_ids`` (``core.ids.contains``: a lookup table when the ids are dense
    enough, else binary search).

    Parameters
    ----------
    values:
        int64 ids to look up.
    sorted_ids:
        Ascending, unique int64 ids.

    Returns
    -------
    numpy.ndarray
        bool, one per value.
    """
    return contains(sorted_ids, values)


def doc_lists_flat(table: pa.Table, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(doc key, index into rows)`` of every doc key of the rows ``rows`` of a node table.

    Flattened in Arrow: the doc lists of a hub entity's thousands of units are never
    converted to Python lists one by one.
    """
    return flatten_doc_lists(table.column("docs").take(arrow_of(np.asarray(rows, np.int64))))


def flatten_doc_lists(lists: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """``(doc key, index into lists)`` of every key of a column of doc lists."""
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    flat = numpy_of(pc.list_flatten(lists))
    parent = numpy_of(pc.list_parent_indices(lists))
    return np.asarray(flat, np.int64), np.asarray(parent, np.int64)


def gather_rows(table: pa.Table, at: np.ndarray, columns: Sequence[str] | None = None) -> pa.Table:
    """The rows ``at`` of ``table`` in that order (of ``columns`` only, when given).

    Taken chunk by chunk: Arrow's take on a chunked string column first concatenates every
    chunk (a copy of every text per call), which a ``NodeTable`` referring to appended
    commits would pay on each lookup.
    """
    table = table.select(list(columns)) if columns is not None else table
    at = np.asarray(at, np.int64)
    if at.size == 0:
        # Arrow's take of no row still concatenates every chunk: 13-26 ms at 100k chunks,
        # paid by each write that asked for the texts of a kind it did not touch.
        return table.slice(0, 0)
    batches = [b for b in table.to_batches() if b.num_rows]
    if len(batches) <= 1:
        return table.take(arrow_of(at))
    starts = np.cumsum([0] + [b.num_rows for b in batches])
    which = np.searchsorted(starts, at, side="right") - 1
    order = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[order], np.arange(len(batches) + 1))
    parts = [
        batch.take(arrow_of(at[order[lo:hi]] - starts[b]))
        for b, (batch, lo, hi) in enumerate(zip(batches, bounds[:-1], bounds[1:], strict=True))
        if hi > lo
    ]
    back = np.empty_like(order)
    back[order] = np.arange(order.size)
    return pa.Table.from_batches(parts, schema=table.schema).take(arrow_of(back))


def live_nodes(table: pa.Table, dead: np.ndarray) -> NodeTable:
    """The live nodes of node rows: the newest row per id, tombstoned ids dropped, by id.

    The rows are not copied (a take of every text is seconds at a million nodes): the table
    refers to ``table``'s rows in id order (``NodeTable``'s ``order``).

    Parameters
    ----------
    table:
        Every node row of every segment (``NODE_SCHEMA``).
    dead:
        Tombstoned ids, ascending.
    """
    if table.num_rows == 0:
        return NodeTable(table)
    return NodeTable(table, newest_live_rows(table, dead))


def newest_live_rows(table: pa.Table, dead: np.ndarray) -> np.ndarray | None:
    """Rows of the newest row per id of node rows, tombstoned ids dropped, in id order.

    Parameters
    ----------
    table:
        Node rows (``NODE_SCHEMA``), any order; an id's rows differ in ``version``.
    dead:
        Tombstoned ids, ascending.

    Returns
    -------
    numpy.ndarray or None
        int64 row numbers; None when that is every row in order.
    """
    ids = numpy_of(table.column("id"))
    if bool(np.all(ids[1:] > ids[:-1])):  # one sorted segment (a build, a compaction)
        if not dead.size or not member(ids, dead).any():
            return None
        return np.flatnonzero(~member(ids, dead))
    versions = numpy_of(table.column("version"))
    order = np.lexsort((versions, ids))
    sorted_ids = ids[order]
    last = np.ones(sorted_ids.shape[0], dtype=bool)
    last[:-1] = sorted_ids[1:] != sorted_ids[:-1]
    keep = order[last]
    if dead.size:
        keep = keep[~member(ids[keep], dead)]
    return keep


def live_edges(table: pa.Table, live_ids: np.ndarray) -> pa.Table:
    """The edges whose two endpoints are both in ``live_ids`` (ascending, unique)."""
    if table.num_rows == 0:
        return table
    src = numpy_of(table.column("src"))
    dst = numpy_of(table.column("dst"))
    mask = member(src, live_ids) & member(dst, live_ids)
    if mask.all():
        return table
    return table.filter(arrow_of(mask))


#: The fixed-width node columns a ``NodeTable`` holds as numpy arrays: (column, attribute).
FIXED_COLUMNS = (
    ("id", "ids"),
    ("kind", "kind"),
    ("layer", "layer"),
    ("tokens", "tokens"),
    ("code", "code"),
    ("parent", "parent"),
    ("version", "version"),
)
#: A lookup of fewer rows than this reads them one by one from the column's chunks; from
#: this many on, Arrow gathers them chunk by chunk (``gather_rows``). The chunked gather
#: costs a fixed ~0.2-0.8 ms per call (splitting the table into its ~40 chunks at 100k
#: chunks, a take per chunk, a table rebuilt and put back in order), one row read alone
#: ~1-3 us; they broke even between 100 and 300 rows (a one-off script, not kept on
#: the 100k index of ``benchmarks/scale/scale.py``, beside a busy core). A query reads the texts
#: and doc lists of a few dozen rows, three times per ``collapsed`` query.
ROW_BY_ROW_BELOW = 128


def _merged_tail(rows: pa.Table, factor: int) -> pa.Table:
    """``rows`` with its trailing chunks combined into one while the chunk before them
    holds at most ``factor`` times their rows (``MaintenanceConfig.table_chunk_merge_factor``:
    a binary-counter merge, each appended row copied O(log N) times, the chunks O(log N));
    the same rows in the same order."""
    if rows.num_columns == 0:
        return rows
    sizes = [len(c) for c in rows.column(0).chunks]
    start, tail = len(sizes) - 1, sizes[-1] if sizes else 0
    while start >= 1 and sizes[start - 1] <= factor * tail:
        start -= 1
        tail += sizes[start]
    if start >= len(sizes) - 1:
        return rows
    head = sum(sizes[:start])
    return pa.concat_tables([rows.slice(0, head), rows.slice(head).combine_chunks()])


class NodeTable:
    """The live nodes of one version, sorted by id, with numpy views of the fixed columns.

    The text and doc-list columns stay in Arrow and are not copied from version to version:
    a table refers to the rows of an Arrow table (``rows``) through ``order``, the row of
    ``rows`` at each position in id order, and ``merged`` appends a commit's rows to it.
    Rows that left (replaced, tombstoned) are dropped by a copy only once they are most of
    what the table refers to, and trailing appended chunks are combined as they pile up
    (``MaintenanceConfig.table_chunk_merge_factor``), so each write costs work in
    proportion to its rows (amortized) and numpy work on the fixed columns.

    Parameters
    ----------
    rows:
        Node rows (``NODE_SCHEMA``).
    order:
        The row of ``rows`` at each position in id order; ``None`` when ``rows`` holds
        exactly the live rows, sorted by id.
    fixed:
        The ``FIXED_COLUMNS`` in id order, by column name, when the caller has them
        (otherwise read from ``rows``).
    """

    def __init__(
        self,
        rows: pa.Table,
        order: np.ndarray | None = None,
        fixed: dict[str, np.ndarray] | None = None,
    ):
        # One tuple, swapped whole: a reader never sees rows of one and order of the other.
        self._held: tuple[pa.Table, np.ndarray | None] = (
            rows,
            None if order is None else np.asarray(order, np.int64),
        )
        if fixed is None:
            fixed = {}
            for name, _ in FIXED_COLUMNS:
                values = numpy_of(rows.column(name))
                fixed[name] = values if order is None else values[order]
        self.ids: np.ndarray = fixed["id"]
        self.kind: np.ndarray = fixed["kind"]
        self.layer: np.ndarray = fixed["layer"]
        self.tokens: np.ndarray = fixed["tokens"]
        self.code: np.ndarray = fixed["code"]
        self.parent: np.ndarray = fixed["parent"]
        self.version: np.ndarray = fixed["version"]
        # Text and doc lists are Python objects: converted once, on first use.
        self._text: list[str] | None = None
        self._docs: list[list[int]] | None = None
        # A write asks for the ids of a few kinds a dozen times (each an O(N) mask).
        self._of_kinds: dict[tuple[int, ...], np.ndarray] = {}
        # Per set of kinds: versions since it was last asked for (``merged`` drops the sets
        # not asked for in ``table_kind_set_versions``).
        self._kind_age: dict[tuple[int, ...], int] = {}
        # Per column: the rows it was split from, their chunks and where each starts.
        self._chunks: dict[str, tuple[pa.Table, list[pa.Array], list[int]]] = {}

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @property
    def table(self) -> pa.Table:
        """The live rows in id order as one Arrow table (copied out of the rows referred to
        on first use when they hold others: O(N))."""
        return self._own_rows()

    def _own_rows(self) -> pa.Table:
        """Copy the live rows into one table of their own (no-op when they are), so that the
        rows they referred to and no longer need can be freed."""
        rows, order = self._held
        if order is not None:
            rows = rows.take(arrow_of(order))
            self._held = (rows, None)
        return rows

    def _gathered(self, rows: np.ndarray, columns: Sequence[str] | None = None) -> pa.Table:
        """The rows ``rows`` (positions in id order), in that order (``gather_rows``)."""
        held, order = self._held
        rows = np.asarray(rows, np.int64)
        return gather_rows(held, rows if order is None else order[rows], columns)

    def contains(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        """bool per id: is it a live node of this version."""
        return member(np.asarray(ids, dtype=np.int64), self.ids)

    def rows(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        """Row positions of ``ids``.

        Raises
        ------
        KeyError
            For an id that is not live.
        """
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
        """The text of every row."""
        if self._text is None:
            self._text = self.table.column("text").to_pylist()
        return self._text

    @property
    def docs(self) -> list[list[int]]:
        """The doc keys of every row."""
        if self._docs is None:
            self._docs = self.table.column("docs").to_pylist()
        return self._docs

    def texts_at(self, rows: np.ndarray) -> list[str]:
        """Texts of the rows ``rows``, in order.

        A query needs a few rows: they are taken from the Arrow column, so the first query
        after a commit does not convert every text of the new version to Python (O(N) per
        write); once ``texts`` exists it is indexed instead.
        """
        if self._text is not None:
            return [self._text[int(r)] for r in rows]
        return self._values_at("text", rows)

    def docs_at(self, rows: np.ndarray) -> list[list[int]]:
        """Doc keys of the rows ``rows``, in order (as :meth:`texts_at`)."""
        if self._docs is not None:
            return [self._docs[int(r)] for r in rows]
        return self._values_at("docs", rows)

    def _values_at(self, name: str, rows: np.ndarray) -> list[Any]:
        """Python values of column ``name`` at the rows ``rows`` (positions in id order),
        in order: read one by one below ``ROW_BY_ROW_BELOW`` rows, gathered otherwise.

        One by one in plain Python: a query's packing reads one text at a time, and the
        same read through numpy (an array per step) took 11.0 us a row against 3.0 us (the
        1M scale index's node table, a one-off script, not kept).
        """
        rows = np.asarray(rows, np.int64)
        if rows.size >= ROW_BY_ROW_BELOW:
            return self._gathered(rows, [name]).column(name).to_pylist()
        held, order = self._held
        cached = self._chunks.get(name)
        if cached is None or cached[0] is not held:
            chunks = held.column(name).chunks
            starts = list(itertools.accumulate((len(c) for c in chunks), initial=0))
            cached = (held, chunks, starts)
            self._chunks[name] = cached
        _, chunks, starts = cached
        out = []
        for row in rows.tolist():
            at = row if order is None else int(order[row])
            if not 0 <= at < starts[-1]:
                raise IndexError(f"row {row} out of range for {starts[-1]} rows")
            c = bisect.bisect_right(starts, at) - 1
            out.append(chunks[c][at - starts[c]].as_py())
        return out

    def doc_lists_at(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(doc key, index into rows)`` of every doc key of the rows ``rows``
        (``doc_lists_flat``)."""
        return flatten_doc_lists(self._gathered(rows, ["docs"]).column("docs"))

    def text_of(self, ids: np.ndarray | Sequence[int]) -> list[str]:
        """Texts of ``ids``, in order (their rows only: :meth:`texts_at`)."""
        return self.texts_at(self.rows(ids))

    def docs_of(self, ids: np.ndarray | Sequence[int]) -> list[list[int]]:
        """Doc keys of ``ids``, in order (their rows only: :meth:`docs_at`)."""
        return self.docs_at(self.rows(ids))

    def doc_keys_of(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        """The doc keys of ``ids``, all in one int64 array (a key once per node citing it)."""
        return self.doc_lists_at(self.rows(ids))[0]

    def ids_of_kind(self, *kinds: int) -> np.ndarray:
        """Ascending ids of the live nodes of any of ``kinds`` (computed once per set of
        kinds: a table never changes; do not modify the result)."""
        key = tuple(sorted({int(k) for k in kinds}))
        self._kind_age[key] = 0
        found = self._of_kinds.get(key)
        if found is None:
            found = self.ids[np.isin(self.kind, np.asarray(key, dtype=np.uint8))]
            found.flags.writeable = False
            self._of_kinds[key] = found
        return found

    def take(self, ids: np.ndarray | Sequence[int]) -> pa.Table:
        """The rows of ``ids`` as an Arrow table."""
        return self._gathered(self.rows(ids))

    def newer_than(self, version: int) -> pa.Table:
        """The rows written after ``version``, in id order, as an Arrow table."""
        return self._gathered(np.flatnonzero(self.version > version))

    def merged(self, rows: pa.Table, dead: np.ndarray, policy: MaintenanceConfig) -> NodeTable:
        """The node table of the next version: this one without the ids of ``rows`` and
        the tombstoned ``dead``, plus ``rows`` (``NODE_SCHEMA``, ids not in ``dead``).

        The kept rows are not copied: the result refers to this table's Arrow rows with
        ``rows`` appended, in a merged order (two sorted, disjoint id lists: a new row lands
        after the kept rows with smaller ids and the new rows before it). It copies its
        live rows into one table when what it refers to is over twice its size, and
        combines the trailing chunks of what it refers to
        (``policy.table_chunk_merge_factor``).
        """
        row_ids = numpy_of(rows.column("id"))
        leaving = sets.union(dead, row_ids)
        by_id = np.argsort(row_ids, kind="stable")
        new_ids = row_ids[by_id]
        # Positions of the leaving rows and of the new ones: O(changes log N); the columns
        # are then spliced at copy speed (core.splice) instead of through boolean masks.
        drop, at = splice_positions(self.ids, leaving, new_ids)
        n = self.ids.size - drop.size + new_ids.size
        held, order = self._held
        fixed: dict[str, np.ndarray] = {}
        for name, attr in FIXED_COLUMNS:
            fixed[name] = spliced(getattr(self, attr), drop, at, numpy_of(rows.column(name))[by_id])
        old_rows = np.arange(len(self), dtype=np.int64) if order is None else order
        new_order = spliced(old_rows, drop, at, held.num_rows + by_id)
        if rows.num_rows:
            held = _merged_tail(pa.concat_tables([held, rows]), policy.table_chunk_merge_factor)
        if held.num_rows == n and (n == 0 or bool(np.all(new_order == np.arange(n)))):
            out = NodeTable(held, None, fixed)  # only new ids, appended in order
        else:
            out = NodeTable(held, new_order, fixed)
            if held.num_rows > 2 * n + 4096:
                out._own_rows()
        out._of_kinds, out._kind_age = self._kinds_advanced(
            leaving, new_ids, fixed["kind"][at], policy.table_kind_set_versions
        )
        return out

    def _kinds_advanced(
        self, leaving: np.ndarray, new_ids: np.ndarray, new_kinds: np.ndarray, versions: int
    ) -> tuple[dict[tuple[int, ...], np.ndarray], dict[tuple[int, ...], int]]:
        """This table's ``ids_of_kind`` results moved to the merged table, and their ages:
        without the ``leaving`` ids, with the new rows (``new_ids`` ascending, their kinds
        ``new_kinds``) of those kinds: O(ids of the set) per set instead of a mask over
        every row's kind (np.isin over 1.1M kinds: 17 ms in a microbenchmark; issue 17).
        A set nobody asked for in ``versions`` versions (``table_kind_set_versions``; it is
        then computed again on the next request) is dropped, not moved: a
        write that starts from a carried G2 no longer asks for the G2 kinds, and moving the
        nine sets of a 100k-chunk index took 2.7 ms per write (line_profiler). On the 10k
        kept index, 20 insert/delete pairs left 3 of the 9 sets (the time saved was not
        measured apart)."""
        out, ages = {}, {}
        for key, old in self._of_kinds.items():
            age = self._kind_age.get(key, 0) + 1
            if age > versions:
                continue
            add = new_ids[np.isin(new_kinds, np.asarray(key, np.uint8))]
            ids = spliced(old, *splice_positions(old, leaving, add), add)
            ids.flags.writeable = False
            out[key], ages[key] = ids, age
        return out, ages


@dataclass
class VectorSegment:
    """One vector segment file, memory-mapped."""

    ids: np.ndarray
    kinds: np.ndarray
    matrix: np.ndarray  # memory-mapped, read-only
    version: int


class VectorTable:
    """All vector segments of a version (memory-mapped); rows of dead nodes are ignored.

    Parameters
    ----------
    dim:
        The embedding dimension.
    segments:
        The version's vector segments, oldest first.
    live_ids:
        Ascending ids of the version's live nodes.
    """

    def __init__(self, dim: int, segments: list[VectorSegment], live_ids: np.ndarray):
        self.dim = dim
        self.segments = segments
        self._all_ids, self._seg_of, self._row_of, self._kinds = _segment_columns(segments, 0)
        live = member(self._all_ids, live_ids)
        self._all_ids = self._all_ids[live]
        self._seg_of = self._seg_of[live]
        self._row_of = self._row_of[live]
        self._kinds = self._kinds[live]
        self._sorted_ids, self._sorted_pos = self._all_ids, None
        if not _ascending(self._all_ids):
            order = np.argsort(self._all_ids, kind="stable")
            self._sorted_ids, self._sorted_pos = self._all_ids[order], order
        self._kind_counts: np.ndarray | None = None

    def advanced(
        self, new_segments: list[VectorSegment], live_ids: np.ndarray, dead: np.ndarray
    ) -> VectorTable:
        """The table of the version a commit made on this one: ``new_segments`` appended,
        the vectors of the nodes ``dead`` left out.

        Equal to ``VectorTable(dim, segments + new_segments, live_ids)`` (tested) when no
        node but ``dead`` left the live ids. New nodes take ids above every id before, so
        the rows stay in id order and the commit splices the few dead rows out of each
        column instead of filtering every row and sorting the ids again (7-9 ms per commit
        at 100k chunks, 524k vectors in 116 segments; issue 17). Rows out of id order (a
        table made otherwise) fall back to the constructor.

        Parameters
        ----------
        new_segments:
            The vector segments the commit wrote.
        live_ids:
            Ascending ids of the new version's live nodes.
        dead:
            Ids of the nodes the commit deleted.
        """
        added = _segment_columns(new_segments, len(self.segments))
        last = int(self._all_ids[-1]) if self._all_ids.size else -1
        ids = added[0]
        out_of_order = ids.size > 0 and (int(ids[0]) <= last or not _ascending(ids))
        if self._sorted_pos is not None or out_of_order:
            return VectorTable(self.dim, [*self.segments, *new_segments], live_ids)
        drop = find_positions(self._all_ids, sets.unique(np.asarray(dead, np.int64)))
        drop = drop[drop >= 0]
        keep = member(ids, live_ids)
        no = np.zeros(0, np.int64)
        old = (self._all_ids, self._seg_of, self._row_of, self._kinds)
        out = VectorTable.__new__(VectorTable)
        out.dim, out.segments = self.dim, [*self.segments, *new_segments]
        out._all_ids, out._seg_of, out._row_of, out._kinds = (
            np.concatenate([spliced(column, drop, no, more[:0]), more[keep]])
            for column, more in zip(old, added, strict=True)
        )
        out._sorted_ids, out._sorted_pos = out._all_ids, None
        # The live vectors per kind, moved by the commit's rows (a count over every row per
        # write was 0.7 ms at 100k chunks).
        out._kind_counts = None
        if self._kind_counts is not None:
            gone = np.bincount(self._kinds[drop], minlength=256)
            out._kind_counts = self._kind_counts - gone + np.bincount(added[3][keep], minlength=256)
        return out

    def _flat(self, sorted_positions: np.ndarray) -> np.ndarray:
        """Row positions (segment order) of positions in the sorted ids."""
        return sorted_positions if self._sorted_pos is None else self._sorted_pos[sorted_positions]

    def __len__(self) -> int:
        return int(self._all_ids.shape[0])

    @property
    def ids(self) -> np.ndarray:
        """Ids of the live vectors, in segment order."""
        return self._all_ids

    @property
    def kinds(self) -> np.ndarray:
        """Node kind of each of ``ids``."""
        return self._kinds

    def has(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        """bool per id: does it have a live vector."""
        return member(np.asarray(ids, dtype=np.int64), self._sorted_ids)

    def count(self, kinds: Sequence[int], without: np.ndarray | Sequence[int] = ()) -> int:
        """How many live vectors are of ``kinds``, not counting those of the ids ``without``
        (unique): one count over the uint8 kinds and a lookup of ``without``, where a write
        selected the ids of the kinds (a mask per kind, a concatenation and np.isin over
        514k ids at 100k chunks) only to count them (issue 17)."""
        wanted = kind_table(kinds)
        if self._kind_counts is None:
            self._kind_counts = np.bincount(self._kinds, minlength=256)
        total = int(self._kind_counts[wanted].sum())
        without = np.asarray(without, np.int64)
        if without.size and self._sorted_ids.size:
            pos = find_positions(self._sorted_ids, without)
            total -= int(np.count_nonzero(wanted[self._kinds[self._flat(pos[pos >= 0])]]))
        return total

    def get(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        """float32 ``[len(ids), dim]``, copied out of the mapped segments.

        Raises
        ------
        KeyError
            For an id without a live vector.
        """
        ids = np.asarray(ids, dtype=np.int64)
        out = np.empty((ids.shape[0], self.dim), dtype=np.float32)
        if ids.size == 0:
            return out
        pos = np.searchsorted(self._sorted_ids, ids)
        pos = np.minimum(pos, max(self._sorted_ids.shape[0] - 1, 0))
        if self._sorted_ids.size == 0 or np.any(self._sorted_ids[pos] != ids):
            missing = ids if self._sorted_ids.size == 0 else ids[self._sorted_ids[pos] != ids]
            raise KeyError(f"no vector for node ids {missing[:10].tolist()}")
        flat = self._flat(pos)
        segs = self._seg_of[flat]
        rows = self._row_of[flat]
        # One gather per segment over the ids grouped by segment: a fused query's ~100
        # candidates lie in ~10 of a kept index's segments, and a mask per segment took
        # 291 against 158 us (1M scale index, 47 segments; a one-off script, not kept).
        order = np.argsort(segs, kind="stable")
        grouped = segs[order]
        cuts = (np.flatnonzero(grouped[1:] != grouped[:-1]) + 1).tolist()
        for start, end in zip([0, *cuts], [*cuts, ids.size], strict=True):
            at = order[start:end]
            out[at] = self.segments[int(grouped[start])].matrix[rows[at]]
        return out

    def of_kind(self, kind: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids, float32 matrix) of every live vector of one kind."""
        ids = self._all_ids[self._kinds == kind]
        return ids, self.get(ids)

    @property
    def version(self) -> int:
        """The newest version that wrote vectors (-1 for none): the table holds every vector
        written up to it."""
        return max((s.version for s in self.segments), default=-1)

    def rows_since(self, version: int) -> np.ndarray:
        """Vector rows written after ``version`` per node kind (int64 ``[256]``, dead rows
        included): a count over those segments' kinds only."""
        newer = [s.kinds for s in self.segments if s.version > version]
        kinds = np.concatenate(newer) if newer else np.zeros(0, np.uint8)
        return np.bincount(np.asarray(kinds, np.uint8), minlength=256).astype(np.int64)

    def since(self, version: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids, kinds) of live vectors written after ``version``."""
        seg_versions = np.array([s.version for s in self.segments], dtype=np.int64)
        if seg_versions.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.uint8)
        mask = seg_versions[self._seg_of] > version
        return self._all_ids[mask], self._kinds[mask]
