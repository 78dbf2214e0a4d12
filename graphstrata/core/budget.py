"""Packing ranked nodes under a token budget."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _pack_sorted(order: np.ndarray, tokens: np.ndarray, budget: np.int64) -> np.ndarray:
    selected = np.empty(order.shape[0], dtype=np.int64)
    n_selected = 0
    used = np.int64(0)
    for j in range(order.shape[0]):
        i = order[j]
        t = np.int64(tokens[i])
        if used + t <= budget:
            selected[n_selected] = i
            n_selected += 1
            used += t
    return selected[:n_selected]


def pack(scores: np.ndarray, tokens: np.ndarray, budget: int) -> np.ndarray:
    """Select nodes by descending score while they fit a token budget.

    Greedy fill in rank order: a node that does not fit is skipped and smaller, lower-ranked
    nodes may still fill the rest (the "ranked prefix" generalized so one long node does not
    waste the budget). Ties in score keep input order (stable sort), so callers that pass
    nodes already ranked get a deterministic result.

    Parameters
    ----------
    scores : float array [n]
        Higher is better. NaN scores are ranked last.
    tokens : integer array [n]
        Token count of each node (>= 0).
    budget : int
        Total tokens allowed (>= 0).

    Returns
    -------
    int64 array
        Indices into ``scores`` of the selected nodes, in rank order.
    """
    scores = np.asarray(scores)
    tokens = np.asarray(tokens)
    if scores.ndim != 1 or tokens.ndim != 1 or scores.shape[0] != tokens.shape[0]:
        raise ValueError(
            f"scores and tokens must be 1-d of equal length, got {scores.shape} and {tokens.shape}"
        )
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    if scores.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    if np.any(tokens < 0):
        raise ValueError("token counts must be >= 0")
    keys = np.where(np.isnan(scores), -np.inf, scores.astype(np.float64))
    order = np.argsort(-keys, kind="stable").astype(np.int64)
    return _pack_sorted(order, tokens.astype(np.int64), np.int64(budget))
