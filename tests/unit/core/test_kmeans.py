"""core.kmeans: seeded K-means (oracle: scikit-learn's inertia, brute-force assignment)."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.core import kmeans
from graphstrata.core.kmeans import kmeans_assign, kmeans_fit, nearest_centroid


def kmeans_inertia(vectors: np.ndarray, centroids: np.ndarray, labels: np.ndarray) -> float:
    """Sum of squared distances of each row to its centroid (float64)."""
    if vectors.shape[0] == 0:
        return 0.0
    diff = np.asarray(vectors, np.float64) - np.asarray(centroids, np.float64)[labels]
    return float(np.einsum("ij,ij->", diff, diff))


def test_kmeans_is_seeded_and_assignment_picks_the_nearest_centroid():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(c, 0.05, (50, 4)) for c in (0.0, 1.0, 2.0)]).astype(np.float32)
    c1, l1 = kmeans_fit(x, 3, seed=5)
    c2, l2 = kmeans_fit(x, 3, seed=5)
    assert np.array_equal(l1, l2) and np.allclose(c1, c2)
    assert np.array_equal(kmeans_assign(x, c1), l1)


def _blobs(seed: int, k: int, per: int, dim: int, spread: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 1, (k, dim))
    return np.concatenate([rng.normal(c, spread, (per, dim)) for c in centres]).astype(np.float32)


@pytest.mark.parametrize(("k", "dim", "seed"), [(3, 4, 0), (8, 16, 1), (20, 32, 2)])
def test_inertia_is_close_to_scikit_learn(k: int, dim: int, seed: int) -> None:
    sklearn_cluster = pytest.importorskip("sklearn.cluster")
    x = _blobs(seed, k, 60, dim, 0.15)
    centroids, labels = kmeans_fit(x, k, seed=seed)
    assert centroids.dtype == np.float32 and centroids.shape == (k, dim)
    assert labels.dtype == np.int64 and labels.shape == (x.shape[0],)
    ours = kmeans_inertia(x, centroids, labels)
    ref = sklearn_cluster.KMeans(k, n_init=10, random_state=seed).fit(x.astype(np.float64))
    # A few Lloyd iterations from one k-means++ start: within 2% of the best of 10 starts.
    assert ours <= 1.02 * float(ref.inertia_) + 1e-6


@pytest.mark.parametrize("seed", [0, 1])
def test_training_on_a_sample_still_labels_every_row_by_its_nearest_centroid(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    k = 8
    x = _blobs(seed, k, 500, 16, 0.15)
    whole = kmeans_fit(x, k, seed=seed)  # the same k-means++ start, every row trains
    monkeypatch.setattr(kmeans, "TRAIN_PER_CENTRE", 50)  # 400 of 4,000 rows train
    centroids, labels = kmeans_fit(x, k, seed=seed)
    again = kmeans_fit(x, k, seed=seed)
    assert np.array_equal(labels, again[1]) and np.array_equal(centroids, again[0])
    d2 = ((x[:, None, :].astype(np.float64) - centroids[None].astype(np.float64)) ** 2).sum(-1)
    assert np.allclose(d2[np.arange(x.shape[0]), labels], d2.min(axis=1), rtol=1e-4, atol=1e-4)
    # A centre estimated from m rows adds ~1/m of its cluster's variance (2% for 50):
    # within twice that of the centroids of every row.
    assert kmeans_inertia(x, centroids, labels) <= 1.04 * kmeans_inertia(x, *whole) + 1e-6


def test_labels_are_the_brute_force_nearest_centroid():
    x = _blobs(3, 6, 40, 8, 0.5)
    centroids, labels = kmeans_fit(x, 6, seed=1)
    d2 = ((x[:, None, :].astype(np.float64) - centroids[None].astype(np.float64)) ** 2).sum(-1)
    best = d2.min(axis=1)
    # Equal to argmin up to float32 ties: the chosen centroid is (one of) the nearest.
    assert np.allclose(d2[np.arange(x.shape[0]), labels], best, rtol=1e-4, atol=1e-4)
    assert np.array_equal(nearest_centroid(x, centroids, block_rows=7), labels)


def test_inertia_matches_the_definition():
    x = np.asarray([[0, 0], [2, 0], [10, 10]], np.float32)
    c = np.asarray([[1, 0], [10, 10]], np.float32)
    assert kmeans_inertia(x, c, np.asarray([0, 0, 1])) == pytest.approx(2.0)
    assert kmeans_inertia(x[:0], c, np.zeros(0, np.int64)) == 0.0


def test_empty_input_gives_no_centroids_and_no_labels():
    centroids, labels = kmeans_fit(np.zeros((0, 5), np.float32), 4, seed=0)
    assert centroids.shape == (0, 5) and labels.shape == (0,)
    assert kmeans_assign(np.zeros((0, 5), np.float32), np.ones((2, 5), np.float32)).shape == (0,)


def test_one_point_is_its_own_centroid():
    x = np.asarray([[0.5, -1.0, 2.0]], np.float32)
    centroids, labels = kmeans_fit(x, 3, seed=0)  # k is clamped to n
    assert centroids.shape == (1, 3) and np.allclose(centroids[0], x[0])
    assert labels.tolist() == [0]


def test_duplicates_collapse_to_zero_inertia():
    x = np.repeat(np.asarray([[1.0, 2.0, 3.0]], np.float32), 10, axis=0)
    centroids, labels = kmeans_fit(x, 4, seed=2)
    assert centroids.shape == (4, 3)
    assert kmeans_inertia(x, centroids, labels) == pytest.approx(0.0, abs=1e-9)
    # Two distinct points repeated: two clusters, each exact.
    y = np.concatenate([x, -x])
    centroids, labels = kmeans_fit(y, 2, seed=2)
    assert len(set(labels[:10].tolist())) == 1 and len(set(labels[10:].tolist())) == 1
    assert labels[0] != labels[10]
    assert kmeans_inertia(y, centroids, labels) == pytest.approx(0.0, abs=1e-6)


def test_k_larger_than_n_is_clamped():
    x = _blobs(4, 2, 3, 4, 0.1)
    centroids, labels = kmeans_fit(x, 50, seed=0)
    assert centroids.shape == (x.shape[0], 4)
    assert kmeans_inertia(x, centroids, labels) == pytest.approx(0.0, abs=1e-6)
