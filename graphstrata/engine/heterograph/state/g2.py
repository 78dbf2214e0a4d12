"""G2 (the S, N, R, A nodes and the edges between them) kept across versions, on slots.

The communities stage runs Leiden on G2 from the committed partition. Read from the
version's tables, that is several passes over all of G2 per write: its edges mapped to
positions (7.3 ms at 100k chunks), the committed labels and groups looked up for every node
(3.3 and 2.6 ms), and the local run's contraction and frontier, each a pass over every edge
(5.5 and ~1 ms): ~20 ms of a one-document write at 100k chunks against ~2 at 10k
(a one-off script, not kept; issue 17). A write's result is the next write's start,
so the stage hands a :class:`G2Graph` to the next write of the same process
(``HeterographComponent``): the G2 nodes on positions with their committed label, group,
degree and kind (unit or attribute), the (community, group) pair table the pairing reads,
and the edges as a two-layer CSR on *slots* (the positions of its last compaction plus the
nodes added since, dead ones included, as the walk graph keeps its own: ``walk_graph``;
positions and slots are converted through the dead slots, ``walk_graph.slots_of``). A
write cuts its deleted nodes out of the per-position arrays (run by run between them),
appends its new ones, marks the deleted slots dead, merges its new edges into the extra
layer, moves the changed nodes in the pair table and reads only the rows of the nodes the
local run opens (``core.layered.incident_edges``). The communities stage at 100k chunks took
39.6 ms per insert before and 17.3-19.6 ms after (median of 8 inserts on a copy of the kept
index, a one-off script, not kept, four runs; issue 17).

The graph a write starts from equals the one a fresh process reads from the tables: the
same ids, labels, groups, degrees and edges (a test builds both after every write of a
sequence), and the local run gets the same contracted graph (it sums the edges with an
opened end; their order does not matter), so the partition is the same too. The first
write of a process, a whole-graph run (``maintain``) and a write adding more edges than
the extra layer may hold read the tables as before and build the graph for the next.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import graphstrata.engine.heterograph.state.walk_graph as walk_graph
from graphstrata.core import sets
from graphstrata.core.graph import csr_from_edges, merge_edges
from graphstrata.core.ids import EdgesWithin, edges_within, find_positions
from graphstrata.core.layered import LayeredCSR, flatten, incident_edges, plain
from graphstrata.core.splice import spliced
from graphstrata.engine.heterograph.build.groups import Pairs, moved_pairs, pairs_of
from graphstrata.engine.heterograph.build.work import EMPTY, Work
from graphstrata.engine.heterograph.schema import G2_EDGES, G2_KINDS, A, S
from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.store.node_state import Changes

__all__ = ["G2Graph", "G2Step", "StateChanges", "table_edges"]

#: The G2 kinds elements are written from (semantic units and attributes).
CONTENT_KINDS = (S, A)


def table_edges(work: Work, g2_ids: np.ndarray) -> EdgesWithin:
    """The G2 edges after ``work``'s operation on positions of ``g2_ids``, read from the
    committed tables and the operation's new edges: by kind, committed before new. An edge
    leaves with either end (``cut``: the live end of an edge whose other end this operation
    deleted; G2 edges join G2 nodes, so an end not in ``g2_ids`` is dead)."""
    parts = [p for kind in G2_EDGES for p in (work.committed_edges(kind), work.edges.of(kind))]
    src = np.concatenate([p[0] for p in parts])
    dst = np.concatenate([p[1] for p in parts])
    return edges_within(g2_ids, src, dst)


@dataclass(frozen=True)
class G2Graph:
    """One version's G2: its nodes on positions, its edges on slots, with the committed
    partition and element groups.

    Attributes
    ----------
    ids:
        Ascending ids of the live G2 nodes (their positions).
    dead_slots:
        The dead slots of ``csr``, ascending (the nodes deleted since the last compaction):
        position ``p`` is the ``p``-th live slot (``walk_graph.slots_of``, as the walk graph
        finds its own).
    csr:
        The undirected G2 edges on slots, each pair's entry its number of edges.
    degree:
        float64 per position: how many edges the node is an end of (its strength in
        Leiden, every G2 edge weighing 1).
    labels, group_of:
        int64 per position: its community (``ST_LEIDEN``) and element group
        (``ST_GROUP_OF``, -1: none).
    content:
        bool per position: a semantic unit or an attribute (what elements are written from).
    pairs:
        The (community, group) pairs of the nodes with a group (``groups.Pairs``).
    """

    ids: np.ndarray
    dead_slots: np.ndarray
    csr: LayeredCSR
    degree: np.ndarray
    labels: np.ndarray
    group_of: np.ndarray
    content: np.ndarray
    pairs: Pairs

    @classmethod
    def build(
        cls,
        ids: np.ndarray,
        edges: EdgesWithin,
        labels: np.ndarray,
        group_of: np.ndarray,
        content: np.ndarray,
    ) -> G2Graph:
        """The graph of the G2 nodes ``ids`` (ascending), their ``edges`` on positions, the
        partition and groups written for them, and which are S or A (``content``)."""
        ones = np.ones(edges.src.size, np.float32)
        csr = plain(*csr_from_edges(edges.src, edges.dst, ones, int(ids.size)))
        labels, group_of = np.asarray(labels, np.int64), np.asarray(group_of, np.int64)
        return cls(
            np.asarray(ids, np.int64),
            EMPTY,
            csr,
            np.asarray(edges.degree, np.float64),
            labels,
            group_of,
            np.asarray(content, bool),
            pairs_of(labels, group_of),
        )

    def step(self, work: Work, maintenance: MaintenanceConfig) -> G2Step | None:
        """The G2 of ``work``'s operation, advanced from this graph (the committed one).

        Returns None where the graph cannot be advanced, and the operation reads the
        tables instead: a new node below a live node's id (ids are allocated in order, so
        not in practice), or more new edges than the extra layer may hold
        (``maintenance.g2_extra``: a build's batches).
        """
        added = sorted(
            (i, k in CONTENT_KINDS)
            for i, k in work.new_kind.items()
            if k in G2_KINDS and i not in work.dead
        )
        new = np.asarray([i for i, _ in added], np.int64)
        new_content = np.asarray([c for _, c in added], bool)
        if new.size and self.ids.size and new[0] <= self.ids[-1]:
            return None
        parts = [work.edges.of(kind) for kind in G2_EDGES]
        new_src = np.concatenate([EMPTY, *(p[0] for p in parts)])
        new_dst = np.concatenate([EMPTY, *(p[1] for p in parts)])
        extra_after = self.csr.extra_entries + 2 * new_src.size
        if maintenance.g2_extra.should_fold(extra_after, int(self.csr.indices.shape[0])):
            return None
        died = find_positions(self.ids, work.dead_array())
        died = died[died >= 0]  # positions, ascending
        died_slots = walk_graph.slots_of(died, self.dead_slots)
        alive = np.concatenate([self.csr.alive, np.ones(new.size, bool)])
        alive[died_slots] = False
        # The new nodes take the slots past the old ones, in order, like their positions.
        dead_slots = sets.union(self.dead_slots, died_slots)
        fill = np.full(new.size, -1, np.int64)
        at = np.arange(self.ids.size - died.size, self.ids.size - died.size + new.size)
        # The deleted positions cut out and the new nodes appended, at copy speed.
        ids, degree, labels, group_of, content = (
            spliced(a, died, at, tail)
            for a, tail in (
                (self.ids, new),
                (self.degree, np.zeros(new.size, np.float64)),
                (self.labels, fill),
                (self.group_of, fill),
                (self.content, new_content),
            )
        )
        # Edges from a deleted node to a live one: the live end loses them ("cut").
        _d_src, d_dst, d_w = incident_edges(self.csr, died_slots)
        lost = alive[d_dst]
        cut = [walk_graph.positions_of(d_dst[lost], dead_slots)]
        np.subtract.at(degree, cut[0], d_w[lost])
        # New edges: between two G2 nodes after the operation, or cut (one end gone).
        a, b = find_positions(ids, new_src), find_positions(ids, new_dst)
        both = (a >= 0) & (b >= 0)
        cut += [a[(a >= 0) & (b < 0)], b[(b >= 0) & (a < 0)]]
        np.add.at(degree, a[both], 1)
        np.add.at(degree, b[both], 1)
        s = walk_graph.slots_of(a[both], dead_slots)
        d = walk_graph.slots_of(b[both], dead_slots)
        extra = merge_edges(*self.csr.extra, s, d, np.ones(s.size, np.float32), alive.size)
        return G2Step(
            ids=ids,
            dead_slots=dead_slots,
            csr=LayeredCSR(self.csr.indptr, self.csr.indices, self.csr.weights, *extra, alive),
            degree=degree,
            cut=np.concatenate(cut),
            labels=labels,
            group_of=group_of,
            content=content,
            dead_ids=self.ids[died],
            dead_labels=self.labels[died],
            dead_groups=self.group_of[died],
            committed_pairs=self.pairs,
            work=work,
        )


@dataclass(frozen=True)
class StateChanges:
    """What a write changes in the committed partition and groups (``node_state.Changes``
    of ``ST_LEIDEN`` and ``ST_GROUP_OF``)."""

    labels: Changes
    groups: Changes


@dataclass(frozen=True)
class G2Step:
    """One operation's G2 after its change: its nodes on positions of ``ids``, its edges
    on slots.

    Attributes
    ----------
    ids:
        Sorted ids of the G2 nodes after the operation (what ``Work.live_ids(*G2_KINDS)``
        gives).
    dead_slots:
        The dead slots of ``csr`` after the operation (the committed nodes keep their slots,
        new ones get new slots).
    csr:
        The edges after the operation on slots.
    degree:
        float64 per position: its edges after the operation (``EdgesWithin.degree``).
    cut:
        Positions of the live ends of edges that lost their other end (duplicates allowed).
    labels, group_of:
        The committed label and group of each position (-1 for a new node).
    content:
        bool per position: an S or an A.
    dead_ids, dead_labels, dead_groups:
        The G2 nodes the operation deletes (ascending), their committed labels and groups.
    committed_pairs:
        The committed version's (community, group) pairs.
    work:
        The operation (a whole-graph run reads every edge from its tables: ``all``).
    """

    ids: np.ndarray
    dead_slots: np.ndarray
    csr: LayeredCSR
    degree: np.ndarray
    cut: np.ndarray
    labels: np.ndarray
    group_of: np.ndarray
    content: np.ndarray
    dead_ids: np.ndarray
    dead_labels: np.ndarray
    dead_groups: np.ndarray
    committed_pairs: Pairs
    work: Work

    def all(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every edge after the operation, on positions, as :func:`table_edges` reads them
        (the order a run from the tables has: a whole-graph run's result depends on it)."""
        edges = table_edges(self.work, self.ids)
        return edges.src, edges.dst, np.ones(edges.src.size, np.float64)

    def incident(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The edges with an end among the positions ``nodes`` (ascending, unique), each
        once, on positions, with their number of edges as weight. Slots and positions are
        converted by binary searches in the dead slots (few: the graph is compacted when
        they pass ``MaintenanceConfig.g2_dead``)."""
        slots = walk_graph.slots_of(np.asarray(nodes, np.int64), self.dead_slots)
        src, dst, w = incident_edges(self.csr, slots)
        positions = walk_graph.positions_of
        return positions(src, self.dead_slots), positions(dst, self.dead_slots), w

    def relabelled(self, labels: np.ndarray) -> np.ndarray:
        """bool per position: its community in ``labels`` is not its committed one (every
        new node, which had none)."""
        return np.asarray(labels, np.int64) != self.labels

    def pairs_after(self, labels: np.ndarray, relabelled: np.ndarray) -> Pairs:
        """The pairs of the communities ``labels`` (per position; ``relabelled``: of
        :meth:`relabelled`) with the committed groups: the committed pairs less the deleted
        nodes', and the nodes that changed community moved (a new node has no group)."""
        moved = np.flatnonzero(relabelled)
        keys = self.group_of[moved]
        return moved_pairs(
            self.committed_pairs,
            np.concatenate([self.dead_labels, self.labels[moved]]),
            np.concatenate([self.dead_groups, keys]),
            np.asarray(labels, np.int64)[moved],
            keys,
        )

    def after(
        self,
        labels: np.ndarray,
        relabelled: np.ndarray,
        group_of: np.ndarray,
        pairs: Pairs,
        maintenance: MaintenanceConfig,
    ) -> tuple[G2Graph, StateChanges]:
        """The graph of the version this operation commits, with the partition and groups
        it writes (per position; ``relabelled`` and ``pairs``: of :meth:`relabelled` and
        :meth:`pairs_after`), compacted onto positions when the extra layer or the dead
        slots pass ``maintenance.g2_extra`` or ``g2_dead``; and how the partition and groups differ from the
        committed ``ST_LEIDEN`` and ``ST_GROUP_OF`` (which held exactly the committed G2
        nodes): new nodes, changed values and the deleted nodes."""
        labels, group_of = np.asarray(labels, np.int64), np.asarray(group_of, np.int64)
        regrouped = group_of != self.group_of
        at = np.flatnonzero(regrouped)
        moved = labels[at]
        pairs = moved_pairs(pairs, moved, self.group_of[at], moved, group_of[at])
        csr, dead_slots = self.csr, self.dead_slots
        if maintenance.g2_extra.should_fold(
            csr.extra_entries, int(csr.indices.shape[0])
        ) or maintenance.g2_dead.should_fold(csr.dead, csr.n):
            csr, dead_slots = plain(*flatten(csr)), EMPTY
        graph = G2Graph(
            self.ids, dead_slots, csr, self.degree, labels, group_of, self.content, pairs
        )
        new = self.labels < 0  # every committed node has a label
        added = int(np.count_nonzero(new))
        changes = StateChanges(
            (relabelled, self.dead_ids, added), (regrouped | new, self.dead_ids, added)
        )
        return graph, changes
