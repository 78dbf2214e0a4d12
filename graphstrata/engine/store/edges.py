"""One version's live edges, with the bulk kind filtered only when it is read.

Semantic edges are most of the edge table (800k of 947k at 10k chunks, 8.2M of 9.6M at 100k), and a
write never reads them from the table: the walk's CSR holds them and drops dead nodes
itself (``heterograph.walk_graph``). Filtering them at every commit for the nodes it
deleted, and copying what is left, was most of ``Snapshot.advanced``'s 0.49 s in a
one-document write at 100k chunks (0.09 s without it)
(issue 17). So an :class:`EdgeTable` keeps the other edges filtered, and the
``LAZY_KINDS`` edges as the parts appended since they were last filtered plus the ids that
died since; they are filtered when someone reads them, or when the parts or the dead ids
pile up (amortized over the commits before).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from graphstrata.core import sets
from graphstrata.engine.store.schema import EDGE_SCHEMA
from graphstrata.engine.store.tables import empty_table, member
from graphstrata.engine.types import EdgeKind

#: Edge kinds filtered on read (see the module docstring).
LAZY_KINDS = (int(EdgeKind.SEMANTIC),)
#: Appended parts, or dead ids, after which a commit filters the lazy edges at once.
MAX_LAZY_PARTS = 64
MAX_LAZY_DEAD = 1 << 16


def _split(table: pa.Table) -> tuple[pa.Table, pa.Table]:
    """``(other kinds, lazy kinds)`` of an edge table, each in table order."""
    if table.num_rows == 0:
        return table, table
    lazy = np.isin(table.column("kind").to_numpy(), np.asarray(LAZY_KINDS, np.uint8))
    if not lazy.any():
        return table, table.slice(0, 0)
    return table.filter(pa.array(~lazy)), table.filter(pa.array(lazy))


def _without(table: pa.Table, dead: np.ndarray) -> pa.Table:
    """The rows of ``table`` with neither end in ``dead`` (sorted)."""
    if not dead.size or not table.num_rows:
        return table
    src, dst = table.column("src").to_numpy(), table.column("dst").to_numpy()
    alive = ~(member(src, dead) | member(dst, dead))
    return table if alive.all() else table.filter(pa.array(alive))


class EdgeTable:
    """The live edges of one version (``EDGE_SCHEMA``).

    :attr:`table` is every live edge: the other kinds in their order, then the lazy kinds
    in theirs. A table read from disk and one advanced commit by commit give the same.

    Parameters
    ----------
    structural:
        The live edges of the kinds not in ``LAZY_KINDS``.
    lazy_parts:
        Edges of ``LAZY_KINDS``, in order, whose ends were live when they were appended.
    lazy_dead:
        Sorted ids deleted since: edges of ``lazy_parts`` with an end among them are gone.
    """

    def __init__(
        self,
        structural: pa.Table,
        lazy_parts: tuple[pa.Table, ...] = (),
        lazy_dead: np.ndarray | None = None,
    ):
        self.structural = structural.cast(EDGE_SCHEMA)
        self._lazy_parts = tuple(p.cast(EDGE_SCHEMA) for p in lazy_parts if p.num_rows)
        self._lazy_dead = np.zeros(0, np.int64) if lazy_dead is None else lazy_dead
        self._table: pa.Table | None = None

    @classmethod
    def of(cls, table: pa.Table) -> EdgeTable:
        """The edge table of ``table`` (live edges, as read from disk)."""
        structural, lazy = _split(table.cast(EDGE_SCHEMA))
        return cls(structural, (lazy,))

    @property
    def lazy(self) -> pa.Table:
        """The live edges of ``LAZY_KINDS`` (filtered now if ids died since)."""
        if not self._lazy_parts:
            return empty_table(EDGE_SCHEMA)
        if len(self._lazy_parts) > 1 or self._lazy_dead.size:
            # Readers may race here; each computes the same table.
            merged = pa.concat_tables(list(self._lazy_parts))
            self._lazy_parts = (_without(merged, self._lazy_dead).combine_chunks(),)
            self._lazy_dead = np.zeros(0, np.int64)
        return self._lazy_parts[0]

    @property
    def table(self) -> pa.Table:
        """Every live edge (computed once)."""
        if self._table is None:
            self._table = pa.concat_tables([self.structural, self.lazy])
        return self._table

    @property
    def num_rows(self) -> int:
        """How many live edges (filters the lazy kinds if ids died since)."""
        return int(self.structural.num_rows + self.lazy.num_rows)

    def advanced(self, dead: np.ndarray, new_edges: pa.Table) -> EdgeTable:
        """The edges after a commit that deleted ``dead`` (sorted) and added ``new_edges``
        (``EDGE_SCHEMA``; their ends live after the commit)."""
        new_structural, new_lazy = _split(new_edges)
        structural = _without(self.structural, dead)
        if new_structural.num_rows:
            structural = pa.concat_tables([structural, new_structural])
        if structural.num_rows and structural.column("src").num_chunks > MAX_LAZY_PARTS:
            structural = structural.combine_chunks()
        parts, lazy_dead = self._lazy_parts, self._lazy_dead
        if parts and dead.size:
            lazy_dead = sets.union(lazy_dead, dead)
        if new_lazy.num_rows:
            parts = (*parts, new_lazy)
        out = EdgeTable(structural, parts, lazy_dead)
        if len(out._lazy_parts) > MAX_LAZY_PARTS or out._lazy_dead.size > MAX_LAZY_DEAD:
            _ = out.lazy
        return out
