"""``walk_graph.slots_of`` and ``positions_of``: a position's slot from the dead slots and
back, against the live slots listed in order."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.engine.heterograph.state.walk_graph import positions_of, slots_of


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
    np.testing.assert_array_equal(positions_of(live, np.flatnonzero(~alive)), np.arange(live.size))


def test_slots_and_positions_edge_cases():
    none = np.zeros(0, np.int64)
    assert slots_of(none, none).size == 0 and positions_of(none, none).size == 0
    assert slots_of(np.asarray([0, 3]), none).tolist() == [0, 3]  # no dead slot
    assert positions_of(np.asarray([0, 3]), none).tolist() == [0, 3]
    # dead slots first, last and in a run
    dead = np.asarray([0, 1, 4, 7])
    live = np.setdiff1d(np.arange(8), dead)
    np.testing.assert_array_equal(slots_of(np.arange(live.size), dead), live)
    live = np.setdiff1d(np.arange(9), dead)  # a live slot past the last dead one
    assert positions_of(live, dead).tolist() == list(range(live.size))
