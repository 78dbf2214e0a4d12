"""Plain-Python oracles of the fusion kernels, and the fused modes' feedback round."""

from __future__ import annotations

import numpy as np

from graphstrata.bindings.api import Index


def coverage_oracle(ids, dense, terms, w, decay):
    """The greedy term-coverage ranking, written plainly."""
    ids, dense, terms = list(ids), list(dense), [list(r) for r in terms]
    full = [sum(r[i] for r in terms) for i in range(len(ids))]
    lo, hi = min(full), max(full)
    span, lo = (hi - lo, lo) if hi > lo else (1.0, lo - 1.0)
    dlo, dhi = min(dense), max(dense)
    dn = [(d - dlo) / (dhi - dlo) if dhi > dlo else 1.0 for d in dense]
    factor = [1.0] * len(terms)
    left = list(range(len(ids)))
    out = []
    while left:
        gains = {
            i: w * dn[i]
            + (1 - w) * (sum(f * r[i] for f, r in zip(factor, terms, strict=True)) - lo) / span
            for i in left
        }
        best = max(left, key=lambda i: (gains[i], -ids[i]))
        out.append(ids[best])
        left.remove(best)
        factor = [f * decay if r[best] > 0 else f for f, r in zip(factor, terms, strict=True)]
    return out


def coverage_rerank_oracle(density, terms, tokens, decay, budget, inside=None):
    """The multiplicative term-coverage re-ranking, written plainly: positions, best first."""
    n = len(density)
    inside = inside or [-1] * n
    pos = {i: r for r, i in enumerate(sorted(range(n), key=lambda i: -density[i]))}
    full = [sum(r[i] for r in terms) for i in range(n)]
    factor = [1.0] * len(terms)

    def gain(i):
        if full[i] > 0:
            return density[i] * sum(f * r[i] for f, r in zip(factor, terms, strict=True)) / full[i]
        return density[i] * (sum(factor) / len(factor) if factor else 1.0)

    left, out, used, held = set(range(n)), [], 0.0, [0.0] * n
    while left and used < budget:
        best = max(left, key=lambda i: (gain(i), -pos[i]))
        out.append(best)
        left.remove(best)
        c = inside[best]
        if c >= 0 and c not in left:  # its container was chosen: nothing more
            continue
        used += tokens[best] - held[best]
        if c >= 0:
            held[c] += tokens[best]
        factor = [f * decay if r[best] > 0 else f for f, r in zip(factor, terms, strict=True)]
    return out + sorted(left, key=lambda i: (-gain(i), pos[i]))


# ------------------------------------------------------------------------------ feedback
def feedback_oracle(query, feedback, weight):
    """Rocchio's update written plainly: q + weight * mean(rows), then unit length."""
    q = [float(x) for x in query]
    rows = [[float(x) for x in r] for r in feedback]
    if not rows or weight == 0:
        return q
    mean = [sum(r[j] for r in rows) / len(rows) for j in range(len(q))]
    out = [a + weight * b for a, b in zip(q, mean, strict=True)]
    norm = sum(x * x for x in out) ** 0.5
    return [x / norm for x in out] if norm > 0 else out


def feedback_round(index: Index, kinds, k, q, top, fusion, dense_ids, sparse, one_round):
    """The second round of the fused modes (``fusion``: a ``FusionConfig``): the query
    vector moved by the top candidates' vectors (``feedback_oracle``; ``feedback_weight`` 0:
    not moved) searches again and both dense lists are scored by it; the top candidates'
    ``feedback_terms`` heaviest terms (``SparseIndex.feedback_terms``, tested against its
    own oracle) join the BM25 query at ``feedback_term_weight`` and the BM25 lists of both
    queries are fused with the dense lists by ``one_round(dense, vector, bm25_ids, query)``.

    ``sparse``: ``(fresh, question, bm25_ids)``, a ``SparseIndex`` over the same texts as the
    view's, the question and its BM25 top-k. None when the round changes nothing."""
    from graphstrata.engine.sparse.analysis import WeightedTerms, query_weights

    fresh, question, bm25_ids = sparse
    state = index.engine.state
    vectors = state.snapshot.vectors
    dense, moved = None, np.asarray(q, np.float32)
    if fusion.feedback_weight > 0:
        moved = np.asarray(feedback_oracle(q, vectors.get(top), fusion.feedback_weight), np.float32)
        again = state.vectors.search(moved[None, :], kinds, k)[0][0]
        both = np.union1d(dense_ids, again)
        dense = (both, vectors.get(both) @ moved)
    texts = state.snapshot.nodes.text_of(top)
    m = fusion.feedback_terms
    extra = fresh.feedback_terms(top, texts, m, query_weights(question)) if m else []
    query = question
    if extra:
        query = WeightedTerms.expanded(question, extra, fusion.feedback_term_weight)
        bm25_ids = np.union1d(bm25_ids, fresh.search(query, kinds, k)[0])
    if dense is None and not extra:
        return None
    if dense is None:
        dense = (np.asarray(dense_ids), vectors.get(np.asarray(dense_ids)) @ moved)
    return one_round(dense, moved, bm25_ids, query)
