"""The heterograph's edges as the ``graph`` view walks them, built once or advanced by a commit.

A view maps node ids to dense positions of its version's sorted node table. Node ids are
allocated above every committed one and never reused, so after a commit the surviving
nodes keep their order and the new ones come after them: the previous version's edges
renumber by a prefix count, the dead ones drop out, and the delta's edges join at the
end, in the order a fresh read of the snapshot gives (``Snapshot.advanced`` appends them
the same way). The CSR follows the same path through ``core.graph.advance_csr`` (one pass
that drops, renumbers and merges, into recycled memory: ``buffers``) instead of a sort of
every edge: at 50k chunks the rebuild was 0.7 s of a one-document insert (issue 17). A test checks the advanced graph equals a fresh one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from graphstrata.core.graph import advance_csr, csr_from_edges
from graphstrata.core.ids import positions_in
from graphstrata.engine.config import HeterographConfig
from graphstrata.engine.heterograph.buffers import CSR_BUFFERS
from graphstrata.engine.heterograph.schema import HETERO_EDGE_KINDS
from graphstrata.engine.store import Delta, Snapshot
from graphstrata.engine.types import EdgeKind

_KINDS = np.asarray(HETERO_EDGE_KINDS, dtype=np.uint8)
_SEMANTIC = np.uint8(EdgeKind.SEMANTIC)


@dataclass(frozen=True)
class WalkEdges:
    """One version's heterograph edges on dense positions, and their symmetric CSR.

    Attributes
    ----------
    src, dst, weight, kind:
        The walked edges of every kind but ``SEMANTIC`` (edges of weight 0 left out), in
        the snapshot's edge order: what the view derives its links from. Semantic edges
        are most of the graph (85% at 10k chunks) and only the walk needs them, so they
        live in the CSR alone and are not renumbered edge by edge on every commit.
    indptr, indices, weights:
        The CSR of every walked edge (``core.graph.csr_from_edges``; semantic edges scaled
        by ``semantic_edge_weight``); the view adds its title links on top.
    """

    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    kind: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray

    @property
    def edge_list(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(src, dst, weight, kind)``."""
        return self.src, self.dst, self.weight, self.kind

    @classmethod
    def build(cls, snapshot: Snapshot, cfg: HeterographConfig) -> WalkEdges:
        """Every walked edge of ``snapshot``."""
        ids = snapshot.nodes.ids
        src, dst, weight, kind = _walked(ids, snapshot.edges, cfg)
        csr = csr_from_edges(src, dst, weight, int(ids.size))
        keep = kind != _SEMANTIC
        return cls(src[keep], dst[keep], weight[keep], kind[keep], *csr)

    def advanced(
        self, previous_ids: np.ndarray, snapshot: Snapshot, delta: Delta, cfg: HeterographConfig
    ) -> WalkEdges:
        """These edges (of the version with ``previous_ids``) moved to ``snapshot``.

        ``delta`` is the change ``snapshot`` committed on top of that version. Falls back to
        :meth:`build` if the surviving nodes are not a prefix of the new table (ids not
        allocated in order).
        """
        ids = snapshot.nodes.ids
        alive = snapshot.nodes.contains(previous_ids)
        k = int(alive.sum())
        if not np.array_equal(ids[:k], previous_ids[alive]):
            return WalkEdges.build(snapshot, cfg)
        new_pos = np.cumsum(alive) - 1
        stay = alive[self.src] & alive[self.dst]
        edges = delta.edges
        if edges.num_rows:
            s, d = edges.column("src").to_numpy(), edges.column("dst").to_numpy()
            live = snapshot.nodes.contains(s) & snapshot.nodes.contains(d)
            edges = edges.filter(pa.array(live))
        n_src, n_dst, n_weight, n_kind = _walked(ids, edges, cfg)
        keep = n_kind != _SEMANTIC
        return WalkEdges(
            np.concatenate([new_pos[self.src[stay]], n_src[keep]]),
            np.concatenate([new_pos[self.dst[stay]], n_dst[keep]]),
            np.concatenate([self.weight[stay], n_weight[keep]]),
            np.concatenate([self.kind[stay], n_kind[keep]]),
            *advance_csr(
                self.indptr,
                self.indices,
                self.weights,
                alive,
                n_src,
                n_dst,
                n_weight,
                ids.size,
                empty=CSR_BUFFERS.empty,
            ),
        )


def semantic_edges(
    snapshot: Snapshot, cfg: HeterographConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The walked semantic edges of ``snapshot`` on positions (``(src, dst, weight, kind)``,
    read from its edge table: for the rare reader that needs them one by one)."""
    return _walked(snapshot.nodes.ids, snapshot.edges, cfg, np.asarray([_SEMANTIC], np.uint8))


def _walked(
    ids: np.ndarray, table: pa.Table, cfg: HeterographConfig, kinds: np.ndarray = _KINDS
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The walked edges (of ``kinds``) of an edge table whose ends are all in ``ids``, on
    positions."""
    if not table.num_rows:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0, np.float32), np.zeros(0, np.uint8)
    kind = table.column("kind").to_numpy()
    sel = np.isin(kind, kinds)
    src = positions_in(ids, table.column("src").to_numpy()[sel])
    dst = positions_in(ids, table.column("dst").to_numpy()[sel])
    weight = table.column("weight").to_numpy()[sel].astype(np.float32)
    kind = kind[sel]
    semantic = kind == int(EdgeKind.SEMANTIC)
    weight[semantic] *= np.float32(cfg.semantic_edge_weight)
    keep = weight > 0
    return src[keep], dst[keep], weight[keep], kind[keep]
