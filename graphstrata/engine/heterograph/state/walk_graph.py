"""The heterograph's edges as the ``graph`` view walks them, built once or advanced by a commit.

A view maps node ids to dense positions of its version's sorted node table. Node ids are
allocated above every committed one and never reused, so after a commit the surviving
nodes keep their order and the new ones come after them.

The walk's CSR is not renumbered: it lives on *slots*, the ids of the last compaction plus
those added since, in id order, dead ones included (``core.layered``). A commit marks its
deleted nodes dead and merges its new edges into the small extra layer; the base layer of
18.8M entries at 100k chunks is shared untouched by every version until the extra layer
or the dead slots pass a share of it (``MaintenanceConfig.walk_graph_extra``,
``walk_graph_dead``),
when one pass writes base and extra into a new base on positions again
(``core.layered.flatten``, into recycled memory: ``buffers``). Renumbering the whole CSR
on every commit cost ~0.1 s of a one-document write at 100k chunks, a third of the write
time that grew with the corpus (issue 17). The typed links the search follows live on the same slots
(``links``). A test checks the advanced graph, flattened, and the links equal fresh ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa

from graphstrata.core import sets
from graphstrata.core.graph import csr_from_edges, merge_edges
from graphstrata.core.ids import find_positions, positions_in
from graphstrata.core.layered import (
    LayeredCSR,
    advanced_row_weights,
    flatten,
    plain,
    row_weights,
)
from graphstrata.engine.config import HeterographConfig
from graphstrata.engine.heterograph.schema import HETERO_EDGE_KINDS
from graphstrata.engine.heterograph.state.buffers import CSR_BUFFERS
from graphstrata.engine.heterograph.state.links import StructuralLinks
from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.store import Delta, Snapshot
from graphstrata.engine.store.arrow_numpy import arrow_of, numpy_of
from graphstrata.engine.types import EdgeKind

_KINDS = np.asarray(HETERO_EDGE_KINDS, dtype=np.uint8)
_NO_SLOTS = np.zeros(0, np.int64)


@dataclass(frozen=True)
class WalkEdges:
    """One version's walk CSR and typed links, on slots.

    Attributes
    ----------
    slot_ids:
        Ascending ids of the CSR's nodes: every live node and the nodes deleted since the
        last compaction. After a build or a compaction they are the positions.
    csr:
        Every walked edge on slots (``core.graph.csr_from_edges``; semantic edges scaled
        by ``semantic_edge_weight``), the deleted slots dead; the view adds its title
        links on top.
    row_sums:
        float64 per slot: the weight of its row over alive neighbours (0 when dead), kept
        up to date by each commit (``core.layered.advanced_row_weights``), so the walk
        reads each row once and never tests an entry for a dead node (``core.ppr``).
    links:
        The typed links the search follows, on the same slots (``links``).
    dead_slots:
        The dead slots, ascending (``csr.alive`` false): a position's slot is found from
        them in O(log dead) (:func:`slots_of`), without the O(N) ``slot_of_position``.
    """

    slot_ids: np.ndarray
    csr: LayeredCSR
    row_sums: np.ndarray
    links: StructuralLinks
    dead_slots: np.ndarray = field(default_factory=lambda: _NO_SLOTS)

    @cached_property
    def slot_of_position(self) -> np.ndarray:
        """int64 [positions]: the slot of each live node (slots are in id order, as positions)."""
        return np.flatnonzero(self.csr.alive).astype(np.int64)

    @cached_property
    def position_of_slot(self) -> np.ndarray:
        """int64 [slots]: the position of each slot's node (-1 for a dead slot)."""
        alive = self.csr.alive
        return np.where(alive, np.cumsum(alive) - 1, -1).astype(np.int64)

    @classmethod
    def build(cls, snapshot: Snapshot, cfg: HeterographConfig) -> WalkEdges:
        """Every walked edge of ``snapshot``."""
        ids = snapshot.nodes.ids
        src, dst, weight, kind = walked_edges(snapshot, cfg)
        csr = csr_from_edges(src, dst, weight, int(ids.size))
        graph = plain(*csr)
        links = StructuralLinks.build(src, dst, kind, int(ids.size))
        return cls(ids, graph, row_weights(graph), links)

    def advanced(
        self,
        previous_ids: np.ndarray,
        snapshot: Snapshot,
        delta: Delta,
        cfg: HeterographConfig,
        maintenance: MaintenanceConfig,
    ) -> WalkEdges:
        """These edges (of the version with ``previous_ids``) moved to ``snapshot``.

        ``delta`` is the change ``snapshot`` committed on top of that version. Falls back to
        :meth:`build` if the surviving nodes are not a prefix of the new table (ids not
        allocated in order). The CSR is compacted by the ``walk_graph_extra`` and
        ``walk_graph_dead`` policies of ``maintenance``.
        """
        ids = snapshot.nodes.ids
        # The previous nodes the commit kept: all but the delta's deleted ones (a lookup of
        # those, not of every previous id in the new table: 0.9 ms at 100k chunks).
        alive = np.ones(previous_ids.size, bool)
        gone = find_positions(previous_ids, delta.dead_nodes)
        alive[gone[gone >= 0]] = False
        k = int(np.count_nonzero(alive))
        # The survivors are k of the sorted ``ids``: they are its first k exactly when the
        # largest of them is the k-th (one id compared, not every id).
        if k and ids[k - 1] != previous_ids[alive.size - 1 - int(np.argmax(alive[::-1]))]:
            return WalkEdges.build(snapshot, cfg)
        if ids.size > k and self.slot_ids.size and ids[k] <= self.slot_ids[-1]:
            return WalkEdges.build(snapshot, cfg)  # a new id below a dead slot's
        edges = delta.edges
        if edges.num_rows:
            s, d = numpy_of(edges.column("src")), numpy_of(edges.column("dst"))
            live = snapshot.nodes.contains(s) & snapshot.nodes.contains(d)
            edges = edges.filter(arrow_of(live))
        walked = _walked(ids, edges, cfg)
        # Each new edge adds at least one extra entry: past the share, the merged CSR would
        # be flattened in this commit, and building from the snapshot's edges skips the
        # merge, the links' slot bookkeeping and the flatten. A build's commit (every edge
        # new on an empty graph) advanced by merging took 0.68 s against 0.23 s built, at
        # 20k chunks (a one-off script, not kept).
        if self._extra_past_share(self.csr.extra_entries + int(walked[0].size), maintenance):
            return WalkEdges.build(snapshot, cfg)
        return self._advanced(ids, alive, *walked, maintenance=maintenance)

    def _extra_past_share(self, extra_entries: int, maintenance: MaintenanceConfig) -> bool:
        """Whether an extra layer of ``extra_entries`` over this base is compacted
        (``walk_graph_extra``)."""
        base = max(int(self.csr.indices.shape[0]), 1)
        return maintenance.walk_graph_extra.should_fold(extra_entries, base)

    def _advanced(
        self,
        ids: np.ndarray,
        survived: np.ndarray,
        src: np.ndarray,
        dst: np.ndarray,
        weight: np.ndarray,
        kind: np.ndarray,
        *,
        maintenance: MaintenanceConfig,
    ) -> WalkEdges:
        """The CSR and links with the live nodes not ``survived`` (bool per previous
        position) dead, the ids past the survivors new, and the new edges (on the new
        positions) merged into their extra layers; compacted past the policies."""
        old = self.csr
        added = ids[int(np.count_nonzero(survived)) :]
        slot_ids = np.concatenate([self.slot_ids, added])
        alive = np.concatenate([old.alive, np.ones(added.size, dtype=bool)])
        died = slots_of(np.flatnonzero(~survived), self.dead_slots)
        alive[died] = False
        dead_slots = sets.union(self.dead_slots, died)
        # The new positions in slot terms: the old live nodes keep their slots, the new
        # ones take the slots past the old ones (in order, like their positions).
        s, d = slots_of(src, dead_slots), slots_of(dst, dead_slots)
        links = self.links.added(int(slot_ids.size), died, s, d, kind)
        extra = merge_edges(*old.extra, s, d, weight, int(slot_ids.size))
        csr = LayeredCSR(old.indptr, old.indices, old.weights, *extra, alive)
        if self._extra_past_share(
            csr.extra_entries, maintenance
        ) or maintenance.walk_graph_dead.should_fold(csr.dead, csr.n):
            graph = plain(*flatten(csr, empty=CSR_BUFFERS.empty))
            position = np.where(alive, np.cumsum(alive) - 1, -1)
            return WalkEdges(ids, graph, row_weights(graph), links.renumbered(position, alive))
        sums = advanced_row_weights(old, self.row_sums, died, alive, s, d, weight)
        return WalkEdges(slot_ids, csr, sums, links, dead_slots)


def slots_of(positions: np.ndarray, dead_slots: np.ndarray) -> np.ndarray:
    """The slot of each position, given the dead slots (ascending): position ``p`` is the
    ``p``-th live slot, ``p`` plus the dead slots before it. The ``i``-th dead slot has
    ``dead_slots[i] - i`` live slots before it, so those at or below ``p`` are counted by
    one binary search."""
    positions = np.asarray(positions, np.int64)
    if not dead_slots.size:
        return positions.copy()
    before = dead_slots - np.arange(dead_slots.size, dtype=np.int64)
    return positions + np.searchsorted(before, positions, side="right")


def positions_of(slots: np.ndarray, dead_slots: np.ndarray) -> np.ndarray:
    """The position of each live slot (:func:`slots_of` inverted): the slot less the dead
    slots before it, one binary search each in the dead slots (ascending)."""
    slots = np.asarray(slots, np.int64)
    return slots - np.searchsorted(dead_slots, slots, side="left")


def walked_edges(
    snapshot: Snapshot, cfg: HeterographConfig, kinds: np.ndarray = _KINDS
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The walked edges (of ``kinds``; default all) of ``snapshot`` on positions, as
    ``(src, dst, weight, kind)`` read from its edge table, in its order."""
    return _walked(snapshot.nodes.ids, snapshot.edges, cfg, kinds)


def _walked(
    ids: np.ndarray, table: pa.Table, cfg: HeterographConfig, kinds: np.ndarray = _KINDS
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The walked edges (of ``kinds``) of an edge table whose ends are all in ``ids``, on
    positions."""
    if not table.num_rows:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0, np.float32), np.zeros(0, np.uint8)
    kind = numpy_of(table.column("kind"))
    sel = np.isin(kind, kinds)
    src = positions_in(ids, numpy_of(table.column("src"))[sel])
    dst = positions_in(ids, numpy_of(table.column("dst"))[sel])
    weight = numpy_of(table.column("weight"))[sel].astype(np.float32)
    kind = kind[sel]
    semantic = kind == int(EdgeKind.SEMANTIC)
    weight[semantic] *= np.float32(cfg.semantic_edge_weight)
    keep = weight > 0
    return src[keep], dst[keep], weight[keep], kind[keep]
