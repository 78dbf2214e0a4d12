"""``store.edges.EdgeTable`` advanced commit by commit against filtering every edge."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.store.edges import EdgeTable
from graphstrata.engine.store.schema import EDGE_SCHEMA
from graphstrata.engine.types import EdgeKind
from tests.helpers.maintenance import maintenance

SEMANTIC = int(EdgeKind.SEMANTIC)
KINDS = np.asarray([int(EdgeKind.CHUNK_UNIT), int(EdgeKind.UNIT_ENTITY), SEMANTIC], np.uint8)


def _edges(src, dst, kind) -> pa.Table:
    n = len(src)
    return pa.table(
        {
            "src": pa.array(np.asarray(src, np.int64)),
            "dst": pa.array(np.asarray(dst, np.int64)),
            "kind": pa.array(np.asarray(kind, np.uint8)),
            "weight": pa.array(np.ones(n, np.float32)),
            "version": pa.array(np.arange(n, dtype=np.int64)),
        }
    ).cast(EDGE_SCHEMA)


def _oracle(all_edges: pa.Table, dead: set[int]) -> pa.Table:
    """Every edge ever added without a dead end: other kinds, then semantic, in order."""
    rows = all_edges.to_pylist()
    alive = [r for r in rows if r["src"] not in dead and r["dst"] not in dead]
    ordered = [r for r in alive if r["kind"] != SEMANTIC] + [
        r for r in alive if r["kind"] == SEMANTIC
    ]
    return pa.Table.from_pylist(ordered, schema=EDGE_SCHEMA)


@pytest.mark.parametrize("max_parts", [1, 3, 64])
@pytest.mark.parametrize("seed", range(4))
def test_advanced_edges_equal_filtering_every_edge(seed, max_parts):
    policy = maintenance(edges_parts={"minimum": max_parts}, edges_dead={"minimum": max_parts * 2})
    rng = np.random.default_rng(seed)
    next_id = 40
    live = set(range(next_id))
    first = _edges(rng.integers(0, 40, 60), rng.integers(0, 40, 60), rng.choice(KINDS, 60))
    table = EdgeTable.of(first)
    added, dead = [first], set()
    for step in range(12):
        gone = rng.choice(sorted(live), size=min(len(live), int(rng.integers(0, 4))), replace=False)
        live -= set(gone.tolist())
        dead |= set(gone.tolist())
        new_ids = list(range(next_id, next_id + int(rng.integers(0, 4))))
        next_id += len(new_ids)
        live |= set(new_ids)
        ends = np.asarray(sorted(live), np.int64)
        m = int(rng.integers(0, 10)) if ends.size else 0
        new = _edges(rng.choice(ends, m), rng.choice(ends, m), rng.choice(KINDS, m))
        added.append(new)
        table = table.advanced(np.asarray(sorted(gone.tolist()), np.int64), new, policy)
        want = _oracle(pa.concat_tables(added), dead)
        for kind in KINDS.tolist():  # one kind, filtered on its own, in table order
            of_kind = want.filter(pa.compute.equal(want["kind"], kind))
            src, dst = table.kind_edges(kind)
            np.testing.assert_array_equal(src, of_kind["src"].to_numpy())
            np.testing.assert_array_equal(dst, of_kind["dst"].to_numpy())
            # ... and at some ends (unsorted, repeated, absent and dead ids among them):
            # the same edges' subsequence
            asked = rng.integers(0, next_id + 3, int(rng.integers(0, 8)))
            for end, column in ((0, src), (1, dst)):
                at_src, at_dst = table.kind_edges_at(kind, asked, end)
                sel = np.isin(column, asked)
                np.testing.assert_array_equal(at_src, src[sel])
                np.testing.assert_array_equal(at_dst, dst[sel])
        if step % 3 == 0:  # reading in between changes nothing
            assert table.table.equals(_oracle(pa.concat_tables(added), dead))
    want = _oracle(pa.concat_tables(added), dead)
    assert table.table.equals(want)
    assert table.num_rows == want.num_rows
    assert table.structural.equals(want.filter(pa.compute.not_equal(want["kind"], SEMANTIC)))


def test_edge_table_edge_cases():
    policy = MaintenanceConfig()
    empty = _edges([], [], [])
    table = EdgeTable.of(empty)
    assert table.num_rows == 0 and table.lazy.num_rows == 0
    table = table.advanced(np.asarray([1], np.int64), empty, policy)
    assert table.table.num_rows == 0
    # Only semantic edges, every end deleted.
    table = EdgeTable.of(_edges([1, 2], [2, 3], [SEMANTIC, SEMANTIC]))
    table = table.advanced(np.asarray([2], np.int64), empty, policy)
    assert table.num_rows == 0 and table.structural.num_rows == 0
    # Duplicate edges stay duplicates.
    table = EdgeTable.of(_edges([1, 1], [2, 2], [SEMANTIC, SEMANTIC]))
    more = _edges([1], [2], [SEMANTIC])
    assert table.advanced(np.zeros(0, np.int64), more, policy).num_rows == 3
