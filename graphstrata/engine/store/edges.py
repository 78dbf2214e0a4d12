"""One version's live edges, filtered for the nodes deleted since only when they are read.

A commit deletes a few nodes and adds a few edges; filtering every edge for the deleted
nodes, and copying what is left, cost each commit O(E): at 100k chunks 0.49 s for all
edges, then 45 ms per write for the structural ones alone (1.4M; the semantic 8.2M were
made lazy first) (issue 17). So an :class:`EdgeTable` keeps each group of kinds (the
``LAZY_KINDS``, which a write never reads, and the structural rest, which it reads one kind
at a time) as the parts appended since they were last filtered plus the ids that died
since. A whole group is filtered when someone reads it whole, or when the parts or the
dead ids pile up (``MaintenanceConfig.edges_parts``, ``edges_dead``; amortized over the
commits before); one kind's edges are selected from
the parts and only they are filtered (:meth:`EdgeTable.kind_edges`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from graphstrata.core import sets
from graphstrata.core.graph import spans
from graphstrata.core.ids import contains
from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.store.arrow_numpy import arrow_of, numpy_of
from graphstrata.engine.store.schema import EDGE_SCHEMA
from graphstrata.engine.store.tables import empty_table, member
from graphstrata.engine.types import EdgeKind

#: Edge kinds a write never reads from the table (the walk's CSR holds them).
LAZY_KINDS = (int(EdgeKind.SEMANTIC),)

_EMPTY = np.zeros(0, np.int64)


def _split(table: pa.Table) -> tuple[pa.Table, pa.Table]:
    """``(other kinds, lazy kinds)`` of an edge table, each in table order."""
    if table.num_rows == 0:
        return table, table
    lazy = np.isin(numpy_of(table.column("kind")), np.asarray(LAZY_KINDS, np.uint8))
    if not lazy.any():
        return table, table.slice(0, 0)
    return table.filter(arrow_of(~lazy)), table.filter(arrow_of(lazy))


def _without(table: pa.Table, dead: np.ndarray) -> pa.Table:
    """The rows of ``table`` with neither end in ``dead`` (sorted)."""
    if not dead.size or not table.num_rows:
        return table
    src, dst = numpy_of(table.column("src")), numpy_of(table.column("dst"))
    alive = ~(member(src, dead) | member(dst, dead))
    return table if alive.all() else table.filter(arrow_of(alive))


class _PendingEdges:
    """Edges appended in parts (ends live when appended) and the sorted ids that died
    since: an edge with an end among them is gone."""

    def __init__(
        self,
        parts: tuple[pa.Table, ...] = (),
        dead: np.ndarray | None = None,
        kind_caches: tuple[dict[int, tuple[np.ndarray, np.ndarray]], ...] = (),
        end_caches: tuple[dict[tuple[int, int], tuple[np.ndarray, np.ndarray]], ...] = (),
    ):
        self.parts = tuple(p.cast(EDGE_SCHEMA) for p in parts if p.num_rows)
        self.dead = _EMPTY if dead is None or not self.parts else dead
        # Per part, ``kind -> (src, dst)`` once read: a part never changes, and the next
        # versions share it, so a kind of the large first part is split out once, not at
        # every write (20-27 ms per write for the 1.4M structural edges at 100k chunks).
        self._kinds = tuple(kind_caches[: len(self.parts)]) + tuple(
            {} for _ in range(len(self.parts) - len(kind_caches))
        )
        # Per part, ``(kind, end) -> (that end sorted, the order sorting it)`` once
        # searched (:meth:`kind_at`), shared alike.
        self._ends = tuple(end_caches[: len(self.parts)]) + tuple(
            {} for _ in range(len(self.parts) - len(end_caches))
        )

    def filtered(self) -> pa.Table:
        """The live edges, in order (collapsed into one filtered part, kept)."""
        if not self.parts:
            return empty_table(EDGE_SCHEMA)
        if len(self.parts) > 1 or self.dead.size:
            # Readers may race here; each computes the same table.
            merged = pa.concat_tables(list(self.parts))
            self.parts = (_without(merged, self.dead).combine_chunks(),)
            self.dead = _EMPTY
            self._kinds, self._ends = ({},), ({},)
        return self.parts[0]

    def _part_kind(self, j: int, kind: int) -> tuple[np.ndarray, np.ndarray]:
        """``(src, dst)`` of the edges of ``kind`` in part ``j`` (dead ones included)."""
        cache = self._kinds[j]
        found = cache.get(kind)
        if found is None:
            part = self.parts[j]
            at = np.flatnonzero(numpy_of(part.column("kind")) == kind)
            found = (numpy_of(part.column("src"))[at], numpy_of(part.column("dst"))[at])
            for array in found:
                array.flags.writeable = False  # shared by the versions that share the part
            cache[kind] = found
        return found

    def _alive(self, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.dead.size and src.size:
            alive = ~(contains(self.dead, src) | contains(self.dead, dst))
            src, dst = src[alive], dst[alive]
        return src, dst

    def of_kind(self, kind: int) -> tuple[np.ndarray, np.ndarray]:
        """``(src, dst)`` of the live edges of ``kind``, in order."""
        found = [self._part_kind(j, kind) for j in range(len(self.parts))]
        src = np.concatenate([_EMPTY, *(f[0] for f in found)])
        dst = np.concatenate([_EMPTY, *(f[1] for f in found)])
        return self._alive(src, dst)

    def kind_at(self, kind: int, ids: np.ndarray, end: int) -> tuple[np.ndarray, np.ndarray]:
        """``(src, dst)`` of the live edges of ``kind`` whose ``end`` (0: source, 1:
        destination) is one of ``ids`` (ascending, unique), in order: O(their number) per
        part once each part's ``end`` is sorted (once, shared by the versions after).

        A write asks for the edges at a few dozen nodes; selecting them from every edge of
        the kind was a pass over 0.7M unit -> entity edges per question, six per write: at
        100k chunks ``Work.edges_at`` took 6.9 ms per write, of which the kind split out of
        its parts with the deleted nodes filtered (``kind_edges``, 5.6 ms per write over all
        its callers) was a share (wall time of wrapped functions; issue 17).
        """
        srcs, dsts = [_EMPTY], [_EMPTY]
        for j in range(len(self.parts)):
            src, dst = self._part_kind(j, kind)
            if not src.size or not ids.size:
                continue
            cache = self._ends[j]
            found = cache.get((kind, end))
            if found is None:
                column = (src, dst)[end]
                order = np.argsort(column, kind="stable")  # runs: the ends arrive in order
                found = (column[order], order)
                for array in found:
                    array.flags.writeable = False
                cache[(kind, end)] = found
            keys, order = found
            at = np.sort(
                order[
                    spans(np.searchsorted(keys, ids, "left"), np.searchsorted(keys, ids, "right"))
                ]
            )
            srcs.append(src[at])
            dsts.append(dst[at])
        return self._alive(np.concatenate(srcs), np.concatenate(dsts))

    def advanced(self, dead: np.ndarray, new: pa.Table, policy: MaintenanceConfig) -> _PendingEdges:
        """After a commit that deleted ``dead`` (sorted) and appended ``new``; filtered at
        once past ``policy.edges_parts`` or ``edges_dead``."""
        gone = sets.union(self.dead, dead) if self.parts and dead.size else self.dead
        out = _PendingEdges((*self.parts, new), gone, self._kinds, self._ends)
        if policy.edges_parts.should_fold(len(out.parts)) or policy.edges_dead.should_fold(
            out.dead.size
        ):
            out.filtered()
        return out


class EdgeTable:
    """The live edges of one version (``EDGE_SCHEMA``).

    :attr:`table` is every live edge: the other kinds in their order, then the lazy kinds
    in theirs. A table read from disk and one advanced commit by commit give the same.

    Parameters
    ----------
    structural, lazy:
        The edges of the kinds not in ``LAZY_KINDS`` and of those, each as parts
        appended since they were last filtered and the ids deleted since.
    """

    def __init__(self, structural: _PendingEdges, lazy: _PendingEdges):
        self._structural = structural
        self._lazy = lazy
        self._table: pa.Table | None = None

    @classmethod
    def of(cls, table: pa.Table) -> EdgeTable:
        """The edge table of ``table`` (live edges, as read from disk)."""
        structural, lazy = _split(table.cast(EDGE_SCHEMA))
        return cls(_PendingEdges((structural,)), _PendingEdges((lazy,)))

    @property
    def structural(self) -> pa.Table:
        """The live edges of the kinds not in ``LAZY_KINDS`` (filtered now if needed)."""
        return self._structural.filtered()

    @property
    def lazy(self) -> pa.Table:
        """The live edges of ``LAZY_KINDS`` (filtered now if ids died since)."""
        return self._lazy.filtered()

    def kind_edges(self, kind: int) -> tuple[np.ndarray, np.ndarray]:
        """``(src, dst)`` of the live edges of ``kind``, in table order; only that kind's
        edges are filtered for the ids deleted since."""
        group = self._lazy if int(kind) in LAZY_KINDS else self._structural
        return group.of_kind(int(kind))

    def kind_edges_at(self, kind: int, ids: np.ndarray, end: int) -> tuple[np.ndarray, np.ndarray]:
        """The edges of :meth:`kind_edges` whose ``end`` (0: source, 1: destination) is one
        of ``ids`` (any order, duplicates allowed), in the same order."""
        group = self._lazy if int(kind) in LAZY_KINDS else self._structural
        return group.kind_at(int(kind), sets.unique(np.asarray(ids, np.int64)), int(end))

    @property
    def table(self) -> pa.Table:
        """Every live edge (computed once)."""
        if self._table is None:
            self._table = pa.concat_tables([self.structural, self.lazy])
        return self._table

    @property
    def num_rows(self) -> int:
        """How many live edges (filters the edges if ids died since)."""
        return int(self.structural.num_rows + self.lazy.num_rows)

    def advanced(
        self, dead: np.ndarray, new_edges: pa.Table, policy: MaintenanceConfig
    ) -> EdgeTable:
        """The edges after a commit that deleted ``dead`` (sorted) and added ``new_edges``
        (``EDGE_SCHEMA``; their ends live after the commit); ``policy``: when a group is
        filtered at once."""
        new_structural, new_lazy = _split(new_edges)
        return EdgeTable(
            self._structural.advanced(dead, new_structural, policy),
            self._lazy.advanced(dead, new_lazy, policy),
        )
