"""heterograph.links: typed links on slots, advanced by commits (oracle: the links and columns
rebuilt from the live edges)."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.engine.heterograph.state.links import SlotLinks, StructuralLinks
from graphstrata.engine.types import EdgeKind

KINDS = np.asarray(
    [
        EdgeKind.CHUNK_UNIT,
        EdgeKind.UNIT_ENTITY,
        EdgeKind.ENTITY_ATTRIBUTE,
        EdgeKind.ELEMENT_TITLE,
        EdgeKind.SEMANTIC,
    ],
    np.uint8,
)
FIELDS = {
    int(EdgeKind.CHUNK_UNIT): "chunk_units",
    int(EdgeKind.UNIT_ENTITY): "unit_entities",
    int(EdgeKind.ENTITY_ATTRIBUTE): "entity_attributes",
}


def pairs(links: SlotLinks, sources: np.ndarray, alive: np.ndarray | None) -> list[tuple]:
    targets, origins = links.follow(sources, alive)
    return sorted(zip(origins.tolist(), targets.tolist(), strict=True))


def oracle(src, dst, kind, alive):
    """Links and columns of the edges with both ends alive, from scratch."""
    live = alive[src] & alive[dst]
    src, dst, kind = src[live], dst[live], kind[live]
    out = {}
    for k, name in FIELDS.items():
        out[name] = sorted(zip(src[kind == k].tolist(), dst[kind == k].tolist(), strict=True))
    title = kind == int(EdgeKind.ELEMENT_TITLE)
    out["title_elements"] = sorted(zip(dst[title].tolist(), src[title].tolist(), strict=True))
    n = alive.size
    out["units_of"] = np.bincount(dst[kind == int(EdgeKind.UNIT_ENTITY)], minlength=n)
    chunk_of = np.full(n, -1, np.int64)
    cu = kind == int(EdgeKind.CHUNK_UNIT)
    chunk_of[dst[cu]] = src[cu]
    out["chunk_of"] = chunk_of
    return out


def check(links: StructuralLinks, src, dst, kind, alive) -> None:
    want = oracle(src, dst, kind, alive)
    everyone = np.flatnonzero(alive)
    for name in (*FIELDS.values(), "title_elements"):
        assert pairs(getattr(links, name), everyone, alive) == want[name], name
    np.testing.assert_array_equal(links.units_of[alive], want["units_of"][alive])
    np.testing.assert_array_equal(links.chunk_of[alive], want["chunk_of"][alive])


CHUNKS = 20  # nodes 0..19 are chunks, the others units


def random_edges(rng, n_old, n, e, alive):
    """Random links between live nodes, and one chunk link from a live chunk into each new
    unit (a unit's chunk link is written with it: ``decompose``)."""
    live = np.flatnonzero(alive)
    src, dst = rng.choice(live, e), rng.choice(live, e)
    kind = KINDS[rng.integers(0, KINDS.size, e)]
    other = kind != np.uint8(EdgeKind.CHUNK_UNIT)
    src, dst, kind = src[other], dst[other], kind[other]
    units = np.arange(max(n_old, CHUNKS), n)
    chunks = rng.choice(live[live < CHUNKS], units.size)
    chunk_kind = np.full(units.size, EdgeKind.CHUNK_UNIT, np.uint8)
    return np.r_[src, chunks], np.r_[dst, units], np.r_[kind, chunk_kind]


@pytest.mark.parametrize("seed", range(5))
def test_advanced_links_equal_links_rebuilt_from_the_live_edges(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 60
    alive = np.ones(n, bool)
    src, dst, kind = random_edges(rng, 0, n, 200, alive)
    links = StructuralLinks.build(src, dst, kind, n)
    check(links, src, dst, kind, alive)
    for _ in range(4):  # a commit: some nodes die, some arrive with edges (old ends too)
        died = rng.choice(np.flatnonzero(alive), 5, replace=False)
        # units die with their chunk (``units_of_removed_chunks``)
        cu = (kind == np.uint8(EdgeKind.CHUNK_UNIT)) & np.isin(src, died)
        died = np.union1d(died, dst[cu])
        died = died[alive[died]]  # a commit's dead were live before it
        alive[died] = False
        grow = int(rng.integers(0, 8))
        alive = np.concatenate([alive, np.ones(grow, bool)])
        s, d, k = random_edges(rng, alive.size - grow, alive.size, 30, alive)
        links = links.added(alive.size, died, s, d, k)
        src, dst, kind = np.r_[src, s], np.r_[dst, d], np.r_[kind, k]
        check(links, src, dst, kind, alive)
    # renumbered onto the live slots (a compaction): the same links, on positions
    position = np.where(alive, np.cumsum(alive) - 1, -1)
    moved = links.renumbered(position, alive)
    live = alive[src] & alive[dst]
    check(moved, position[src[live]], position[dst[live]], kind[live], np.ones(alive.sum(), bool))
    assert moved.unit_entities.extra_src.size == 0


def test_links_edge_cases() -> None:
    empty = StructuralLinks.build(np.zeros(0, np.int64), np.zeros(0, np.int64), KINDS[:0], 0)
    assert empty.units_of.size == 0 and empty.chunk_of.size == 0
    assert pairs(empty.unit_entities, np.zeros(0, np.int64), None) == []
    # one node with a self-link; duplicates count twice; a dead target is not followed
    one = StructuralLinks.build(np.asarray([0]), np.asarray([0]), KINDS[1:2], 1)
    assert one.units_of.tolist() == [1]
    dup = StructuralLinks.build(np.asarray([0, 0, 2]), np.asarray([1, 1, 1]), KINDS[[1, 1, 1]], 3)
    assert dup.units_of.tolist() == [0, 3, 0]
    assert pairs(dup.unit_entities, np.asarray([0]), None) == [(0, 1), (0, 1)]
    gone = dup.added(3, np.asarray([2]), np.zeros(0, np.int64), np.zeros(0, np.int64), KINDS[:0])
    assert gone.units_of.tolist() == [0, 2, 0]
    alive = np.asarray([True, False, True])
    assert pairs(gone.unit_entities, np.asarray([0]), alive) == []
    # disconnected: a source with no links
    assert pairs(dup.entity_attributes, np.asarray([0, 1, 2]), None) == []
