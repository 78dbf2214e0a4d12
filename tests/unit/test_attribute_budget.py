"""``attributes._within`` and ``_within_all``: the leading facts that fit the token budget,
counted in blocks, equal to the cumulative sum over every fact (the oracle)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from graphstrata.engine.heterograph.attributes import _within, _within_all


class Nodes:
    def __init__(self, tokens: np.ndarray):
        self.tokens = tokens
        self.asked = 0

    def rows(self, ids: np.ndarray) -> np.ndarray:
        self.asked += len(ids)
        return np.asarray(ids, np.int64)


def oracle(ids: np.ndarray, tokens: np.ndarray, budget: int) -> list[int]:
    fits = np.cumsum(tokens[ids]) <= budget
    fits[0] = True
    return sorted(ids[fits].tolist())


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("budget", [0, 5, 40, 1500, 10**9])
def test_within_equals_the_full_cumulative_sum(seed, budget):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, 60, 5000)
    ids = rng.permutation(5000)[: int(rng.integers(1, 5000))]
    nodes = Nodes(tokens)
    work = SimpleNamespace(nodes=nodes, tokens_of=lambda part: tokens[part])
    for before in (True, False):
        assert _within(work, ids, budget, before) == oracle(ids, tokens, budget)  # type: ignore[arg-type]
    assert _within(work, ids[:0], budget, True) == []  # type: ignore[arg-type]


def test_a_hub_entity_counts_few_facts():
    tokens = np.full(100_000, 20)
    nodes = Nodes(tokens)
    work = SimpleNamespace(nodes=nodes, tokens_of=None)
    got = _within(work, np.arange(100_000)[::-1], 1500, True)  # type: ignore[arg-type]
    assert len(got) == 75 and nodes.asked < 300


@pytest.mark.parametrize("seed", range(5))
def test_within_all_equals_within_per_list(seed):
    # Lists shorter and longer than the first block, empty ones, budgets passed in the
    # first block or not (then read on), duplicated lists.
    rng = np.random.default_rng(10 + seed)
    tokens = rng.integers(0, 60, 5000)
    nodes = Nodes(tokens)
    work = SimpleNamespace(nodes=nodes, tokens_of=lambda part: tokens[part])
    lists = [rng.permutation(5000)[: int(rng.integers(0, 400))] for _ in range(12)]
    lists.append(lists[0])
    budgets = [int(b) for b in rng.choice([0, 30, 1500, 10**6], len(lists))]
    for before in (True, False):
        got = _within_all(work, lists, budgets, before)  # type: ignore[arg-type]
        want = [oracle(i, tokens, b) if i.size else [] for i, b in zip(lists, budgets)]
        assert got == want
    assert _within_all(work, [], [], True) == []  # type: ignore[arg-type]
