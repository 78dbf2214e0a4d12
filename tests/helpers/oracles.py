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


def feedback_round(index: Index, kinds, k, q, top, weight, dense_ids, one_round):
    """The second round of the fused modes: the query vector moved by the top candidates'
    vectors (``feedback_oracle``) searches again, and both dense lists, scored by it, are
    fused with the same BM25 list by ``one_round(dense, vector)``."""
    state = index.engine.state
    vectors = state.snapshot.vectors
    moved = np.asarray(feedback_oracle(q, vectors.get(top), weight), np.float32)
    again = state.vectors.search(moved[None, :], kinds, k)[0][0]
    both = np.union1d(dense_ids, again)
    return one_round((both, vectors.get(both) @ moved), moved)
