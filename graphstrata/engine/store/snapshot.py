"""One committed version of the index, fully loaded (docs/architecture.md, "Store")."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.store.arrow_numpy import arrow_of, numpy_of
from graphstrata.engine.store.edges import EdgeTable
from graphstrata.engine.store.schema import DOC_SCHEMA, EDGE_SCHEMA, NODE_SCHEMA
from graphstrata.engine.store.tables import NodeTable, VectorSegment, VectorTable, member

if TYPE_CHECKING:
    from graphstrata.engine.store.delta import Delta


@dataclass
class Snapshot:
    """One committed version of the index: tables in memory, vectors memory-mapped.

    A snapshot never changes; a later commit makes a new one, so readers holding this one
    keep a consistent view.
    """

    root: Path
    manifest: dict[str, Any]
    nodes: NodeTable
    edge_table: EdgeTable
    docs: pa.Table
    vectors: VectorTable
    hyperplanes: np.ndarray
    state_arrays: dict[str, np.ndarray] = field(default_factory=dict)
    node_state_arrays: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    @property
    def edges(self) -> pa.Table:
        """Every live edge (``EdgeTable.table``)."""
        return self.edge_table.table

    @property
    def version(self) -> int:
        """The committed version number (0 = empty index)."""
        return int(self.manifest["version"])

    @property
    def config(self) -> dict[str, Any]:
        """The ``IndexConfig`` recorded with this version, as a dict."""
        return self.manifest["config"]

    def state(self, component: str, name: str) -> np.ndarray | None:
        """A component's state array (``Delta.put_state``), or None if never stored."""
        return self.state_arrays.get(f"{component}/{name}")

    def node_state(self, component: str, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """A component's per-node state (``Delta.put_node_state``) as ``(ids, values)``
        sorted by id (ids of nodes deleted since may remain), or None if never stored."""
        return self.node_state_arrays.get(f"{component}/{name}")

    def component_meta(self, component: str) -> dict[str, Any]:
        """A copy of a component's manifest metadata (``Delta.set_component_meta``)."""
        return dict(self.manifest.get("components", {}).get(component, {}))

    def advanced(
        self,
        manifest: dict[str, Any],
        delta: Delta,
        new_vectors: list[VectorSegment],
        policy: MaintenanceConfig,
    ) -> Snapshot:
        """The version ``delta`` committed on top of this one, built in memory.

        Equal to loading the new version from disk (``Store.load``; tested on random
        operation sequences), without rereading and re-sorting every segment: the rows the
        delta replaced or tombstoned leave, its rows join, and only where they land is
        sorted again.

        Parameters
        ----------
        manifest:
            The manifest the commit wrote.
        delta:
            The committed delta (made on this version).
        new_vectors:
            The vector segments the commit wrote, memory-mapped.
        policy:
            The index's fold policies (the node and edge tables' own).
        """
        dead = delta.dead_nodes
        rows = delta.nodes.cast(NODE_SCHEMA)
        if dead.size:
            rows = rows.filter(arrow_of(~np.isin(numpy_of(rows.column("id")), dead)))
        nodes = self.nodes.merged(rows, dead, policy)
        new_edges = delta.edges.cast(EDGE_SCHEMA)
        if new_edges.num_rows:
            src, dst = numpy_of(new_edges.column("src")), numpy_of(new_edges.column("dst"))
            new_edges = new_edges.filter(arrow_of(member(src, nodes.ids) & member(dst, nodes.ids)))
        edges = self.edge_table.advanced(dead, new_edges, policy)
        docs = pa.concat_tables([self.docs.cast(DOC_SCHEMA), delta.docs.cast(DOC_SCHEMA)])
        if delta.dead_docs.size:
            gone = np.isin(numpy_of(docs.column("key")), delta.dead_docs)
            docs = docs.filter(arrow_of(~gone))
        vectors = self.vectors.advanced(new_vectors, nodes.ids, dead)
        per_node = dict(self.node_state_arrays)
        per_node.update({key: mapping for key, (mapping, _) in delta.node_state.items()})
        return Snapshot(
            self.root,
            manifest,
            nodes,
            edges,
            docs,
            vectors,
            self.hyperplanes,
            {**self.state_arrays, **delta.state},
            per_node,
        )
