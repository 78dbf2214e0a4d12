"""Equality of two snapshots (tables, vectors, state), as a reader sees them."""

from __future__ import annotations

import numpy as np

from graphstrata.engine.store import Snapshot
from graphstrata.engine.store.tables import FIXED_COLUMNS


def assert_same_snapshot(got: Snapshot, want: Snapshot, same_files: bool = True) -> None:
    """Same manifest (unless the two are different indexes: ``same_files`` False), tables
    (row order included), vectors, state and node state."""
    if same_files:
        assert got.manifest == want.manifest
    # the rows as a reader sees them, before the advanced table is copied into one
    assert got.nodes.take(got.nodes.ids).equals(want.nodes.table)
    for name, attr in FIXED_COLUMNS:
        np.testing.assert_array_equal(getattr(got.nodes, attr), getattr(want.nodes, attr), name)
    assert got.nodes.table.equals(want.nodes.table)
    assert got.edges.equals(want.edges)
    assert got.docs.equals(want.docs)
    np.testing.assert_array_equal(got.vectors.ids, want.vectors.ids)
    for kind in range(10):  # the per-kind counts a write advances (NodeKind values)
        assert got.vectors.count([kind]) == want.vectors.count([kind]), kind
    np.testing.assert_array_equal(
        got.vectors.get(want.vectors.ids), want.vectors.get(want.vectors.ids)
    )
    np.testing.assert_array_equal(got.hyperplanes, want.hyperplanes)
    assert sorted(got.state_arrays) == sorted(want.state_arrays)
    for key, array in want.state_arrays.items():
        np.testing.assert_array_equal(got.state_arrays[key], array, err_msg=key)
    assert sorted(got.node_state_arrays) == sorted(want.node_state_arrays)
    for key, (ids, values) in want.node_state_arrays.items():
        np.testing.assert_array_equal(got.node_state_arrays[key][0], ids, err_msg=key)
        np.testing.assert_array_equal(got.node_state_arrays[key][1], values, err_msg=key)
