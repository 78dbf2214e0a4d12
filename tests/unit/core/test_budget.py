"""core.budget.pack: greedy packing under a token budget (oracle: a Python loop)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphstrata.core.budget import pack


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
