"""The pending changes of one operation (docs/architecture.md, "Write path").

Components and the engine only append to a ``Delta``; nothing touches disk until
``Store.commit`` writes it, so an exception anywhere before the commit leaves the index as
it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from graphstrata.core import sets
from graphstrata.engine.store.node_state import Changes, NodeState, normalize, patch
from graphstrata.engine.store.schema import (
    DOC_SCHEMA,
    EDGE_SCHEMA,
    NODE_SCHEMA,
    vector_numpy_dtype,
)
from graphstrata.engine.store.tables import empty_table


def doc_lists(docs: Sequence[Sequence[int] | np.ndarray]) -> pa.ListArray:
    """The ``docs`` column of node rows: one list of doc keys per row.

    Built from one flat array and offsets: a top-layer summary cites every document below it
    (190k keys at a million chunks). As Python sets, sorts and lists they took ~0.2 s per
    one-document insert there (cProfile, 5 inserts).
    """
    lengths = np.fromiter((len(d) for d in docs), np.int64, len(docs))
    offsets = np.zeros(len(docs) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    parts = [np.asarray(d, np.int64).reshape(-1) for d in docs]
    values = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, pa.int64()))


class Delta:
    """Everything one operation will write. Nothing touches disk until ``Store.commit``.

    Parameters
    ----------
    version:
        The version this delta will commit as (the store's version + 1).
    next_node_id, next_doc_key:
        The first free node id and doc key; ids are never reused.
    dim:
        The embedding dimension.
    vector_dtype:
        ``"f32"`` or ``"f16"``, as the index stores vectors.
    """

    def __init__(
        self, version: int, next_node_id: int, next_doc_key: int, dim: int, vector_dtype: str
    ):
        self.version = version
        self.next_node_id = next_node_id
        self.next_doc_key = next_doc_key
        self.dim = dim
        self.vector_dtype = vector_dtype
        self._nodes: list[pa.Table] = []
        #: ``nodes`` once merged (the commit, the new snapshot and the views all read it).
        self._merged_nodes: pa.Table | None = None
        self._edges: list[pa.Table] = []
        self._docs: list[pa.Table] = []
        self._vectors: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._dead_nodes: list[np.ndarray] = []
        self._dead_docs: list[np.ndarray] = []
        self.state: dict[str, np.ndarray] = {}
        #: ``key -> (the whole new mapping, the patch from the previous version)``.
        self.node_state: dict[str, tuple[NodeState, np.ndarray]] = {}
        self.components: dict[str, dict[str, Any]] = {}

    # ids ------------------------------------------------------------------------------------
    def new_node_ids(self, n: int) -> np.ndarray:
        """Allocate ``n`` fresh node ids (ascending int64)."""
        ids = np.arange(self.next_node_id, self.next_node_id + n, dtype=np.int64)
        self.next_node_id += n
        return ids

    def new_doc_keys(self, n: int) -> np.ndarray:
        """Allocate ``n`` fresh doc keys (ascending int64)."""
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
        docs: Sequence[Sequence[int] | np.ndarray],
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
                "docs": doc_lists(docs),
                "code": pa.array(col(code, np.uint64)),
                "parent": pa.array(col(parent, np.int64)),
                "version": pa.array(np.full(n, self.version, dtype=np.int64)),
            },
            schema=NODE_SCHEMA,
        )
        self._nodes.append(table)
        self._merged_nodes = None

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
        self._merged_nodes = None

    def delete_nodes(self, ids: np.ndarray | Sequence[int]) -> None:
        """Tombstone node ids; their edges and vectors die with them."""
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
        """Append edges; ``kind`` and ``weight`` broadcast, duplicates add their weights."""
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

    def add_vectors(
        self, ids: np.ndarray, kinds: np.ndarray | int, matrix: np.ndarray
    ) -> np.ndarray:
        """Record the vectors ``matrix`` (``[len(ids), dim]``) of new nodes of ``kinds``.

        Returns
        -------
        numpy.ndarray
            float32 ``matrix`` rounded to the precision the index stores vectors in, as
            recorded: LSH codes, tie-breaks and edges computed from a new vector must be the
            ones a later operation computes from the same vector read back (with float16
            storage a projection within float16 rounding of zero flips its bit otherwise).
        """
        ids = np.asarray(ids, dtype=np.int64)
        matrix = np.asarray(matrix, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape != (ids.shape[0], self.dim):
            raise ValueError(
                f"add_vectors: expected matrix [{ids.shape[0]}, {self.dim}], got {matrix.shape}"
            )
        stored = vector_numpy_dtype(self.vector_dtype)
        if stored is not np.float32:
            matrix = matrix.astype(stored).astype(np.float32)
        if ids.size:
            k = np.asarray(kinds, dtype=np.uint8)
            self._vectors.append(
                (ids, np.full(ids.shape[0], k, np.uint8) if k.ndim == 0 else k, matrix)
            )
        return matrix

    def add_docs(self, table: pa.Table) -> None:
        """Append document rows (``DOC_SCHEMA``)."""
        if table.num_rows:
            self._docs.append(table.cast(DOC_SCHEMA))

    def delete_docs(self, keys: np.ndarray | Sequence[int]) -> None:
        """Tombstone doc keys."""
        keys = np.asarray(keys, dtype=np.int64)
        if keys.size:
            self._dead_docs.append(keys)

    def put_state(self, component: str, name: str, array: np.ndarray) -> None:
        """Store a small array of component state (replaces the previous one on commit)."""
        self.state[f"{component}/{name}"] = np.ascontiguousarray(array)

    def put_node_state(
        self,
        component: str,
        name: str,
        ids: np.ndarray,
        values: np.ndarray,
        previous: NodeState | None,
        changes: Changes | None = None,
    ) -> None:
        """Store a per-node integer state (``node id -> value``) for the new version.

        The commit writes only the rows that differ from ``previous`` (the committed
        mapping, :meth:`Snapshot.node_state`), or a new base (``store.node_state``).

        Parameters
        ----------
        component, name:
            Whose state, and which.
        ids, values:
            The whole mapping of the new version: one value per id, ids unique.
        previous:
            The committed mapping (``None``: there is none).
        changes:
            Which ids are new or changed and which left, when the caller knows
            (``node_state.patch``).

        Raises
        ------
        ValueError
            On a repeated id or lengths that differ.
        """
        ids = np.asarray(ids, np.int64)
        new = normalize(ids, values)
        if changes is not None and ids.size > 1 and new[0] is not ids:
            raise ValueError("node state changes need the ids ascending")
        self.node_state[f"{component}/{name}"] = (new, patch(new, previous, changes))

    def set_component_meta(self, component: str, meta: dict[str, Any]) -> None:
        """JSON-serializable metadata of a component, kept in the manifest."""
        self.components[component] = meta

    # views ----------------------------------------------------------------------------------
    @property
    def nodes(self) -> pa.Table:
        """Node rows to write: the last row per id (a component may rewrite a new chunk)."""
        if not self._nodes:
            return empty_table(NODE_SCHEMA)
        if self._merged_nodes is None:
            table = pa.concat_tables(self._nodes)
            ids = table.column("id").to_numpy()
            _, last_from_end = np.unique(ids[::-1], return_index=True)
            if last_from_end.size != ids.size:
                table = table.take(pa.array(np.sort(ids.size - 1 - last_from_end)))
            self._merged_nodes = table
        return self._merged_nodes

    @property
    def edges(self) -> pa.Table:
        """Edge rows to write."""
        return pa.concat_tables(self._edges) if self._edges else empty_table(EDGE_SCHEMA)

    @property
    def docs(self) -> pa.Table:
        """Document rows to write."""
        return pa.concat_tables(self._docs) if self._docs else empty_table(DOC_SCHEMA)

    @property
    def dead_nodes(self) -> np.ndarray:
        """Tombstoned node ids, ascending and unique."""
        return (
            sets.unique(np.concatenate(self._dead_nodes))
            if self._dead_nodes
            else np.zeros(0, np.int64)
        )

    @property
    def dead_docs(self) -> np.ndarray:
        """Tombstoned doc keys, ascending and unique."""
        return (
            sets.unique(np.concatenate(self._dead_docs))
            if self._dead_docs
            else np.zeros(0, np.int64)
        )

    @property
    def vector_kinds(self) -> np.ndarray:
        """uint8 node kind of every vector recorded (without concatenating the vectors)."""
        if not self._vectors:
            return np.zeros(0, np.uint8)
        return np.concatenate([v[1] for v in self._vectors])

    def vectors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, kinds, float32 matrix) of every vector recorded, in order."""
        if not self._vectors:
            return np.zeros(0, np.int64), np.zeros(0, np.uint8), np.zeros((0, self.dim), np.float32)
        ids = np.concatenate([v[0] for v in self._vectors])
        kinds = np.concatenate([v[1] for v in self._vectors])
        mats = np.concatenate([np.asarray(v[2], dtype=np.float32) for v in self._vectors])
        return ids, kinds, mats
