"""usearch HNSW indexes by inner product, with pinned parameters, and their search results.

The engine's vector indexes (``engine/vectors.py``) are built here, two ways: by usearch's
own inserts (:func:`hnsw_index`, then ``add``), or, for a large set, from a search graph
made without a search (``core.search_graph``), written in usearch's serialized layout and
loaded (:func:`hnsw_from_graph`). A k-NN graph of one whole vector set (the semantic edges
of a build) is not made here: building an HNSW index and searching it with every vector
grew as ``N^1.47`` on this machine, ``core.nndescent`` does it in ``O(n log n)``
(docs/architecture.md, "Kernels").
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
from usearch.index import Index as UsearchIndex

__all__ = ["has_removed_slots", "hnsw_from_graph", "hnsw_index", "match_arrays"]

#: HNSW graph degree and build-time expansion (usearch's defaults, pinned so an index does
#: not change with the library's version).
CONNECTIVITY = 16
EXPANSION_ADD = 128
#: The base layer's degree: usearch links its base layer at twice the connectivity.
BASE_DEGREE = 2 * CONNECTIVITY
#: Bytes per scalar of the storage types :func:`hnsw_from_graph` writes (numpy's float16
#: is IEEE half precision, usearch's ``f16``).
_STORED: dict[str, np.dtype[Any]] = {"f16": np.dtype("<f2"), "f32": np.dtype("<f4")}
#: usearch's dense-index header (``index_dense_head_t``, padded to 64 bytes): the magic,
#: version, metric and scalar kinds, then the present and deleted counts (uint64) at these
#: offsets.
_HEAD_BYTES = 64
_PRESENT_AT = 17
_DELETED_AT = 25


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


def has_removed_slots(index: UsearchIndex) -> bool:
    """Does ``index`` hold slots of removed vectors (its graph's nodes outnumber its keys)?

    usearch reuses such a slot for a later insert, which corrupts an index that was copied
    or loaded (``engine.vectors``, ``VectorIndex._merged``).
    """
    return int(index.stats.nodes) > len(index)


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


def _node_dtype() -> np.dtype:
    """One base-layer node of usearch's graph: key, level, neighbour count, slots."""
    return np.dtype(
        [("key", "<u8"), ("level", "<i2"), ("count", "<u4"), ("slots", "<u4", (BASE_DEGREE,))]
    )


@cache
def _dense_head(dim: int, dtype: str) -> bytes | None:
    """The dense header usearch writes for an index of these settings, read from a saved
    one-vector index (once per settings), or None when its layout is not the one
    :func:`hnsw_from_graph` writes (another usearch file format)."""
    template = hnsw_index(dim, dtype, 64)
    template.add(np.array([7], np.int64), np.ones((1, dim), np.float32) / np.sqrt(dim))
    saved = bytes(template.save())  # type: ignore[arg-type]
    vector_bytes = _STORED[dtype].itemsize * dim
    header = np.array([1, CONNECTIVITY, BASE_DEGREE, 0, 0], "<u8").tobytes()
    node = np.zeros(1, _node_dtype())
    node["key"] = 7
    expected = 8 + vector_bytes + _HEAD_BYTES + len(header) + 2 + node.itemsize
    head_at = 8 + vector_bytes
    graph_at = head_at + _HEAD_BYTES
    if (
        len(saved) != expected
        or saved[:8] != np.array([1, vector_bytes], "<u4").tobytes()
        or saved[head_at : head_at + 7] != b"usearch"
        or saved[graph_at : graph_at + len(header)] != header
        or saved[-node.itemsize :] != node.tobytes()
        or int.from_bytes(saved[head_at + _PRESENT_AT : head_at + _DELETED_AT], "little") != 1
    ):
        return None
    return saved[head_at:graph_at]


def hnsw_from_graph(
    ids: np.ndarray,
    vectors: np.ndarray,
    neighbours: np.ndarray,
    counts: np.ndarray,
    entry: int,
    dtype: str,
    expansion_search: int,
) -> UsearchIndex | None:
    """A usearch index whose base layer is the given graph (no insert, no search).

    The graph (``core.search_graph``) is written in usearch's serialized layout (the
    vectors, the dense header, the graph header, each node's level, then each node's key
    and neighbour slots) and loaded: usearch searches it, adds to it and removes from it as
    an index it built. Every node is on the base layer, and searches start at ``entry``.

    Parameters
    ----------
    ids : int64 array [n]
        Each row's key (unique, non-negative).
    vectors : float array [n, d]
        Stored as ``dtype``.
    neighbours : int array [n, >= 1]
        Each row's neighbours (row indices), ``counts[row]`` of them, at most
        ``BASE_DEGREE``.
    counts : int array [n]
    entry : int
        The row searches start from.
    dtype : str
        ``f16`` or ``f32``.
    expansion_search : int
        Query-time expansion of the index.

    Returns
    -------
    usearch Index, or None
        None when this usearch writes another file layout or ``dtype`` is not written here:
        the caller inserts the vectors instead.
    """
    n, dim = vectors.shape
    if dtype not in _STORED or n == 0:
        return None
    head = _dense_head(dim, dtype)
    if head is None:
        return None
    counts = np.asarray(counts, np.int64)
    if neighbours.shape[1] > BASE_DEGREE or (counts > neighbours.shape[1]).any():
        raise ValueError("hnsw_from_graph: more neighbours than the base layer holds")
    # One buffer, filled in place: a 410k-vector kind is ~370 MB, so no part is copied twice.
    stored = _STORED[dtype]
    vector_bytes = stored.itemsize * dim
    node = _node_dtype()
    header = np.array([n, CONNECTIVITY, BASE_DEGREE, 0, entry], "<u8").tobytes()
    at_head = 8 + n * vector_bytes
    at_levels = at_head + _HEAD_BYTES + len(header)
    at_nodes = at_levels + 2 * n
    buffer = np.zeros(at_nodes + n * node.itemsize, np.uint8)
    buffer[:8] = np.frombuffer(np.array([n, vector_bytes], "<u4").tobytes(), np.uint8)
    buffer[8:at_head].view(stored).reshape(n, dim)[:] = vectors
    patched = bytearray(head)
    patched[_PRESENT_AT:_DELETED_AT] = np.uint64(n).tobytes()
    patched[_DELETED_AT : _DELETED_AT + 8] = np.uint64(0).tobytes()
    buffer[at_head : at_head + _HEAD_BYTES] = np.frombuffer(bytes(patched), np.uint8)
    buffer[at_head + _HEAD_BYTES : at_levels] = np.frombuffer(header, np.uint8)
    nodes = buffer[at_nodes:].view(node)  # every level (int16) stays 0: the base layer
    nodes["key"] = np.asarray(ids, np.int64)
    nodes["count"] = counts
    width = neighbours.shape[1]
    nodes["slots"][:, :width] = np.where(neighbours >= 0, neighbours, 0)
    index = hnsw_index(dim, dtype, expansion_search)
    index.load(buffer.data)
    if len(index) != n:
        raise RuntimeError(f"usearch loaded {len(index)} of {n} vectors of a written graph")
    return index
