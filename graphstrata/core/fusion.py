"""Fusing ranked lists and packing distinct evidence (docs/architecture.md, "Kernels").

Pure functions over arrays, used by ``hybrid`` and the hierarchy modes:

* ``rrf``: reciprocal-rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009): a list
  contributes ``weight / (k + rank)`` to each id it holds, rank = position in the list,
  counted from 1.
* ``score_fusion``: a convex combination of min-max normalized scores (Bruch, Gai and
  Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", TOIS 2023).
* ``coverage_order``: score fusion re-ranked greedily so that a query term already
  matched by the candidates ranked above counts less (an xQuAD-style diversification over
  the query's terms; Santos, Macdonald and Ounis, WWW 2010): a question about two articles
  gets both instead of several chunks of the one its words match best.
* ``coverage_rerank``: the same diversification over one ranked list (``graph``'s chunks
  and units by walk score per token): a candidate's score is scaled by the share of its
  BM25 score that comes from query terms the candidates chosen before it have not used up.
* ``query_dense_weight``: the dense list's weight decided per query from the two lists
  themselves (``ADAPTIVE_SIGNALS``): ``agreement`` asks each retriever how good the other's
  best candidates are (the dense score of BM25's top, the BM25 score of the dense top,
  min-max normalized over the candidates), the way dynamic alpha tuning (Hsu and Tzeng,
  "DAT: Dynamic Alpha Tuning for Hybrid Retrieval", 2025) asks an LLM to judge each
  retriever's top candidate, with the other retriever as the judge; ``spread`` trusts the
  retriever whose best candidates stand out from the rest (a score-distribution query
  performance predictor, like Shtok et al.'s normalized query commitment). The weight
  moves from the configured one on the logit scale, so a strength of 0 is the fixed weight.
* ``feedback_vector``: Rocchio's query update (Rocchio 1971) in embedding space, the
  vector pseudo-relevance feedback of Li et al. ("Pseudo Relevance Feedback with Deep
  Language Models and Dense Retrievers: Successes and Pitfalls", TOIS 2023): the query
  plus a weighted mean of the vectors of the best candidates, so that a second dense
  round reaches what the first passage is about (the bridge passage of a two-hop
  question) while the query still counts.
* ``shingles`` and ``pack_distinct``: greedy packing under a token budget that skips a
  candidate whose text is already (almost) all in the texts packed before it.
* ``competing``: which candidates of a tree (summaries over chunks) score at least as well
  as every candidate below them, i.e. which summaries compete with what they summarize.

Conventions shared by both fusions: an id absent from a list gets nothing from it; an id
repeated within one list counts once, at its first position; the result is ordered by
descending fused score, equal scores by ascending id; lists may be empty.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence

import numpy as np
from numba import njit

__all__ = [
    "ADAPTIVE_SIGNALS",
    "competing",
    "coverage_order",
    "coverage_rerank",
    "feedback_vector",
    "minmax",
    "pack_distinct",
    "query_dense_weight",
    "rrf",
    "score_fusion",
    "shingles",
]

_WORD = re.compile(r"\w+")


def _first_positions(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct ids, position of each one's first occurrence)."""
    uniq, first = np.unique(ids, return_index=True)
    return uniq, first


def _weights(n: int, weights: Sequence[float] | None) -> np.ndarray:
    w = np.ones(n, np.float64) if weights is None else np.asarray(weights, np.float64)
    if w.shape != (n,):
        raise ValueError(f"expected {n} weights, got {w.shape}")
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise ValueError("weights must be finite and >= 0")
    return w


def _ranked(ids: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((ids, -scores))
    return ids[order], scores[order]


def _accumulate(
    parts: list[tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray]:
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    ids = np.concatenate([p[0] for p in parts])
    vals = np.concatenate([p[1] for p in parts])
    uniq, inverse = np.unique(ids, return_inverse=True)
    total = np.bincount(inverse, weights=vals, minlength=uniq.size)
    return _ranked(uniq, total)


def rrf(
    rankings: Sequence[np.ndarray], weights: Sequence[float] | None = None, k: float = 60.0
) -> tuple[np.ndarray, np.ndarray]:
    """Reciprocal-rank fusion of ranked id lists.

    Parameters
    ----------
    rankings:
        int64 id arrays, each best first.
    weights:
        One non-negative weight per list (default 1 each).
    k:
        The rank offset (>= 0; Cormack et al. use 60).

    Returns
    -------
    tuple of numpy.ndarray
        Fused ids (int64) and scores (float64), by descending score, ties by ascending id.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    w = _weights(len(rankings), weights)
    parts = []
    for ids, weight in zip(rankings, w, strict=True):
        ids = np.asarray(ids, np.int64)
        if ids.size == 0:
            continue
        uniq, first = _first_positions(ids)
        parts.append((uniq, weight / (k + 1.0 + first)))
    return _accumulate(parts)


def minmax(scores: np.ndarray) -> np.ndarray:
    """Scores mapped linearly onto [0, 1] (min -> 0, max -> 1); all equal -> all 1."""
    s = np.asarray(scores, np.float64)
    if s.size == 0:
        return s
    lo, hi = float(s.min()), float(s.max())
    if hi <= lo:
        return np.ones_like(s)
    return (s - lo) / (hi - lo)


def score_fusion(
    lists: Sequence[tuple[np.ndarray, np.ndarray]], weights: Sequence[float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Convex combination of min-max normalized scores: ``sum_i w_i * minmax_i(id)``.

    Parameters
    ----------
    lists:
        ``(ids, scores)`` pairs, one per retriever (any order within a list; higher is
        better). Each list is normalized on its own distinct ids.
    weights:
        One non-negative weight per list (default 1 each).

    Returns
    -------
    tuple of numpy.ndarray
        Fused ids (int64) and scores (float64), by descending score, ties by ascending id.
    """
    w = _weights(len(lists), weights)
    parts = []
    for (ids, scores), weight in zip(lists, w, strict=True):
        ids = np.asarray(ids, np.int64)
        scores = np.asarray(scores, np.float64)
        if ids.shape != scores.shape:
            raise ValueError(f"ids and scores differ in shape: {ids.shape} vs {scores.shape}")
        if ids.size == 0:
            continue
        uniq, first = _first_positions(ids)
        parts.append((uniq, weight * minmax(scores[first])))
    return _accumulate(parts)


#: The per-query evidence ``query_dense_weight`` reads (``"off"``: the fixed weight).
ADAPTIVE_SIGNALS = ("off", "agreement", "spread")


def _top(scores: np.ndarray, depth: int) -> np.ndarray:
    """Indices of the ``depth`` best scores, ties to the lower index."""
    order = np.argsort(-scores, kind="stable")
    return order[:depth]


def query_dense_weight(
    dense: np.ndarray,
    sparse: np.ndarray,
    base: float,
    signal: str,
    strength: float,
    depth: int,
) -> float:
    """The dense list's weight for one query, from the scores of its candidates.

    Both score arrays are min-max normalized over the candidates (``minmax``). With
    ``D`` the ``depth`` best candidates by dense score and ``S`` by BM25 score:

    * ``agreement``: ``x = mean(sparse[D]) - mean(dense[S])``: BM25's opinion of the dense
      top minus the dense retriever's opinion of the BM25 top. A retriever whose best
      candidates the other also rates well is trusted more; one whose best candidates
      the other rates poorly (a word match that is off topic, a near vector that lacks
      the question's terms) less.
    * ``spread``: ``x = mean(sparse[S]) - mean(dense[D])``: how much closer to its best the
      BM25 top stays than the dense top does, i.e. the dense list's lead in standing out
      (a retriever whose best few stand out from the rest is surer of them).

    The weight is ``sigmoid(logit(base) + strength * x)`` (``x`` in [-1, 1]); ``base`` at 0
    or 1, ``strength`` 0, ``signal`` ``"off"``, or fewer than two candidates (nothing to
    compare) give ``base`` itself.

    Parameters
    ----------
    dense, sparse : float arrays [n]
        Each candidate's dense (e.g. cosine) and BM25 score, aligned.
    base : float
        The configured dense weight, in [0, 1].
    signal : str
        One of ``ADAPTIVE_SIGNALS``.
    strength : float
        >= 0: how far the evidence moves the weight on the logit scale.
    depth : int
        >= 1: how many best candidates of each list are compared.

    Returns
    -------
    float
        The dense weight in [0, 1] (the BM25 list gets the rest).
    """
    d = np.asarray(dense, np.float64)
    sp = np.asarray(sparse, np.float64)
    if d.ndim != 1 or d.shape != sp.shape:
        raise ValueError(f"dense and sparse must be aligned 1-d arrays: {d.shape} vs {sp.shape}")
    if signal not in ADAPTIVE_SIGNALS:
        raise ValueError(f"unknown signal {signal!r}; expected one of {ADAPTIVE_SIGNALS}")
    if not 0.0 <= base <= 1.0:
        raise ValueError(f"base must be in [0, 1], got {base}")
    if not strength >= 0.0 or not np.isfinite(strength):
        raise ValueError(f"strength must be finite and >= 0, got {strength}")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    if signal == "off" or strength == 0.0 or d.size < 2 or base in (0.0, 1.0):
        return float(base)
    dn, sn = minmax(d), minmax(sp)
    top_d, top_s = _top(dn, depth), _top(sn, depth)
    if signal == "agreement":
        x = float(sn[top_d].mean() - dn[top_s].mean())
    else:
        x = float(sn[top_s].mean() - dn[top_d].mean())
    if x == 0.0:  # no evidence either way: exactly the configured weight
        return float(base)
    logit = math.log(base / (1.0 - base)) + float(strength) * x
    return 1.0 / (1.0 + math.exp(-logit))


def feedback_vector(query: np.ndarray, feedback: np.ndarray, weight: float) -> np.ndarray:
    """Rocchio's update of a query vector by feedback vectors, scaled to unit length.

    ``q' = (q + weight * mean(feedback)) / |q + weight * mean(feedback)|``. Ranking by
    ``q' . d`` is ranking by ``q . d + weight * mean(f) . d``: the first term keeps the
    query's own neighbours, the second pulls in the neighbours of the feedback.

    Parameters
    ----------
    query : float array [dim]
        The query vector.
    feedback : float array [m, dim]
        Vectors of the candidates taken as relevant (m >= 0).
    weight : float
        >= 0: how much the feedback counts against the query.

    Returns
    -------
    numpy.ndarray
        float32 [dim]: the updated query (``query`` unchanged, only cast, when ``feedback``
        has no rows or ``weight`` is 0; unscaled if the sum is the zero vector).
    """
    q = np.asarray(query, np.float32)
    rows = np.asarray(feedback, np.float32)
    if q.ndim != 1 or rows.ndim != 2 or rows.shape[1] != q.shape[0]:
        raise ValueError(f"expected query [d] and feedback [m, d], got {q.shape} and {rows.shape}")
    if not weight >= 0.0 or not np.isfinite(weight):
        raise ValueError(f"weight must be finite and >= 0, got {weight}")
    if rows.shape[0] == 0 or weight == 0.0:
        return q
    out = q.astype(np.float64) + float(weight) * rows.astype(np.float64).mean(axis=0)
    norm = float(np.linalg.norm(out))
    return (out / norm if norm > 0.0 else out).astype(np.float32)


@njit(cache=True, nogil=True)
def _coverage_order(
    dense: np.ndarray, terms: np.ndarray, w: float, decay: float, lo: float, span: float
) -> tuple[np.ndarray, np.ndarray]:
    n_terms, n = terms.shape
    factor = np.ones(n_terms, np.float64)
    taken = np.zeros(n, np.bool_)
    order = np.empty(n, np.int64)
    gains = np.empty(n, np.float64)
    for step in range(n):
        best, best_gain = -1, -np.inf
        for i in range(n):
            if taken[i]:
                continue
            sparse = 0.0
            for t in range(n_terms):
                sparse += factor[t] * terms[t, i]
            gain = w * dense[i] + (1.0 - w) * (sparse - lo) / span
            if gain > best_gain:  # strict: the first (lowest-id) of equal gains wins
                best, best_gain = i, gain
        taken[best] = True
        order[step] = best
        gains[step] = best_gain
        for t in range(n_terms):
            if terms[t, best] > 0.0:
                factor[t] *= decay
    return order, gains


def coverage_order(
    ids: np.ndarray,
    dense: np.ndarray,
    term_scores: np.ndarray,
    dense_weight: float,
    decay: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Score fusion of a dense and a BM25 list, re-ranked by query-term coverage.

    Step by step, the next candidate is the one of highest
    ``w * minmax(dense) + (1 - w) * (sum_t decay**n_t * c_t - lo) / (hi - lo)``, where
    ``c_t`` is what query term ``t`` adds to its BM25 score, ``n_t`` how many candidates
    ranked above it match ``t``, and ``lo``/``hi`` the least and greatest full BM25 score.
    With ``decay = 1`` this is :func:`score_fusion` of the two complete lists.

    Parameters
    ----------
    ids : int64 array [n], ascending
        The candidates (ties go to the lower id).
    dense : float array [n]
        Each candidate's dense score (e.g. cosine).
    term_scores : float array [t, n]
        Each query term's part of each candidate's BM25 score (rows sum to the BM25 score).
    dense_weight : float
        ``w`` in [0, 1].
    decay : float
        In (0, 1]: the weight a term keeps for each candidate above that matches it.

    Returns
    -------
    tuple of numpy.ndarray
        The candidates (int64) best first, and the gain each had when it was chosen.
    """
    ids = np.asarray(ids, np.int64)
    dense = np.asarray(dense, np.float64)
    terms = np.ascontiguousarray(term_scores, np.float64)
    if terms.ndim != 2 or terms.shape[1] != ids.size:
        raise ValueError(f"term_scores must be [t, {ids.size}], got {terms.shape}")
    if dense.shape != ids.shape:
        raise ValueError(f"ids and dense differ in shape: {ids.shape} vs {dense.shape}")
    if not 0.0 < decay <= 1.0:
        raise ValueError(f"decay must be in (0, 1], got {decay}")
    if not 0.0 <= dense_weight <= 1.0:
        raise ValueError(f"dense_weight must be in [0, 1], got {dense_weight}")
    if ids.size == 0:
        return ids, np.zeros(0, np.float64)
    full = terms.sum(axis=0)
    lo, hi = float(full.min()), float(full.max())
    # All candidates equal in BM25: minmax maps them to 1, and so does a span of 1 from lo-1.
    span, lo = (hi - lo, lo) if hi > lo else (1.0, lo - 1.0)
    order, gains = _coverage_order(
        minmax(dense), terms, float(dense_weight), float(decay), lo, span
    )
    return ids[order], gains


@njit(cache=True, nogil=True)
def _fresh_gain(
    i: int, density: np.ndarray, terms: np.ndarray, full: np.ndarray, factor: np.ndarray
) -> float:
    if full[i] > 0.0:
        fresh = 0.0
        for t in range(terms.shape[0]):
            fresh += factor[t] * terms[t, i]
        return density[i] * fresh / full[i]
    return density[i] * (factor.mean() if factor.size else 1.0)


@njit(cache=True, nogil=True)
def _coverage_rerank(
    density: np.ndarray,
    terms: np.ndarray,
    tokens: np.ndarray,
    inside: np.ndarray,
    decay: float,
    budget: float,
) -> tuple[np.ndarray, np.ndarray]:
    n_terms, n = terms.shape
    full = np.zeros(n, np.float64)
    for i in range(n):
        for t in range(n_terms):
            full[i] += terms[t, i]
    factor = np.ones(n_terms, np.float64)
    taken = np.zeros(n, np.bool_)
    held = np.zeros(n, np.float64)  # tokens of a container's parts chosen before it
    order = np.empty(n, np.int64)
    gains = np.empty(n, np.float64)
    step, used = 0, 0.0
    while step < n and used < budget:
        best, best_gain = -1, -np.inf
        for i in range(n):  # ``density`` descends and a gain never exceeds its density
            if taken[i]:
                continue
            if density[i] <= best_gain:
                break
            gain = _fresh_gain(i, density, terms, full, factor)
            if gain > best_gain:  # strict: the first of equal gains wins
                best, best_gain = i, gain
        taken[best] = True
        order[step] = best
        gains[step] = best_gain
        step += 1
        c = inside[best]
        if c >= 0 and taken[c]:
            continue  # its text is already in its container's: no tokens, no term used up
        used += tokens[best] - held[best]
        if c >= 0:
            held[c] += tokens[best]
        for t in range(n_terms):
            if terms[t, best] > 0.0:
                factor[t] *= decay
    # The rest by their gains at this point (stable: equal gains keep the density order).
    tail = np.flatnonzero(~taken)
    tail_gain = np.empty(tail.size, np.float64)
    for j in range(tail.size):
        tail_gain[j] = _fresh_gain(tail[j], density, terms, full, factor)
    by_gain = np.argsort(-tail_gain, kind="mergesort")
    order[step:] = tail[by_gain]
    gains[step:] = tail_gain[by_gain]
    return order, gains


def coverage_rerank(
    density: np.ndarray,
    term_scores: np.ndarray,
    tokens: np.ndarray,
    decay: float,
    budget: float,
    inside: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Re-rank one ranked list by query-term coverage (``graph``'s chunks and units).

    Step by step, the next candidate is the one of highest
    ``density_i * sum_t decay**n_t * c_ti / sum_t c_ti``, where ``c_ti`` is what query term
    ``t`` adds to candidate ``i``'s BM25 score and ``n_t`` how many candidates chosen before
    it match ``t``; a candidate that matches no query term (a unit the walk reached through
    an entity, a node BM25 does not index) is scaled by the mean of ``decay**n_t``, as one
    matching every term alike would be. Unlike :func:`coverage_order` the scale is
    multiplicative: there is one score, and a list whose terms are all fresh keeps its order.

    Once the chosen candidates hold ``budget`` tokens the rest follow by their gains at that
    point (a packing of ``budget`` tokens rarely reaches them, and choosing them one by one
    costs a pass over the list each). The tokens are counted as a packing counts them: a
    candidate chosen after the one that contains it (``inside``: a unit's chunk) adds none
    and uses no term up (its text is already there), and a container chosen after some of
    its parts adds only the rest of its tokens.

    Parameters
    ----------
    density : float array [n]
        Each candidate's score (>= 0).
    term_scores : float array [t, n]
        Each query term's part of each candidate's BM25 score (>= 0; zero columns for
        candidates BM25 does not index).
    tokens : int or float array [n]
        Each candidate's tokens (0 for one a packing will not take).
    decay : float
        In (0, 1]: the weight a term keeps for each chosen candidate that matches it; 1
        keeps the order of ``density`` (ties in list order).
    budget : float
        Tokens after which the rest is ranked at once.
    inside : int array [n], optional
        The index of the candidate that contains each one, -1 for none (default: none).

    Returns
    -------
    tuple of numpy.ndarray
        Positions into the inputs (int64), best first, and each one's gain (<= its density).
    """
    density = np.asarray(density, np.float64)
    terms = np.ascontiguousarray(term_scores, np.float64)
    tokens = np.asarray(tokens, np.float64)
    n = density.size
    inside = np.full(n, -1, np.int64) if inside is None else np.asarray(inside, np.int64)
    if terms.ndim != 2 or terms.shape[1] != n or tokens.shape != density.shape:
        raise ValueError(
            f"need density [n], term_scores [t, n], tokens [n]; got {density.shape}, "
            f"{terms.shape}, {tokens.shape}"
        )
    if inside.shape != density.shape or (n and (inside.min() < -1 or inside.max() >= n)):
        raise ValueError(f"inside must be [n] indexes in [-1, n), got {inside.shape}")
    if not 0.0 < decay <= 1.0:
        raise ValueError(f"decay must be in (0, 1], got {decay}")
    if n and (density.min() < 0 or terms.min(initial=0.0) < 0 or not np.isfinite(density).all()):
        raise ValueError("density and term_scores must be finite and >= 0")
    by_density = np.argsort(-density, kind="stable")
    if n == 0 or decay == 1.0:
        return by_density, density[by_density]
    rank = np.empty(n, np.int64)
    rank[by_density] = np.arange(n)
    within = np.where(inside >= 0, rank[np.maximum(inside, 0)], -1)[by_density]
    order, gains = _coverage_rerank(
        density[by_density],
        terms[:, by_density],
        tokens[by_density],
        within,
        float(decay),
        float(budget),
    )
    return by_density[order], gains


def shingles(text: str, n: int) -> frozenset[int]:
    """The distinct word n-grams of ``text`` (lower-cased ``\\w+`` words), as hashes.

    A text of fewer than ``n`` words has no shingle. Hashes are Python's ``hash`` of the
    word tuples: stable within one process, which is all ``pack_distinct`` needs.

    Parameters
    ----------
    text:
        Any text.
    n:
        Words per shingle (>= 1).

    Returns
    -------
    frozenset of int
        One hash per distinct n-gram.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    words = _WORD.findall(text.lower())
    return frozenset(hash(tuple(words[i : i + n])) for i in range(len(words) - n + 1))


def pack_distinct(
    scores: np.ndarray,
    tokens: np.ndarray,
    shingle_sets: Sequence[Collection[int]],
    budget: int,
    max_overlap: float,
    packed_before: Sequence[Collection[int]] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy packing by descending score that skips near-duplicates of packed texts.

    In rank order (descending score, NaN last, ties in input order), a candidate that does
    not fit the remaining budget is skipped; one whose shingles (``shingle_sets[i]``, e.g.
    from ``shingles``) lie at least ``max_overlap`` of them in the union of the shingles of
    the candidates packed before it is skipped as a duplicate (a candidate without shingles
    never is); any other is packed. With ``max_overlap > 1`` this is ``core.budget.pack``.
    ``shingle_sets`` is read only for candidates that fit, so it may compute lazily.

    Parameters
    ----------
    scores : float array [n]
        Higher is better.
    tokens : integer array [n]
        Token count of each candidate (>= 0).
    shingle_sets : sequence of n collections of int
        Each candidate's distinct shingle hashes (e.g. ``shingles``).
    budget : int
        Total tokens allowed (>= 0).
    max_overlap : float
        Share of a candidate's shingles already packed that makes it a duplicate (> 0).
    packed_before : sequence of collections of int
        Shingles of texts packed earlier (another budget share of the same answer): they
        count as packed for the duplicate test.

    Returns
    -------
    tuple of numpy.ndarray
        Indices of the packed candidates in rank order, and of the duplicates skipped.
    """
    scores = np.asarray(scores, np.float64)
    tokens = np.asarray(tokens, np.int64)
    if scores.ndim != 1 or tokens.shape != scores.shape or len(shingle_sets) != scores.size:
        raise ValueError("scores, tokens and shingle_sets must have one entry per candidate")
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    if max_overlap <= 0:
        raise ValueError(f"max_overlap must be > 0, got {max_overlap}")
    if np.any(tokens < 0):
        raise ValueError("token counts must be >= 0")
    key = np.where(np.isnan(scores), np.inf, -scores)
    order = np.argsort(key, kind="stable")
    packed: list[int] = []
    duplicates: list[int] = []
    seen: set[int] = set()
    used = 0
    dedupe = max_overlap <= 1.0
    if dedupe:
        for before in packed_before:
            seen.update(before)
    token_list = tokens.tolist()
    for i in order.tolist():
        t = token_list[i]
        if used + t > budget:
            continue
        if dedupe:
            mine = shingle_sets[i]
            if len(mine):
                inside = len(seen.intersection(mine))  # in C: ~150 shingles per chunk
                if inside >= max_overlap * len(mine):
                    duplicates.append(i)
                    continue
                seen.update(mine)
        packed.append(i)
        used += t
    return np.asarray(packed, np.int64), np.asarray(duplicates, np.int64)


def competing(
    ids: np.ndarray, scores: np.ndarray, ancestors: np.ndarray, alone: bool = False
) -> np.ndarray:
    """Which candidates score at least as well as every candidate below them in a tree.

    Candidate ``i`` is below candidate ``j`` when ``ids[j]`` is one of ``ancestors[i]`` (its
    parent, its parent's parent, ...); ties compete. A candidate with nothing below it among
    the candidates competes only if ``alone``: by default a summary must beat at least one
    of its own members found for the query (with none found there is no evidence that it
    says better what they say).

    Parameters
    ----------
    ids : int64 array [n]
        Distinct candidate ids.
    scores : float array [n]
        Their finite scores, higher is better, comparable across the tree's levels (one
        fusion over every level).
    ancestors : int64 array [n, d]
        Each candidate's ancestor ids, nearest first, padded with -1 (``d`` >= 0).
    alone : bool
        Whether a candidate with nothing below it competes.

    Returns
    -------
    numpy.ndarray
        bool [n]: ``scores[j] >= max(scores[i] for i below j)``, and something below ``j``
        unless ``alone``.
    """
    ids = np.asarray(ids, np.int64)
    scores = np.asarray(scores, np.float64)
    anc = np.asarray(ancestors, np.int64)
    n = ids.size
    if ids.ndim != 1 or scores.shape != ids.shape:
        raise ValueError(
            f"ids and scores must be aligned 1-d arrays: {ids.shape} vs {scores.shape}"
        )
    if anc.ndim != 2 or anc.shape[0] != n:
        raise ValueError(f"ancestors must be [{n}, d], got {anc.shape}")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite")
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    if n > 1 and np.any(sorted_ids[1:] == sorted_ids[:-1]):
        raise ValueError("ids must be distinct")
    best = np.full(n, -np.inf)
    if n and anc.shape[1]:
        flat = anc.ravel()
        below = np.repeat(scores, anc.shape[1])
        pos = np.minimum(np.searchsorted(sorted_ids, flat), n - 1)
        hit = (flat >= 0) & (sorted_ids[pos] == flat)
        np.maximum.at(best, order[pos[hit]], below[hit])
    return (scores >= best) & (alone | np.isfinite(best))
