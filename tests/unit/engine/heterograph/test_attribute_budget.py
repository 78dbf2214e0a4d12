"""``Work.leading_within`` and ``Work.leading_within_all``: the leading facts (or community
members) that fit the token budget, counted in blocks, equal to the cumulative sum over every
one (the oracle)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from graphstrata.engine.heterograph.build.work import Work


class Nodes:
    def __init__(self, tokens: np.ndarray):
        self.tokens = tokens
        self.asked = 0

    def rows(self, ids: np.ndarray) -> np.ndarray:
        self.asked += len(ids)
        return np.asarray(ids, np.int64)


def _work(nodes: Nodes, tokens_of: object) -> SimpleNamespace:
    """What ``Work.leading_within`` reads of a Work: its nodes' token counts and
    ``tokens_of`` (the texts this operation rewrote)."""
    work = SimpleNamespace(nodes=nodes, tokens_of=tokens_of)
    work.token_counts = lambda ids, before: Work.token_counts(work, ids, before)  # type: ignore[arg-type]
    work.leading_within = lambda ids, budget, before=False: Work.leading_within(
        work,  # type: ignore[arg-type]
        ids,
        budget,
        before,
    )
    work.leading_within_all = lambda lists, budgets, before=False: Work.leading_within_all(
        work,  # type: ignore[arg-type]
        lists,
        budgets,
        before,
    )
    return work


def _within_all(
    work: SimpleNamespace, lists: list[np.ndarray], budgets: list[int], before: bool
) -> list[list[int]]:
    return list(work.leading_within_all(lists, budgets, before))


def _within(work: SimpleNamespace, ids: np.ndarray, budget: int, before: bool) -> list[int]:
    return list(work.leading_within(ids, budget, before))


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
    work = _work(nodes, lambda part: tokens[part])
    for before in (True, False):
        assert _within(work, ids, budget, before) == oracle(ids, tokens, budget)
    assert _within(work, ids[:0], budget, True) == []


def test_a_hub_entity_counts_few_facts():
    tokens = np.full(100_000, 20)
    nodes = Nodes(tokens)
    work = _work(nodes, None)
    got = _within(work, np.arange(100_000)[::-1], 1500, True)
    assert len(got) == 75 and nodes.asked < 300


@pytest.mark.parametrize("seed", range(5))
def test_within_all_equals_within_per_list(seed):
    # Lists shorter and longer than the first block, empty ones, budgets passed in the
    # first block or not (then read on), duplicated lists.
    rng = np.random.default_rng(10 + seed)
    tokens = rng.integers(0, 60, 5000)
    nodes = Nodes(tokens)
    work = _work(nodes, lambda part: tokens[part])
    lists = [rng.permutation(5000)[: int(rng.integers(0, 400))] for _ in range(12)]
    lists.append(lists[0])
    budgets = [int(b) for b in rng.choice([0, 30, 1500, 10**6], len(lists))]
    for before in (True, False):
        got = _within_all(work, lists, budgets, before)
        want = [oracle(i, tokens, b) if i.size else [] for i, b in zip(lists, budgets)]
        assert got == want
    assert _within_all(work, [], [], True) == []
