"""``walk_graph.slots_of``: a position's slot from the dead slots, against the live slots
listed in order."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.engine.heterograph.walk_graph import slots_of


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dead_share", [0.0, 0.05, 0.5, 0.95])
def test_slots_of_positions_equal_the_live_slots_in_order(seed, dead_share):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    alive = rng.random(n) >= dead_share
    alive[rng.integers(0, n)] = True  # at least one live slot
    live = np.flatnonzero(alive)
    positions = rng.integers(0, live.size, 50)
    got = slots_of(positions, np.flatnonzero(~alive))
    np.testing.assert_array_equal(got, live[positions])


def test_slots_of_edge_cases():
    none = np.zeros(0, np.int64)
    assert slots_of(none, none).size == 0
    assert slots_of(np.asarray([0, 3]), none).tolist() == [0, 3]  # no dead slot
    # dead slots first, last and in a run
    dead = np.asarray([0, 1, 4, 7])
    live = np.setdiff1d(np.arange(8), dead)
    np.testing.assert_array_equal(slots_of(np.arange(live.size), dead), live)
