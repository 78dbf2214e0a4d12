"""Packing ranked nodes under a token budget (docs/architecture.md, "Kernels")."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["pack"]


@njit(cache=True, nogil=True)
def _pack(scores: np.ndarray, tokens: np.ndarray, budget: int) -> np.ndarray:
    # Rank by descending score (NaN last, as -inf; a stable sort keeps input order on
    # ties), then fill greedily: a node that does not fit is skipped.
    n = scores.shape[0]
    neg = np.empty(n, dtype=np.float64)
    for i in range(n):
        x = scores[i]
        neg[i] = np.inf if np.isnan(x) else -x
    order = np.argsort(neg, kind="mergesort")
    selected = np.empty(n, dtype=np.int64)
    n_selected = 0
    used = 0
    for j in range(n):
        i = order[j]
        t = tokens[i]
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
    nodes already ranked get a deterministic result. The ranking and the fill run in one
    compiled kernel that releases the GIL.

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
    return _pack(scores.astype(np.float64), tokens.astype(np.int64), int(budget))
