"""Packing ranked nodes under a token budget (docs/architecture.md, "Kernels")."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["pack", "pack_nested"]


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


@njit(cache=True, nogil=True)
def _pack_nested(
    tokens: np.ndarray,
    container: np.ndarray,
    inside: np.ndarray,
    capped: np.ndarray,
    first: np.ndarray,
    first_budget: int,
    budget: int,
    capped_budget: int,
) -> np.ndarray:
    n = tokens.shape[0]
    state = np.zeros(n, np.int8)  # 0 open, 1 packed, 2 given back (its container packed)
    parts = np.zeros(n, np.int64)  # tokens of a container's packed parts
    order = np.empty(n, np.int64)
    n_order = 0
    used = 0
    capped_used = 0
    for rnd in range(2):
        if rnd == 0 and first_budget <= 0:
            continue
        cap = min(first_budget, budget) if rnd == 0 else budget
        for i in range(n):
            if used >= cap:
                break
            if (rnd == 0 and not first[i]) or state[i] == 1:
                continue
            t = tokens[i]
            if container[i]:
                if used - parts[i] + t > cap:
                    continue
                for j in range(n):  # its parts are given back: its text holds theirs
                    if inside[j] == i and state[j] == 1:
                        state[j] = 2
                        if capped[j]:
                            capped_used -= tokens[j]
                used += t - parts[i]
                parts[i] = 0
            else:
                c = inside[i]
                if (c >= 0 and state[c] == 1) or used + t > cap:
                    continue
                if capped[i]:
                    if capped_used + t > capped_budget:
                        continue
                    capped_used += t
                used += t
                if c >= 0:
                    parts[c] += t
            state[i] = 1
            order[n_order] = i
            n_order += 1
    kept = np.empty(n_order, np.int64)
    n_kept = 0
    for j in range(n_order):
        if state[order[j]] == 1:
            kept[n_kept] = order[j]
            n_kept += 1
    return kept[:n_kept]


def pack_nested(
    tokens: np.ndarray,
    container: np.ndarray,
    inside: np.ndarray,
    capped: np.ndarray,
    budget: int,
    capped_budget: int,
    first: np.ndarray | None = None,
    first_budget: int = 0,
) -> np.ndarray:
    """Greedy packing of a ranked list whose items may hold one another (``graph``'s chunks
    and the semantic units inside them).

    Items are taken best first while they fit; one that does not fit is skipped. An item
    whose container is packed is skipped (its text is inside the container's), and a
    container packed after some of its parts replaces them: their tokens are given back.
    The ``capped`` items together take at most ``capped_budget`` tokens. With ``first``, a
    first round offers only those items, while at most ``first_budget`` tokens are used in
    all, then a second round offers every item not packed yet. A round stops once the
    tokens used reach its budget. One compiled kernel that releases the GIL.

    Parameters
    ----------
    tokens : integer array [n]
        Each item's tokens (>= 0), in rank order; items are distinct (an item listed twice
        would be packed twice).
    container : bool array [n]
        Whether an item holds others (a chunk). A container is never ``capped`` and is in
        no other item.
    inside : integer array [n]
        The index of the item's container, or -1 (none, or its container is not listed).
    capped : bool array [n]
        The items that count against ``capped_budget``.
    budget, capped_budget : int
        Tokens allowed in all, and to the capped items together.
    first : bool array [n], optional
        The items of the first round (none: no first round).
    first_budget : int
        Tokens the first round may fill in all (0: no first round).

    Returns
    -------
    int64 array
        Indices of the packed items in the order they were packed (given-back ones left out).
    """
    tokens = np.asarray(tokens, np.int64)
    n = tokens.shape[0]
    arrays = (container, inside, capped) + (() if first is None else (first,))
    if tokens.ndim != 1 or any(np.shape(a) != (n,) for a in arrays):
        raise ValueError("tokens, container, inside, capped and first must be 1-d of one length")
    if budget < 0 or capped_budget < 0:
        raise ValueError(f"budgets must be >= 0, got {budget} and {capped_budget}")
    if n and (np.any(tokens < 0) or np.any(np.asarray(inside) >= n)):
        raise ValueError("token counts must be >= 0 and containers indices of the list")
    rounds = np.zeros(n, np.bool_) if first is None else np.asarray(first, np.bool_)
    return _pack_nested(
        tokens,
        np.asarray(container, np.bool_),
        np.asarray(inside, np.int64),
        np.asarray(capped, np.bool_),
        rounds,
        int(first_budget) if first is not None else 0,
        int(budget),
        int(capped_budget),
    )
