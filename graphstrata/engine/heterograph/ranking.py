"""Entry-point weights and budget packing of the ``graph`` search (``search`` uses them).

Small pure functions over numpy arrays of dense node positions, kept apart from the view so
each is tested on its own (docs/architecture.md, "Search modes and parameters").
"""

from __future__ import annotations

import math

import numpy as np

from graphstrata.engine.types import NodeKind

_EMPTY_I = np.zeros(0, np.int64)
_EMPTY_F = np.zeros(0, np.float64)

__all__ = [
    "Packer",
    "follow",
    "kinds_of_letters",
    "maximal_keys",
    "merge_seeds",
    "minmax",
    "sorted_links",
]


def kinds_of_letters(letters: str, allowed: tuple[int, ...]) -> tuple[int, ...]:
    """Node kinds named by their letters ("TS" -> (T, S)), each one of ``allowed``.

    Raises
    ------
    ValueError
        For a letter that is not the letter of an ``allowed`` kind.
    """
    by_letter = {NodeKind(k).letter: int(k) for k in allowed}
    unknown = [c for c in letters if c not in by_letter]
    if unknown:
        raise ValueError(f"kinds {unknown!r} not among {sorted(by_letter)}")
    return tuple(dict.fromkeys(by_letter[c] for c in letters))


def sorted_links(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A link table sorted by source position, for range lookups by ``searchsorted``."""
    order = np.argsort(src, kind="stable")
    return src[order], dst[order]


def follow(
    sorted_src: np.ndarray, dst: np.ndarray, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(targets, origins)``: every link leaving ``positions``, with the position it left."""
    lo = np.searchsorted(sorted_src, positions, side="left")
    hi = np.searchsorted(sorted_src, positions, side="right")
    counts = hi - lo
    if counts.sum() == 0:
        return _EMPTY_I, _EMPTY_I
    idx = np.concatenate([np.arange(a, b) for a, b in zip(lo.tolist(), hi.tolist(), strict=True)])
    return dst[idx].astype(np.int64), np.repeat(positions, counts).astype(np.int64)


def minmax(scores: np.ndarray) -> np.ndarray:
    """Scores mapped to [0, 1] by min-max (all equal: all 1), as HippoRAG 2 normalizes."""
    s = np.asarray(scores, np.float64)
    if s.size == 0:
        return s
    lo, hi = float(s.min()), float(s.max())
    return (s - lo) / (hi - lo) if hi > lo else np.ones_like(s)


def merge_seeds(
    groups: list[tuple[np.ndarray, np.ndarray, float]],
) -> tuple[np.ndarray, np.ndarray]:
    """Seeds of several entry groups, each scaled to its share of the restart mass.

    Parameters
    ----------
    groups:
        ``(positions, weights, share)`` per group. Inside a group the weights are normalized
        to sum 1 and multiplied by the group's share; a group with no positive weight or a
        share of 0 contributes nothing. A position in several groups (or several times in
        one) adds its weights.

    Returns
    -------
    positions, weights
        Unique positions (ascending) with a positive weight, and their weights.
    """
    seeds: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    for pos, w, share in groups:
        w = np.asarray(w, np.float64)
        total = float(w.sum()) if w.size else 0.0
        if share <= 0 or total <= 0:
            continue
        seeds.append(np.asarray(pos, np.int64))
        weights.append(w * (share / total))
    if not seeds:
        return _EMPTY_I, _EMPTY_F
    uniq, inverse = np.unique(np.concatenate(seeds), return_inverse=True)
    merged = np.zeros(uniq.size, np.float64)
    np.add.at(merged, inverse, np.concatenate(weights))
    keep = merged > 0
    return uniq[keep], merged[keep]


def maximal_keys(keys: list[str]) -> list[str]:
    """The keys not contained, as whole words, in another key of the list (in order)."""
    padded = [f" {k} " for k in keys]
    return [
        k
        for k, pk in zip(keys, padded, strict=True)
        if not any(pk != po and pk in po for po in padded)
    ]


class Packer:
    """Greedy packing of ranked lists into one token budget, chunks and units not doubled.

    Lists are offered in turn (:meth:`offer`), each best first and each up to a limit on
    the tokens used in all. A node that does not fit is skipped (smaller, lower-ranked ones
    may still fill the rest); a node already packed is skipped. A semantic unit whose chunk
    is packed is skipped (its text is inside the chunk); a chunk packed after some of its
    units replaces them (their tokens are given back). The *structured* kinds together
    take at most ``structured_share`` of the budget.

    Parameters
    ----------
    budget:
        Tokens allowed in all.
    tokens, kinds, chunk_of:
        Per dense position: token count, node kind, and the chunk of a semantic unit (-1
        for every other node).
    text_kind:
        The chunk kind (T).
    structured:
        The kinds counted against ``structured_share``.
    structured_share:
        Share of ``budget`` the structured kinds may take together, in [0, 1].
    """

    def __init__(
        self,
        budget: int,
        tokens: np.ndarray,
        kinds: np.ndarray,
        chunk_of: np.ndarray,
        text_kind: int,
        structured: tuple[int, ...],
        structured_share: float = 1.0,
    ):
        self.budget = int(budget)
        self.tokens = tokens
        self.kinds = kinds
        self.chunk_of = chunk_of
        self.text_kind = int(text_kind)
        self.structured = frozenset(int(k) for k in structured)
        self.structured_cap = math.floor(self.budget * float(structured_share))
        self.used = 0
        self.structured_used = 0
        self._order: list[int] = []  # packed positions, in packing order (may hold removed)
        self._score: dict[int, float] = {}
        self._units: dict[int, list[int]] = {}  # chunk -> its packed units

    def offer(self, positions: np.ndarray, scores: np.ndarray, limit: int | None = None) -> int:
        """Pack what fits of ``positions`` (best first) while at most ``limit`` tokens are
        used in all (default: the budget). Returns how many nodes were packed."""
        cap = self.budget if limit is None else min(int(limit), self.budget)
        packed = 0
        kinds = self.kinds[positions].tolist()
        tokens = self.tokens[positions].tolist()
        chunks = self.chunk_of[positions].tolist()
        for p, kind, t, c, s in zip(
            positions.tolist(), kinds, tokens, chunks, scores.tolist(), strict=True
        ):
            if self.used >= cap:
                break
            if p in self._score:
                continue
            t = int(t)
            if kind == self.text_kind:
                mine = self._units.get(p, [])
                refund = sum(int(self.tokens[u]) for u in mine)
                if self.used - refund + t > cap:
                    continue
                for u in mine:
                    del self._score[u]
                self._units.pop(p, None)
                self.used += t - refund
            else:
                if (c >= 0 and self._score.get(c) is not None) or self.used + t > cap:
                    continue
                if kind in self.structured:
                    if self.structured_used + t > self.structured_cap:
                        continue
                    self.structured_used += t
                self.used += t
                if c >= 0:
                    self._units.setdefault(c, []).append(p)
            self._score[p] = float(s)
            self._order.append(p)
            packed += 1
        return packed

    def packed(self) -> tuple[np.ndarray, np.ndarray]:
        """(positions, scores) of the packed nodes, in packing order."""
        order = [p for p in dict.fromkeys(self._order) if p in self._score]
        return np.asarray(order, np.int64), np.asarray([self._score[p] for p in order])
