"""Per-node state as a base plus patches: the pure functions against a dict oracle, and the
store's chains (patch, new base, compact, a pinned older version)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from graphstrata.core.communities import stable_labels
from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.store import Store, node_state
from graphstrata.engine.types import NodeKind

DIM = 4


def _mapping(rng: np.random.Generator, n_ids: int, n_values: int) -> dict[int, int]:
    ids = rng.choice(200, size=min(n_ids, 200), replace=False)
    return {int(i): int(rng.integers(0, n_values)) for i in ids}


def _as_arrays(m: dict[int, int]) -> node_state.NodeState:
    ids = np.asarray(sorted(m), np.int64)
    return ids, np.asarray([m[int(i)] for i in ids], np.int64)


@pytest.mark.parametrize("seed", range(8))
def test_patches_replay_every_version_like_a_dict(seed):
    rng = np.random.default_rng(seed)
    versions = [_mapping(rng, int(rng.integers(0, 60)), 5) for _ in range(6)]
    parts = [node_state.as_rows(*_as_arrays(versions[0]))]
    for prev, new in itertools.pairwise(versions):
        rows = node_state.patch(_as_arrays(new), _as_arrays(prev))
        changed = {i for i in new if prev.get(i) != new[i]} | (set(prev) - set(new))
        assert sorted(rows[0].tolist()) == sorted(changed)  # exactly what changed
        # A writer that knows the changes gets the same rows without the merge.
        ids = _as_arrays(new)[0]
        known = (
            np.asarray([prev.get(i) != new[i] for i in ids.tolist()], bool),
            np.asarray(sorted(set(prev) - set(new)), np.int64),
            len(set(new) - set(prev)),
        )
        if prev:
            np.testing.assert_array_equal(
                node_state.patch(_as_arrays(new), _as_arrays(prev), known), rows
            )
            # Changes whose counts do not add up (the previous mapping held other ids than
            # the writer assumed) are not trusted: the merge finds the rows.
            wrong = (known[0] & False, known[1][:0], known[2] + 1)
            np.testing.assert_array_equal(
                node_state.patch(_as_arrays(new), _as_arrays(prev), wrong), rows
            )
        parts.append(rows)
        ids, values = node_state.apply_rows(parts)
        assert dict(zip(ids.tolist(), values.tolist(), strict=True)) == new


def test_edge_cases_empty_one_node_and_repeated_ids():
    empty = node_state.normalize(np.zeros(0), np.zeros(0))
    assert node_state.patch(empty, None).shape == (3, 0)
    assert [a.size for a in node_state.apply_rows([])] == [0, 0]
    ids, values = node_state.apply_rows([node_state.as_rows(np.asarray([7]), np.asarray([3]))])
    assert ids.tolist() == [7] and values.tolist() == [3]
    # The only node leaves: one removal row, and the mapping is empty.
    rows = node_state.patch(empty, (ids, values))
    assert rows[:, 0].tolist() == [7, 0, 1]
    assert node_state.apply_rows([node_state.as_rows(ids, values), rows])[0].size == 0
    # Unsorted input is sorted; a repeated id is refused.
    ids, values = node_state.normalize(np.asarray([5, 2]), np.asarray([1, 9]))
    assert ids.tolist() == [2, 5] and values.tolist() == [9, 1]
    with pytest.raises(ValueError, match="repeated id"):
        node_state.normalize(np.asarray([3, 3]), np.asarray([1, 2]))
    with pytest.raises(ValueError, match="one value per id"):
        node_state.normalize(np.asarray([3]), np.asarray([1, 2]))


def test_a_new_base_when_patches_would_outgrow_the_mapping():
    policy = MaintenanceConfig()

    def needs_new_base(patch_rows, new_rows, mapping_rows):
        return node_state.needs_new_base(patch_rows, new_rows, mapping_rows, policy)

    assert needs_new_base([], 5, 100) is False
    assert needs_new_base([60], 40, 100) is True
    assert needs_new_base([1] * policy.node_state_patches.minimum, 1, 100) is True


def _store(tmp_path):
    hp = np.random.default_rng(0).standard_normal((4, DIM)).astype(np.float32)
    return Store.create(tmp_path / "ix", {"vector_dtype": "f32"}, {"name": "e", "dim": DIM}, hp, 0)


def _commit(store, labels: dict[int, int], add: int = 0):
    with store.writer():
        snap = store.load()
        delta = store.new_delta()
        if add:
            ids = delta.new_node_ids(add)
            delta.add_nodes(
                ids, int(NodeKind.S), [f"s {i}" for i in ids], np.ones(add), [[0]] * add
            )
        ids, values = _as_arrays(labels)
        delta.put_node_state("c", "labels", ids, values, snap.node_state("c", "labels"))
        return store.commit(delta)


def test_store_writes_patches_then_a_base_and_every_version_reads_back(tmp_path):
    store = _store(tmp_path)
    labels = {i: i % 7 for i in range(100)}
    _commit(store, labels, add=100)
    history = [dict(labels)]
    for step in range(5):
        labels[step] = 50 + step  # one node changes
        _commit(store, labels)
        history.append(dict(labels))
        chain = store.manifest["node_state"]["c/labels"]
        assert len(chain) == step + 2 and chain[-1]["rows"] == 1
        assert chain[-1]["bytes"] < chain[0]["bytes"] / 5  # a 1-row patch, not 100 rows
    # An unchanged mapping writes nothing.
    before = store.manifest["node_state"]["c/labels"]
    _commit(store, labels)
    assert store.manifest["node_state"]["c/labels"] == before
    # A change as large as the mapping writes a new base.
    _commit(store, {i: 99 for i in range(100)})
    assert len(store.manifest["node_state"]["c/labels"]) == 1
    for version, expected in enumerate(history, start=1):
        ids, values = Store.open(tmp_path / "ix", version=version).load().node_state("c", "labels")
        assert dict(zip(ids.tolist(), values.tolist(), strict=True)) == expected


def test_compact_collapses_the_chain_into_a_base_of_live_nodes(tmp_path):
    store = _store(tmp_path)
    labels = {i: 1 for i in range(10)}
    _commit(store, labels, add=10)
    labels[3] = 2
    _commit(store, labels)
    labels[999] = 5  # a node that is not live
    labels[-7] = 4  # a component's own key (below 0, not a node id): kept
    _commit(store, labels)
    with store.writer():
        store.rewrite(store.load())
    chain = store.manifest["node_state"]["c/labels"]
    assert len(chain) == 1 and chain[0]["rows"] == 11
    ids, values = Store.open(tmp_path / "ix").load().node_state("c", "labels")
    assert ids.tolist() == [-7, *range(10)] and values[4] == 2 and values[0] == 4
    assert not store.verify_files().problems


@pytest.mark.parametrize("seed", range(5))
def test_stable_labels_keep_the_partition_and_the_old_labels(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    previous = rng.integers(0, 20, n)
    membership = previous.copy()
    moved = rng.random(n) < 0.1
    membership[moved] = rng.integers(0, 25, int(moved.sum()))
    shuffled = rng.permutation(100)[membership]  # any labels, as igraph returns them
    out = stable_labels(shuffled, previous)
    # Same partition: equal labels exactly where the input's are equal.
    assert np.array_equal(out[:, None] == out[None, :], shuffled[:, None] == shuffled[None, :])
    # One community per label, and a community keeps its majority's old label when free.
    assert len(np.unique(out)) == len(np.unique(shuffled))
    unchanged = int((out == previous).sum())
    assert unchanged >= int((~moved).sum()) * 0.8
    assert stable_labels(np.zeros(0, np.int64), np.zeros(0, np.int64)).size == 0


def test_known_changes_need_ascending_ids():
    from graphstrata.engine.store.delta import Delta

    delta = Delta(1, 10, 0, DIM, "f32")
    previous = (np.asarray([1, 2]), np.asarray([0, 0]))
    known = (np.ones(2, bool), np.zeros(0, np.int64), 0)
    with pytest.raises(ValueError, match="ascending"):
        delta.put_node_state("c", "s", np.asarray([2, 1]), np.asarray([5, 6]), previous, known)
    delta.put_node_state("c", "s", np.asarray([1, 2]), np.asarray([5, 6]), previous, known)
    assert delta.node_state["c/s"][1][:2].tolist() == [[1, 2], [5, 6]]
