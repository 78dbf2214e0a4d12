"""Entry-point weights, bridge seeds, coverage, budget packing and the walk trace of the
``graph`` search (``search`` uses them).

Small pure functions over numpy arrays of dense node positions, kept apart from the view so
each is tested on its own (docs/architecture.md, "Search modes and parameters").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from graphstrata.core import sets
from graphstrata.core.budget import pack_nested
from graphstrata.core.fusion import coverage_rerank
from graphstrata.core.ids import contains
from graphstrata.core.layered import LayeredCSR, row
from graphstrata.core.ppr import shallow_ppr
from graphstrata.engine.config import MAX_QUERY_K
from graphstrata.engine.types import NodeKind

_EMPTY_I = np.zeros(0, np.int64)
_EMPTY_F = np.zeros(0, np.float64)

__all__ = [
    "TITLE_LINK",
    "bridge_seeds",
    "containers",
    "coverage_ranked",
    "kinds_of_letters",
    "layered_walk",
    "maximal_keys",
    "merge_seeds",
    "minmax",
    "mixed_walks",
    "pack_ranked",
    "pair_kinds",
    "reordered",
    "seed_matches",
    "sparse_entries",
    "walk_distribution",
    "walk_edges",
]

#: ``(targets, origins)`` of the links of one kind leaving some positions.
Follow = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]

#: Edge kind reported for a title link (an entity and a chunk of the document titled with its
#: name): an edge of the walk's graph that the search adds, not an ``EdgeKind`` of the store.
TITLE_LINK = 0


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


#: The budget ``HeterographConfig.sparse_top_k`` is given for: a query takes BM25 entry points
#: in proportion to its budget (``sparse_entries``).
ENTRY_BUDGET = 2000


def sparse_entries(top_k: int, budget: int) -> int:
    """BM25 entry points per kind for a query of ``budget`` tokens: ``top_k`` (the count at
    ``ENTRY_BUDGET`` tokens) scaled by ``budget / ENTRY_BUDGET``, rounded, at least 1 and at
    most ``MAX_QUERY_K``, the bound of what a query may ask for per kind (0 when ``top_k`` is
    0: no sparse entry points).

    A larger budget packs more passages, and they are found among more entry points; at a
    small budget extra entry points spread the walk over passages it cannot pack (decision
    0038). The cap keeps a huge budget from asking for a million-row list (issue 51).
    """
    if top_k <= 0:
        return 0
    return min(MAX_QUERY_K, max(1, round(top_k * max(int(budget), 0) / ENTRY_BUDGET)))


#: ``coverage_ranked`` reads the query terms' BM25 parts of the candidates that hold this many
#: budgets' worth of tokens, best first by walk score; the rest count as matching no query
#: term. Reading them all (~440 per query) took most of the stage's time.
COVERAGE_BUDGETS = 3


def mixed_walks(
    score: np.ndarray,
    touched: np.ndarray,
    b_touched: np.ndarray,
    b_scores: np.ndarray,
    weight: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The second walk mixed into the first: ``(first + weight * second) / (1 + weight)``.

    ``score`` holds the first walk's scores per position (0 off ``touched``, its distinct
    positions) and is updated in place; ``b_touched`` (distinct), ``b_scores``: the second
    walk's. Returns every position either walk touched, each once (first the first walk's),
    and their mixed scores. Under a push threshold (``ppr_epsilon``) a walk may reach a node
    in one step and leave it no mass in the last (what reached it stopped pushing), so what
    the first walk touched is not read off its scores.
    """
    seen = np.zeros(score.size, np.bool_)
    seen[touched] = True
    score[b_touched] += weight * b_scores
    both = np.concatenate([touched, b_touched[~seen[b_touched]]])
    score[both] /= 1.0 + weight
    return both, score[both]


def containers(cand: np.ndarray, chunks: np.ndarray) -> np.ndarray:
    """The index in ``cand`` (distinct positions) of each candidate's chunk, -1 where it
    has none or its chunk is not a candidate; ``chunks``: each candidate's chunk position
    (``HeterographView.chunk_of``: -1 for a node that is not a unit)."""
    if cand.size == 0:
        return _EMPTY_I
    sorter = np.argsort(cand, kind="stable")
    at = sorter[np.minimum(np.searchsorted(cand, chunks, sorter=sorter), cand.size - 1)]
    return np.where((chunks >= 0) & (cand[at] == chunks), at, -1)


def reordered(order: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """``inside`` (indices into a list) after the list is reordered by ``order``: the new
    index of each item's container, -1 kept."""
    new = np.empty(order.size, np.int64)
    new[order] = np.arange(order.size, dtype=np.int64)
    moved = inside[order]
    return np.where(moved >= 0, new[np.maximum(moved, 0)], -1)


def coverage_ranked(
    cand: np.ndarray,
    density: np.ndarray,
    cost: np.ndarray,
    inside: np.ndarray,
    term_scores: Callable[[np.ndarray], np.ndarray],
    decay: float,
    budget: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``cand`` (positions, best first by ``density``) re-ranked by query-term coverage:
    (the new order, as indices into ``cand``, and the gains; ``core.fusion.coverage_rerank``,
    ``HeterographConfig.term_decay``).

    ``cost``: the tokens packing would give each candidate (0 for a kind it will not take);
    ``inside``: the index of each unit's chunk in ``cand`` (:func:`containers`), whose text
    holds the unit's; ``term_scores``: each query term's part of the BM25 score of some
    positions (``[t, n]``), asked for the candidates that hold the first
    ``COVERAGE_BUDGETS`` budgets.
    """
    if cand.size == 0:
        return _EMPTY_I, density
    head = int(np.searchsorted(np.cumsum(cost), COVERAGE_BUDGETS * budget)) + 1
    read = term_scores(cand[:head])
    terms = np.zeros((read.shape[0], cand.size), np.float64)
    terms[:, : read.shape[1]] = read
    return coverage_rerank(density, terms, cost, decay, budget, inside)


def pack_ranked(
    cand: np.ndarray,
    inside: np.ndarray,
    tokens: np.ndarray,
    kinds: np.ndarray,
    text_kind: int,
    structured: np.ndarray,
    budget: int,
    structured_share: float = 1.0,
    text_share: float = 0.0,
) -> np.ndarray:
    """The candidates packed into ``budget`` tokens, chunks and units not doubled: indices
    into ``cand`` (positions, best first) in packing order (``core.budget.pack_nested``).

    A candidate that does not fit is skipped (smaller, lower-ranked ones may still fill the
    rest). A semantic unit whose chunk is packed is skipped (its text is inside the chunk);
    a chunk packed after some of its units replaces them (their tokens are given back). The
    ``structured`` kinds together take at most ``structured_share`` of the budget. With a
    ``text_share``, chunks alone are packed first into that share of the budget.

    Parameters
    ----------
    cand, inside:
        Candidates (distinct positions) and the index of each unit's chunk among them
        (:func:`containers`).
    tokens, kinds:
        Per dense position: token count and node kind.
    text_kind:
        The chunk kind (T).
    structured:
        The kinds that share ``structured_share``, as ``engine.types.kind_table`` gives them.
    """
    kind = kinds[cand]
    is_text = kind == np.uint8(text_kind)
    text_cap = math.floor(budget * float(text_share))
    return pack_nested(
        tokens[cand],
        is_text,
        inside,
        structured[kind],
        int(budget),
        math.floor(budget * float(structured_share)),
        is_text if text_cap > 0 else None,  # the default share is 0: no chunks-only round
        text_cap,
    )


def _last_index(values: np.ndarray, found: np.ndarray) -> np.ndarray:
    """The index of the last occurrence in ``values`` of each of ``found`` (all occur)."""
    order = np.argsort(values, kind="stable")
    return order[np.searchsorted(values[order], found, side="right") - 1]


def bridge_seeds(
    kinds: np.ndarray,
    text_kind: int,
    units_of_chunks: Follow,
    entities_of_units: Follow,
    units_of: Callable[[np.ndarray], np.ndarray],
    sources: np.ndarray,
    strength: np.ndarray,
    exclude: np.ndarray,
    max_units: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The entities that lead on from ``sources`` (chunks and units), as seeds.

    Every entity of a source (a chunk's entities are its units') that 2 to ``max_units``
    units mention is a seed of weight ``max(strength of its sources) / ln(1 + units
    mentioning it)``; entities in ``exclude`` are left out.

    Parameters
    ----------
    kinds, text_kind:
        Node kind per position, and the chunk kind (T).
    units_of_chunks, entities_of_units:
        ``(targets, origins)`` of the chunk -> unit and unit -> entity links leaving some
        positions (``HeterographView.follow``).
    units_of:
        Units mentioning each of some positions.
    sources, strength:
        Chunks and units (dense positions) and how strongly each was retrieved.
    exclude:
        Entities never returned.
    max_units:
        Most units an entity may be mentioned by.

    Returns
    -------
    positions, weights
        The entities (dense positions, unique) and their weights.
    """
    if sources.size == 0:
        return _EMPTY_I, _EMPTY_F
    strength = np.asarray(strength, np.float64)
    is_chunk = kinds[sources] == np.uint8(text_kind)
    chunk_units, from_chunk = units_of_chunks(sources[is_chunk])
    units = np.concatenate([sources[~is_chunk], chunk_units])
    unit_strength = np.concatenate(
        [strength[~is_chunk], strength[_last_index(sources, from_chunk)]]
    )
    entities, from_unit = entities_of_units(units)
    if entities.size == 0:
        return _EMPTY_I, _EMPTY_F
    # A unit that is a source and a unit of a chunk source too counts as the latter.
    power = unit_strength[_last_index(units, from_unit)]
    mentions = units_of(entities)
    excluded = contains(sets.unique(np.asarray(exclude, np.int64)), entities)
    keep = ~excluded & (mentions >= 2) & (mentions <= max_units)
    entities, power = entities[keep], power[keep]
    if entities.size == 0:
        return _EMPTY_I, _EMPTY_F
    uniq, inverse = np.unique(entities, return_inverse=True)
    best = np.zeros(uniq.size, np.float64)
    np.maximum.at(best, inverse, power)
    return uniq, best / np.log1p(units_of(uniq).astype(np.float64))


# ------------------------------------------------------------------------------ trace
def seed_matches(
    groups: Sequence[tuple[str, np.ndarray, np.ndarray, float]],
) -> dict[int, list[str]]:
    """How each seed was found: ``(label, positions, weights, share)`` per entry group.

    A group seeds the positions it gives a positive weight, when its share and its weight
    total are positive (as in :func:`merge_seeds`); a position found by several groups gets
    each label once, in group order.
    """
    out: dict[int, list[str]] = {}
    for label, pos, w, share in groups:
        w = np.asarray(w, np.float64)
        if share <= 0 or not w.size or float(w.sum()) <= 0:
            continue
        for p in np.asarray(pos, np.int64)[w > 0].tolist():
            labels = out.setdefault(int(p), [])
            if label not in labels:
                labels.append(label)
    return out


def layered_walk(
    graph: LayeredCSR,
    row_sums: np.ndarray,
    seeds: np.ndarray,
    seed_weights: np.ndarray,
    alpha: float,
    iters: int,
    epsilon: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Shallow PPR on the walk's graph (``core.ppr.shallow_ppr``): ``(nodes, scores)``.

    ``row_sums`` are the graph's row weights (``WalkEdges.row_sums``); the layers and the
    row sums are handed to the kernel only when the graph has an extra entry or a dead
    node, so an unchanged graph takes the one-layer step (15-20% faster at 100k chunks).
    ``epsilon``: the push threshold (``HeterographConfig.ppr_epsilon``; 0 walks exactly).
    """
    extra, alive = graph.walk_layers()
    layered = extra is not None or alive is not None
    return shallow_ppr(
        graph.indptr,
        graph.indices,
        graph.weights,
        seeds,
        seed_weights,
        alpha,
        iters,
        extra=extra,
        alive=alive,
        row_sums=row_sums if layered else None,
        epsilon=epsilon,
    )


def walk_distribution(
    graph: LayeredCSR,
    row_sums: np.ndarray,
    walks: Sequence[tuple[np.ndarray, np.ndarray, float]],
    alpha: float,
    iters: int,
    epsilon: float = 0.0,
    passed: bool = False,
) -> np.ndarray:
    """The scores of a mixture of walks after ``iters`` steps, dense over every node.

    ``walks`` are ``(seeds, seed weights, share)``; each walk is a shallow PPR whose seeds
    are normalized to sum 1, and the shares are normalized to sum 1 (the ``graph`` search's
    first walk has share 1, its bridge walk ``bridge_weight``). ``iters=0`` gives the
    restart distribution itself. ``row_sums`` and ``epsilon`` (the push threshold) as in
    :func:`layered_walk`. ``passed``: only the mass each node passes on in the next step
    (none where it is under the threshold, tested per walk as the walks run apart).
    """
    out = np.zeros(graph.n, np.float64)
    total = sum(share for seeds, _, share in walks if seeds.size and share > 0)
    for seeds, w, share in walks:
        if seeds.size and share > 0:
            touched, scores = layered_walk(graph, row_sums, seeds, w, alpha, iters, epsilon)
            if passed:
                keep = (1.0 - alpha) * scores >= epsilon * row_sums[touched]
                scores = np.where(keep, scores, 0.0)
            out[touched] += (share / total) * scores
    return out


def walk_edges(
    graph: LayeredCSR,
    row_sums: np.ndarray,
    earlier: Sequence[np.ndarray],
    alpha: float,
    targets: np.ndarray,
    stops: np.ndarray,
    per_node: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The edges over which the walk's mass reached ``targets``, traced back step by step.

    After ``t`` steps a node's score is ``pi_t[v] = alpha p[v] + sum_u f(u, v)`` with
    ``f(u, v) = (1 - alpha) pi_{t-1}[u] w(u, v) / W(u)``, ``W(u)`` the weight of ``u``'s
    row: the mass edge ``u -> v`` carried in the last step. The level-1 edges of a target
    are its ``per_node`` in-edges of largest positive ``f`` under ``pi_{t-1} = earlier[0]``;
    their sources (except ``stops``, the seeds, whose mass is their restart share) are the
    targets of level 2 under ``earlier[1]``, and so on for ``len(earlier)`` levels. A node is
    traced once, at the first level that reaches it.

    Parameters
    ----------
    graph:
        The walk's graph (``core.layered``; a neighbour in both layers is one in-edge of
        the summed weight, as in the flattened graph).
    row_sums:
        Its row weights ``W`` (``core.layered.row_weights``).
    earlier:
        ``pi_{t-1}, pi_{t-2}, ...`` (dense scores), one per level traced.
    alpha:
        The walk's restart probability.
    targets, stops:
        Nodes whose in-edges are traced; nodes not traced further.
    per_node:
        Edges kept per traced node.

    Returns
    -------
    src, dst, weight, flow, level
        One row per edge: the node the mass left, where it went, ``w``, ``f`` and the
        level.
    """
    rows: list[tuple[int, int, float, float, int]] = []
    if not earlier or per_node <= 0:
        return _EMPTY_I, _EMPTY_I, _EMPTY_F, _EMPTY_F, _EMPTY_I
    stop = set(np.asarray(stops, np.int64).tolist())
    frontier = list(dict.fromkeys(np.asarray(targets, np.int64).tolist()))
    seen = set(frontier)
    for level, prev in enumerate(earlier, start=1):
        following: list[int] = []
        for v in frontier:
            u, w32 = row(graph, v)
            u, w = _summed(u, w32.astype(np.float64))
            flow = (1.0 - alpha) * prev[u] * w / np.maximum(row_sums[u], 1e-300)
            top = np.flatnonzero(flow > 0)
            top = top[np.argsort(-flow[top], kind="stable")[:per_node]]
            for j in top.tolist():
                src = int(u[j])
                rows.append((src, v, float(w[j]), float(flow[j]), level))
                if src not in seen and src not in stop:
                    seen.add(src)
                    following.append(src)
        frontier = following
    if not rows:
        return _EMPTY_I, _EMPTY_I, _EMPTY_F, _EMPTY_F, _EMPTY_I
    cols = list(zip(*rows, strict=True))
    ints = [np.asarray(cols[i], np.int64) for i in (0, 1, 4)]
    return ints[0], ints[1], np.asarray(cols[2]), np.asarray(cols[3]), ints[2]


def _summed(u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A row's neighbours once each, ascending, their weights in both layers summed."""
    keys, inverse = sets.unique_inverse(u)
    return keys, np.bincount(inverse, weights=w, minlength=keys.size)


def pair_kinds(
    src: np.ndarray,
    dst: np.ndarray,
    weight: np.ndarray,
    kind: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
) -> np.ndarray:
    """The kind of the heaviest stored edge between ``a[i]`` and ``b[i]`` (either direction).

    ``src, dst, weight, kind`` are the stored edges (dense positions); a pair with no stored
    edge is a title link of the walk's graph (:data:`TITLE_LINK`).
    """
    out = np.full(a.size, TITLE_LINK, np.int64)
    if not a.size or not src.size:
        return out
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    qlo, qhi = np.minimum(a, b), np.maximum(a, b)
    best: dict[tuple[int, int], tuple[float, int]] = {}
    for e in np.flatnonzero(np.isin(lo, qlo) & np.isin(hi, qhi)).tolist():
        key, cand = (int(lo[e]), int(hi[e])), (float(weight[e]), int(kind[e]))
        if key not in best or cand[0] > best[key][0]:
            best[key] = cand
    for i, key in enumerate(zip(qlo.tolist(), qhi.tolist(), strict=True)):
        if key in best:
            out[i] = best[key][1]
    return out
