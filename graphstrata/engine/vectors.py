"""Vector search over the embedded kinds with usearch (one HNSW index per node kind).

The usearch indexes are a cache of the vector segments: they can always be rebuilt from the
store. Updates are copy-on-write per kind, so readers of the previous version keep a
consistent index while a writer adds and removes the changed nodes only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from usearch.index import Index as UsearchIndex

from graphstrata.core.ann import hnsw_index, match_arrays
from graphstrata.core.knn import best_per_query
from graphstrata.engine.store import VectorTable

#: Below this many vectors a kind is searched exactly (brute force is faster and exact).
EXACT_BELOW = 4096
#: usearch threads that insert into an HNSW graph. One: a multi-threaded insert links the
#: graph in an order that varies from run to run, so two builds of the same corpus (or a Ray
#: build and a one-process build) answered ``graph`` queries differently (issue #14). On the
#: 2-core machine one thread took 44 s and all cores 43 s for 30k 384-d vectors.
ADD_THREADS = 1


def _new_index(dim: int, dtype: str, expansion_search: int) -> UsearchIndex:
    return hnsw_index(dim, dtype, expansion_search)


class VectorIndex:
    """usearch indexes keyed by node kind; vectors are L2-normalized so inner product = cosine."""

    def __init__(self, dim: int, dtype: str = "f32", expansion_search: int = 128):
        self.dim = dim
        self.dtype = dtype
        self.expansion_search = expansion_search
        self.by_kind: dict[int, UsearchIndex] = {}

    # construction ---------------------------------------------------------------------------
    @classmethod
    def build(
        cls, vectors: VectorTable, dtype: str = "f32", expansion_search: int = 128
    ) -> VectorIndex:
        """Index every live vector of a version from scratch."""
        vi = cls(vectors.dim, dtype, expansion_search)
        for kind in np.unique(vectors.kinds):
            ids, mat = vectors.of_kind(int(kind))
            vi._index_for(int(kind)).add(ids, mat, threads=ADD_THREADS)
        return vi

    @classmethod
    def restore(
        cls,
        path: Path,
        vectors: VectorTable,
        cache_version: int,
        dtype: str = "f32",
        expansion_search: int = 128,
    ) -> VectorIndex:
        """Load the cache written at ``cache_version`` and bring it to ``vectors``' version."""
        vi = cls(vectors.dim, dtype, expansion_search)
        with np.load(path) as blobs:
            for name in blobs.files:
                index = UsearchIndex.restore(bytearray(blobs[name].tobytes()))
                if index is None:
                    raise ValueError(
                        f"vector cache {path} holds an unreadable index for kind {name}"
                    )
                # usearch declares this setter apart from its getter, which mypy misreads.
                index.expansion_search = expansion_search  # type: ignore[misc]
                vi.by_kind[int(name)] = index
        live = np.sort(vectors.ids)
        for index in vi.by_kind.values():
            keys = np.asarray(index.keys, dtype=np.int64)
            dead = keys[~np.isin(keys, live)]
            if dead.size:
                index.remove(dead)
        new_ids, new_kinds = vectors.since(cache_version)
        for kind in np.unique(new_kinds):
            ids = new_ids[new_kinds == kind]
            vi._index_for(int(kind)).add(ids, vectors.get(ids), threads=ADD_THREADS)
        return vi

    def save(self, path: Path) -> None:
        """Write every kind's index into one ``.npz`` file (``restore`` reads it back)."""
        blobs: dict[str, np.ndarray] = {}
        for kind, index in self.by_kind.items():
            blob = index.save()  # no path given: usearch returns the serialized bytes
            assert blob is not None
            blobs[str(kind)] = np.frombuffer(bytes(blob), dtype=np.uint8)
        with open(path, "wb") as fh:
            # numpy's stub types **kwds like its keyword options; the names here are kinds.
            np.savez(fh, **blobs)  # type: ignore[arg-type]

    def _index_for(self, kind: int) -> UsearchIndex:
        if kind not in self.by_kind:
            self.by_kind[kind] = _new_index(self.dim, self.dtype, self.expansion_search)
        return self.by_kind[kind]

    # updates --------------------------------------------------------------------------------
    def updated(
        self,
        add_ids: np.ndarray,
        add_kinds: np.ndarray,
        add_matrix: np.ndarray,
        remove_ids: np.ndarray,
    ) -> VectorIndex:
        """A new VectorIndex with the changes applied; untouched kinds are shared, not copied."""
        out = VectorIndex(self.dim, self.dtype, self.expansion_search)
        out.by_kind = dict(self.by_kind)
        touched: set[int] = set(np.unique(add_kinds).tolist())
        for kind, index in self.by_kind.items():
            if remove_ids.size and np.any(index.contains(remove_ids)):
                touched.add(kind)
        for kind in touched:
            base = self.by_kind.get(kind)
            index = (
                base.copy()
                if base is not None
                else _new_index(self.dim, self.dtype, self.expansion_search)
            )
            if remove_ids.size:
                present = remove_ids[np.asarray(index.contains(remove_ids), dtype=bool)]
                if present.size:
                    index.remove(present)
            sel = add_kinds == kind
            if np.any(sel):
                index.add(
                    add_ids[sel],
                    np.ascontiguousarray(add_matrix[sel], dtype=np.float32),
                    threads=ADD_THREADS,
                )
            out.by_kind[kind] = index
        return out

    # search ---------------------------------------------------------------------------------
    def count(self, kinds: Iterable[int] | None = None) -> int:
        """How many vectors the indexes of ``kinds`` (default: all) hold."""
        kinds = self.by_kind.keys() if kinds is None else kinds
        return sum(len(self.by_kind[k]) for k in kinds if k in self.by_kind)

    def neighbours(
        self,
        queries: np.ndarray,
        query_ids: np.ndarray,
        kinds: Sequence[int],
        m: int,
        exclude: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Top-``m`` neighbours of each query over the union of ``kinds``, skipping some ids.

        The heterograph's semantic edges query the committed index with the new nodes only
        (``O(new log n)``, no vector copied out of the store). A kind's index is searched
        exactly below ``EXACT_BELOW`` vectors, by HNSW above.

        Parameters
        ----------
        queries:
            float32 ``[q, dim]``.
        query_ids:
            int64 ``[q]``: a query is never its own neighbour.
        kinds:
            Node kinds searched.
        m:
            Neighbours per query.
        exclude:
            int64 ids never returned (nodes the operation deletes).

        Returns
        -------
        tuple of numpy.ndarray
            ``(src, dst, sim)`` as ``core.knn.best_per_query`` returns them.
        """
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        query_ids = np.asarray(query_ids, dtype=np.int64)
        nq = queries.shape[0]
        exclude = np.unique(np.asarray(exclude, dtype=np.int64))
        srcs, dsts, sims = [], [], []
        for kind in kinds:
            index = self.by_kind.get(int(kind))
            if index is None or len(index) == 0 or m <= 0 or nq == 0:
                continue
            # Ask for as many more matches as excluded ids the index holds (and one for the
            # query itself), so that m remain after filtering.
            held = int(np.count_nonzero(index.contains(exclude))) if exclude.size else 0
            selves = bool(np.any(index.contains(query_ids)))
            k = min(m + held + int(selves), len(index))
            matches = index.search(queries, k, exact=len(index) < EXACT_BELOW)
            keys, sim, valid = match_arrays(matches, nq, k)
            valid &= keys != query_ids[:, None]
            if held:
                valid &= ~np.isin(keys, exclude)
            srcs.append(np.repeat(query_ids, k).reshape(nq, k)[valid])
            dsts.append(keys[valid])
            sims.append(sim[valid])
        if not srcs:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
        return best_per_query(np.concatenate(srcs), np.concatenate(dsts), np.concatenate(sims), m)

    def search(
        self, queries: np.ndarray, kinds: Sequence[int], k: int
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Top-k over the union of ``kinds`` for each query.

        Returns per query ``(ids int64[<=k], scores float32[<=k])`` sorted by descending cosine.
        """
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        nq = queries.shape[0]
        per_ids: list[list[np.ndarray]] = [[] for _ in range(nq)]
        per_scores: list[list[np.ndarray]] = [[] for _ in range(nq)]
        for kind in kinds:
            index = self.by_kind.get(int(kind))
            if index is None or len(index) == 0 or k <= 0:
                continue
            kk = min(k, len(index))
            matches = index.search(queries, kk, exact=len(index) < EXACT_BELOW)
            keys, sims, valid = match_arrays(matches, nq, kk)
            for q in range(nq):
                per_ids[q].append(keys[q][valid[q]])
                per_scores[q].append(sims[q][valid[q]])
        out_ids, out_scores = [], []
        for q in range(nq):
            if not per_ids[q]:
                out_ids.append(np.zeros(0, np.int64))
                out_scores.append(np.zeros(0, np.float32))
                continue
            ids = np.concatenate(per_ids[q])
            scores = np.concatenate(per_scores[q])
            order = np.argsort(-scores, kind="stable")[:k]
            out_ids.append(ids[order])
            out_scores.append(scores[order])
        return out_ids, out_scores
