"""usearch HNSW indexes by inner product, with pinned parameters, and their search results.

The engine's vector indexes (``engine/vectors.py``) are built here. A k-NN graph of one
whole vector set (the semantic edges of a build) is not: building an HNSW index and
searching it with every vector grew as ``N^1.47`` on this machine, ``core.nndescent`` does
it in ``O(n log n)`` (docs/architecture.md, "Kernels").
"""

from __future__ import annotations

import numpy as np
from usearch.index import Index as UsearchIndex

__all__ = ["hnsw_index", "match_arrays"]

#: HNSW graph degree and build-time expansion (usearch's defaults, pinned so an index does
#: not change with the library's version).
CONNECTIVITY = 16
EXPANSION_ADD = 128


def hnsw_index(dim: int, dtype: str, expansion_search: int) -> UsearchIndex:
    """An empty inner-product HNSW index.

    Parameters
    ----------
    dim : int
        Vector dimension.
    dtype : str
        usearch's storage type; explicit because its default depends on the CPU's features.
    expansion_search : int
        Query-time expansion (ef): higher is closer to exact and slower (the engine's
        default: ``SearchConfig.expansion_search``).
    """
    return UsearchIndex(
        ndim=dim,
        metric="ip",
        dtype=dtype,
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=expansion_search,
    )


def match_arrays(matches: object, nq: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(keys int64 [nq, k], similarity float32 [nq, k], valid bool [nq, k])`` of a search.

    usearch pads a batch with sentinels where it found fewer than ``k`` matches; ``valid``
    marks the real ones (its ``counts``). Similarity is ``1 - distance`` (metric ``ip``).
    """
    keys = np.asarray(matches.keys).reshape(nq, -1).astype(np.int64)  # type: ignore[attr-defined]
    dist = np.asarray(matches.distances).reshape(nq, -1)  # type: ignore[attr-defined]
    counts = (
        np.asarray(matches.counts).reshape(nq)  # type: ignore[attr-defined]
        if hasattr(matches, "counts")
        else np.full(nq, keys.shape[1])
    )
    valid = np.arange(keys.shape[1])[None, :] < counts[:, None]
    return keys[:, :k], (1.0 - dist[:, :k]).astype(np.float32), valid[:, :k]
