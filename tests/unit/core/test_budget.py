"""core.budget: greedy packing under a token budget, flat (``pack``) and with items inside
others (``pack_nested``); oracles: Python loops."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphstrata.core.budget import pack, pack_nested


def oracle_pack(scores, tokens, budget: int) -> list[int]:
    keyed = [(-(s if s == s else -np.inf), i) for i, s in enumerate(scores)]  # NaN last
    order = [i for _, i in sorted(keyed)]  # descending score, ties by position
    used, out = 0, []
    for i in order:
        if used + int(tokens[i]) <= budget:
            out.append(i)
            used += int(tokens[i])
    return out


def test_pack_examples() -> None:
    scores = np.array([0.9, 0.8, 0.7, 0.6])
    tokens = np.array([50, 80, 30, 10])
    # 50 fits, 80 does not (130 > 100), 30 fits (80), 10 fits (90)
    assert pack(scores, tokens, 100).tolist() == [0, 2, 3]
    assert pack(scores, tokens, 0).tolist() == []
    assert pack(scores, tokens, 10_000).tolist() == [0, 1, 2, 3]
    assert pack(np.zeros(0), np.zeros(0, np.int64), 5).dtype == np.int64


def test_pack_ties_nan_and_zero_tokens() -> None:
    scores = np.array([1.0, np.nan, 1.0, 2.0, 0.5])
    tokens = np.array([5, 1, 5, 20, 0])
    assert pack(scores, tokens, 11).tolist() == oracle_pack(scores, tokens, 11) == [0, 2, 4, 1]
    assert pack(scores, tokens, 0).tolist() == [4]  # zero-token nodes always fit


def test_pack_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        pack(np.zeros(2), np.zeros(3, np.int64), 5)
    with pytest.raises(ValueError):
        pack(np.zeros(2), np.zeros(2, np.int64), -1)
    with pytest.raises(ValueError):
        pack(np.zeros(2), np.array([1, -1]), 5)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.one_of(st.floats(-5, 5), st.just(float("nan"))), st.integers(0, 50)),
        max_size=60,
    ),
    st.integers(0, 400),
)
def test_pack_property(items, budget: int) -> None:
    scores = np.array([i[0] for i in items], float)
    tokens = np.array([i[1] for i in items], np.int64)
    got = pack(scores, tokens, budget)
    assert got.tolist() == oracle_pack(scores, tokens, budget)
    assert tokens[got].sum() <= budget


def test_pack_kernel_releases_the_gil() -> None:
    from graphstrata.core import budget

    assert budget._pack.targetoptions.get("nogil") is True
    assert budget._pack_nested.targetoptions.get("nogil") is True


class NestedOracle:
    """``pack_nested`` as ``graph``'s packer was written before the kernel: offers of ranked
    items, packed state in dicts (a container's packed parts are listed, then given back)."""

    def __init__(self, tokens, container, inside, capped, budget, capped_budget):
        self.tokens, self.container, self.inside, self.capped = tokens, container, inside, capped
        self.budget, self.capped_budget = budget, capped_budget
        self.used = self.capped_used = 0
        self.order: list[int] = []
        self.packed: set[int] = set()
        self.parts: dict[int, list[int]] = {}

    def offer(self, items, limit: int) -> None:
        cap = min(limit, self.budget)
        for i in items:
            if self.used >= cap:
                break
            if i in self.packed:
                continue
            t = int(self.tokens[i])
            if self.container[i]:
                mine = self.parts.get(i, [])
                refund = sum(int(self.tokens[u]) for u in mine)
                if self.used - refund + t > cap:
                    continue
                for u in mine:
                    self.packed.discard(u)
                    self.capped_used -= int(self.tokens[u]) if self.capped[u] else 0
                self.parts.pop(i, None)
                self.used += t - refund
            else:
                c = int(self.inside[i])
                if (c >= 0 and c in self.packed) or self.used + t > cap:
                    continue
                if self.capped[i]:
                    if self.capped_used + t > self.capped_budget:
                        continue
                    self.capped_used += t
                self.used += t
                if c >= 0:
                    self.parts.setdefault(c, []).append(i)
            self.packed.add(i)
            self.order.append(i)

    def result(self) -> list[int]:
        return [i for i in self.order if i in self.packed]


def oracle_nested(tokens, container, inside, capped, budget, capped_budget, first, first_budget):
    o = NestedOracle(tokens, container, inside, capped, budget, capped_budget)
    n = len(tokens)
    if first is not None and first_budget > 0:
        o.offer([i for i in range(n) if first[i]], first_budget)
    o.offer(range(n), budget)
    return o.result()


def test_pack_nested_examples() -> None:
    # 0: a unit of container 2; 1: a capped item; 2: the container (50); 3: another unit of
    # 2; 4: a unit whose container is not listed.
    tokens = np.array([20, 30, 50, 25, 10])
    container = np.array([False, False, True, False, False])
    inside = np.array([2, -1, -1, 2, -1])
    capped = np.array([False, True, False, False, False])
    got = pack_nested(tokens, container, inside, capped, 200, 100)
    # The container replaces unit 0 (its 20 tokens given back); unit 3 is then skipped.
    assert got.tolist() == [1, 2, 4]
    # A capped budget of 20: the capped item does not fit, the rest as before.
    assert pack_nested(tokens, container, inside, capped, 200, 20).tolist() == [2, 4]
    # 60 tokens: 0 (20) and 1 (30) fit; the container fits only after giving back 0 (20 + 30
    # - 20 + 50 = 80 > 60: skipped); 4 fills up to 60.
    assert pack_nested(tokens, container, inside, capped, 60, 60).tolist() == [0, 1, 4]
    # A first round of containers only, into 50 tokens: 2 first, then the rest by rank.
    first = container.copy()
    got = pack_nested(tokens, container, inside, capped, 200, 100, first, 50)
    assert got.tolist() == [2, 1, 4]
    assert pack_nested(tokens[:0], container[:0], inside[:0], capped[:0], 9, 9).size == 0
    # A round stops once its budget is reached, even where a zero-token item follows.
    zero = pack_nested(np.array([5, 0]), np.zeros(2, bool), np.array([-1, -1]),
                       np.zeros(2, bool), 5, 5)  # fmt: skip
    assert zero.tolist() == [0]


def test_pack_nested_rejects_bad_input() -> None:
    ok = dict(container=np.zeros(2, bool), inside=np.array([-1, -1]), capped=np.zeros(2, bool))
    with pytest.raises(ValueError, match="one length"):
        pack_nested(np.array([1, 2, 3]), budget=5, capped_budget=5, **ok)
    with pytest.raises(ValueError, match=">= 0"):
        pack_nested(np.array([1, 2]), budget=-1, capped_budget=5, **ok)
    with pytest.raises(ValueError, match="token counts"):
        pack_nested(np.array([1, -2]), budget=5, capped_budget=5, **ok)
    bad = {**ok, "inside": np.array([-1, 2])}
    with pytest.raises(ValueError, match="containers"):
        pack_nested(np.array([1, 2]), budget=5, capped_budget=5, **bad)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_pack_nested_property(data) -> None:
    n = data.draw(st.integers(0, 40))
    tokens = np.array(data.draw(st.lists(st.integers(0, 60), min_size=n, max_size=n)), np.int64)
    container = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    holders = np.flatnonzero(container).tolist()
    inside = np.full(n, -1, np.int64)
    for i in np.flatnonzero(~container).tolist():
        if holders and data.draw(st.booleans()):
            inside[i] = data.draw(st.sampled_from(holders))
    capped = ~container & np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    budget = data.draw(st.integers(0, 400))
    capped_budget = data.draw(st.integers(0, budget))
    first = container if data.draw(st.booleans()) else None
    first_budget = data.draw(st.integers(0, budget))
    got = pack_nested(tokens, container, inside, capped, budget, capped_budget, first, first_budget)
    want = oracle_nested(tokens, container, inside, capped, budget, capped_budget, first,
                         first_budget)  # fmt: skip
    assert got.tolist() == want
    # What is kept fits, and no kept item is inside a kept container.
    assert tokens[got].sum() <= budget and tokens[got[capped[got]]].sum() <= capped_budget
    kept = set(got.tolist())
    assert not any(int(inside[i]) in kept for i in kept)
