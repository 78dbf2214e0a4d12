"""Random unit and clustered vectors, and their exact nearest neighbours (brute force)."""

from __future__ import annotations

import numpy as np


def unit_rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """``n`` gaussian vectors of dimension ``d``, scaled to unit length (float32)."""
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def clustered(rng: np.random.Generator, n: int, d: int, clusters: int) -> np.ndarray:
    """``n`` unit vectors around ``clusters`` far-apart centres (float32)."""
    centres = unit_rows(rng, clusters, d) * 3.0
    x = centres[rng.integers(0, clusters, n)] + rng.standard_normal((n, d)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def exact_rows(x: np.ndarray, m: int) -> np.ndarray:
    """Per row of ``x``: its ``m`` nearest other rows by inner product (ties: lower row)."""
    sims = x @ x.T
    np.fill_diagonal(sims, -np.inf)
    return np.argsort(-sims, axis=1, kind="stable")[:, :m].astype(np.int32)
