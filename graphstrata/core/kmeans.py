"""Seeded K-means on numpy: k-means++ seeding on a sample, then Lloyd iterations by GEMM.

Written on numpy rather than scikit-learn: its Lloyd loop and k-means++ trials took 56 s /
108 s (``KMeans`` / ``MiniBatchKMeans``) for 37k x 384 vectors, K = 194, on the 2-core test
machine under load, where one assignment GEMM takes 0.35 s. Callers that only need a coarse
partition (the heterograph's clusters decide which members a high-level element links to,
docs/architecture.md, "Heterograph") are served by a few Lloyd iterations.

Distances are Euclidean; the nearest centroid is found as ``argmax(x·c - |c|²/2)``, one BLAS
call per block of rows, so memory stays at ``block × K``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["kmeans_assign", "kmeans_fit", "nearest_centroid"]

#: Rows per assignment GEMM block.
BLOCK_ROWS = 65_536
#: k-means++ seeds from at most this many rows per centre.
SAMPLE_PER_CENTRE = 64
#: Lloyd iterations run on at most this many rows per centre (faiss's
#: ``max_points_per_centroid``), then every row is assigned once. With NodeRAG's
#: K = sqrt(N), an iteration over all N rows compares N^1.5 row-centre pairs: the
#: heterograph's clusters took 1.4 s at 10k chunks and 25.1 s at 100k (N^1.25,
#: benchmarks/results/scale.md).
TRAIN_PER_CENTRE = 256


def nearest_centroid(
    vectors: np.ndarray, centroids: np.ndarray, block_rows: int = BLOCK_ROWS
) -> np.ndarray:
    """Index of the nearest centroid (Euclidean) of each row, in row blocks.

    Parameters
    ----------
    vectors : float32 array [n, d]
    centroids : float32 array [k, d], k >= 1
    block_rows : int
        Rows per GEMM block.

    Returns
    -------
    int64 array [n]
        Ties go to the lowest centroid index.
    """
    half_norms = 0.5 * np.einsum("ij,ij->i", centroids, centroids)
    out = np.empty(vectors.shape[0], np.int64)
    for start in range(0, vectors.shape[0], block_rows):
        block = vectors[start : start + block_rows]
        out[start : start + block.shape[0]] = np.argmax(block @ centroids.T - half_norms, axis=1)
    return out


def _kmeans_pp(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ centres of ``x`` (one trial per centre)."""
    sq = np.einsum("ij,ij->i", x, x)
    centroids = np.empty((k, x.shape[1]), np.float32)
    centroids[0] = x[rng.integers(x.shape[0])]
    d2 = np.maximum(sq - 2.0 * (x @ centroids[0]) + centroids[0] @ centroids[0], 0)
    for j in range(1, k):
        total = float(d2.sum())
        pick = (
            int(rng.choice(x.shape[0], p=d2 / total))
            if total > 0
            else int(rng.integers(x.shape[0]))
        )
        centroids[j] = x[pick]
        np.minimum(
            d2, np.maximum(sq - 2.0 * (x @ centroids[j]) + centroids[j] @ centroids[j], 0), out=d2
        )
    return centroids


def kmeans_fit(
    vectors: np.ndarray, k: int, seed: int, max_iter: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded K-means: k-means++ on a sample of ``64 k`` rows, Lloyd iterations on a sample
    of ``256 k`` rows, then the nearest centroid of every row.

    Parameters
    ----------
    vectors : float array [n, d]
        Converted to contiguous float32.
    k : int
        Clusters wanted; clamped to ``[1, n]``.
    seed : int
        Seed of the sample, the k-means++ picks and nothing else: equal inputs give equal
        outputs.
    max_iter : int
        Lloyd iterations at most (stops early when no label of the training rows changes).

    Returns
    -------
    centroids : float32 array [k, d]
        A cluster that ends up empty keeps its previous centre. With ``n == 0``: ``[0, d]``.
    labels : int64 array [n]
        Nearest centroid of each row.
    """
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n = x.shape[0]
    if n == 0:
        return np.zeros((0, x.shape[1] if x.ndim == 2 else 0), np.float32), np.zeros(0, np.int64)
    k = max(1, min(int(k), n))
    rng = np.random.default_rng(seed)
    centroids = _kmeans_pp(_sample(x, SAMPLE_PER_CENTRE * k, rng), k, rng)
    train = _sample(x, TRAIN_PER_CENTRE * k, rng)
    labels = nearest_centroid(train, centroids)
    for _ in range(max_iter):
        counts = np.bincount(labels, minlength=k)
        # Per-cluster sums, row by row in float32: the same additions in the same order as
        # the one-hot sparse product this replaced (scipy is no dependency of the package).
        sums = np.zeros((k, train.shape[1]), np.float32)
        np.add.at(sums, labels, train)
        present = counts > 0  # empty clusters keep their centre
        centroids[present] = sums[present] / counts[present, None]
        new = nearest_centroid(train, centroids)
        if np.array_equal(new, labels):
            break
        labels = new
    return centroids, (labels if train is x else nearest_centroid(x, centroids))


def _sample(x: np.ndarray, rows: int, rng: np.random.Generator) -> np.ndarray:
    """``x`` itself when it has at most ``rows`` rows, else that many of its rows (seeded,
    in their order)."""
    if x.shape[0] <= rows:
        return x
    return x[np.sort(rng.choice(x.shape[0], rows, replace=False))]


def kmeans_assign(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Nearest centroid (Euclidean) of each vector; ``int64[0]`` for no vectors.

    Parameters
    ----------
    vectors : float array [n, d]
    centroids : float32 array [k, d], k >= 1 when n > 0

    Returns
    -------
    int64 array [n]
    """
    if vectors.shape[0] == 0:
        return np.zeros(0, np.int64)
    return nearest_centroid(np.asarray(vectors, dtype=np.float32), centroids)
