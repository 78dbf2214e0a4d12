"""Vector search over the embedded kinds with usearch (one HNSW index per node kind).

The usearch indexes are a cache of the vector segments: they can always be rebuilt from the
store. Updates are copy-on-write, so readers of the previous version keep a consistent index
while a writer adds and removes the changed nodes only. A kind is a *base* HNSW index shared
by versions, plus the version's own *fresh* vectors (added since the base, searched exactly)
and the ids *removed* from the base since (filtered out of its results): a write copies only
the fresh part, O(change), not the whole index. When the fresh vectors outgrow
``FRESH_SHARE`` of the base (at least ``FRESH_MIN``), they are merged into a new base (one
O(n) copy, amortized over the writes before it); when more ids are removed than
``removal_limit`` allows, the base is copied without them and the fresh vectors stay apart.

The cache file of a kind is a base, and the version whose vectors that base holds: a reader
maps it and takes the vectors written since as fresh, the ids gone since as removed, and so
reaches the writer's state (copying the base, as the writer did, when they pass the
bounds). A commit writes the base of a kind that was rebuilt since its file (``unsaved``)
once the kind's rows written since reach the stale share (``engine.read_caches``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from usearch.index import Index as UsearchIndex

from graphstrata.core import sets
from graphstrata.core.ann import hnsw_index, match_arrays
from graphstrata.core.knn import best_per_query
from graphstrata.engine.config import SearchConfig
from graphstrata.engine.graph_bases import GRAPH_BUILD_MIN, NeighbourLists, graph_base
from graphstrata.engine.store import VectorTable
from graphstrata.engine.store.caches import CacheFile

#: The HNSW query-time expansion of a VectorIndex made without one (the config's default).
DEFAULT_EXPANSION = SearchConfig.expansion_search
#: Below this many vectors a kind is searched exactly (brute force is faster and exact).
EXACT_BELOW = 4096
#: usearch threads that insert into an HNSW graph. One: a multi-threaded insert links the
#: graph in an order that varies from run to run, so two builds of the same corpus (or a Ray
#: build and a one-process build) answered ``graph`` queries differently (issue #14). On the
#: 2-core machine one thread took 44 s and all cores 43 s for 30k 384-d vectors.
ADD_THREADS = 1
#: Kinds whose indexes are built or updated at once, each on one thread (so each index is
#: still linked in one order): usearch releases the GIL, and the 52,636 vectors of the
#: 10k-chunk scale index took 43.6 s against 50.6-54.8 s one kind after another (the S
#: index, 78% of them, bounds it). Only a write adding at least
#: ``PARALLEL_KINDS_MIN`` vectors uses the pool (a small write would pay its start-up).
KIND_THREADS = max(1, min(4, os.cpu_count() or 1))
PARALLEL_KINDS_MIN = 4096
#: Fresh vectors a kind keeps apart from its base before they are merged into a new base.
FRESH_SHARE = 0.125
FRESH_MIN = 4096
#: ... and at most this many (they are searched by a matrix product: 16k x 384 is ~2 ms).
FRESH_CAP = 16384
#: Ids removed from a base before it is rewritten without them: ``REMOVED_MAX``, or one in
#: ``REMOVED_SHARE`` of the base if more, up to ``REMOVED_CAP``. Rewriting copies the whole
#: base (a million-vector base: seconds), so a large base tolerates more removals.
REMOVED_MAX = 64
REMOVED_SHARE = 256
REMOVED_CAP = 1024
#: Matches a warming search asks each base for (``VectorIndex.warm``).
WARM_K = 10
#: A search asks a base for this many matches more than k (at most as many as it has
#: removed ids) and asks again, for k + all its removed ids, only for a query whose top
#: matches held more removed ids than that. For an exact search (small bases) that is the
#: result of always asking for k + all (tested); an HNSW search asked for another count may
#: return slightly different neighbours (not measured).
OVERSAMPLE = 16

_EMPTY_IDS = np.zeros(0, np.int64)


def removal_limit(base_size: int) -> int:
    """Removed ids a base of ``base_size`` vectors keeps before it is rewritten."""
    return max(REMOVED_MAX, min(REMOVED_CAP, base_size // REMOVED_SHARE))


def _search_without(
    index: Any, queries: np.ndarray, k: int, dropped: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``match_arrays`` of the top matches of ``index`` with ``dropped`` ids marked invalid,
    at least k valid per query where the index holds that many others (``OVERSAMPLE``)."""
    nq, n = queries.shape[0], len(index)
    kk = min(k + min(dropped.size, OVERSAMPLE), n)
    # One query (a retrieval) is searched on the calling thread: usearch's pool (threads=0)
    # took 1.5-2.7 ms per query against 1.1 ms on the 100k-chunk T index, beside a busy core
    # (build/scratch/search_threads.py), and a server's concurrent requests each keep
    # their own thread. A write's batch of new nodes uses every core.
    threads = 1 if nq == 1 else 0
    keys, sims, valid = match_arrays(
        index.search(queries, kk, exact=n < EXACT_BELOW, threads=threads), nq, kk
    )
    if not dropped.size:
        return keys, sims, valid
    valid &= ~np.isin(keys, dropped)
    full = min(k + dropped.size, n)
    short = np.flatnonzero(valid.sum(axis=1) < min(k, kk))
    if full > kk and short.size:  # those queries' top matches were mostly removed ids
        k2, s2, v2 = match_arrays(
            index.search(queries[short], full, exact=n < EXACT_BELOW, threads=threads),
            short.size,
            full,
        )
        v2 &= ~np.isin(k2, dropped)
        keys, sims, valid = _widened(keys, full), _widened(sims, full), _widened(valid, full)
        keys[short], sims[short], valid[short] = (
            _widened(k2, full),
            _widened(s2, full),
            _widened(v2, full),
        )
    return keys, sims, valid


def _for_each_kind(
    work: Callable[[int], None], n: int, parallel: bool, alone: Sequence[bool] = ()
) -> None:
    """``work(0) … work(n - 1)``, on up to ``KIND_THREADS`` threads when ``parallel``; the
    ``alone`` ones first, one after another on the calling thread (their kernels use every
    core already)."""
    first = [j for j in range(n) if j < len(alone) and alone[j]]
    rest = [j for j in range(n) if not (j < len(alone) and alone[j])]
    for j in first:
        work(j)
    if not parallel or len(rest) < 2 or KIND_THREADS < 2:
        for j in rest:
            work(j)
        return
    with ThreadPoolExecutor(min(len(rest), KIND_THREADS), thread_name_prefix="gs-vectors") as pool:
        list(pool.map(work, rest))


def _widened(a: np.ndarray, width: int) -> np.ndarray:
    """``a`` [n, <= width] padded on the right to ``width`` columns with zeros (False)."""
    out = np.zeros((a.shape[0], width), a.dtype)
    out[:, : a.shape[1]] = a
    return out


def _new_index(dim: int, dtype: str, expansion_search: int) -> UsearchIndex:
    return hnsw_index(dim, dtype, expansion_search)


def _new_base(
    ids: np.ndarray,
    matrix: np.ndarray,
    dtype: str,
    expansion_search: int,
    neighbours: NeighbourLists | None = None,
) -> UsearchIndex:
    """An index of these vectors: made from their k-NN graph (seeded from ``neighbours``)
    when they are at least ``GRAPH_BUILD_MIN`` (and usearch's layout is the one written),
    else by inserts."""
    if ids.size >= GRAPH_BUILD_MIN:
        index = graph_base(ids, matrix, dtype, expansion_search, neighbours)
        if index is not None:
            return index
    index = _new_index(matrix.shape[1], dtype, expansion_search)
    if ids.size:
        index.add(ids, matrix, threads=ADD_THREADS)
    return index


@dataclass(frozen=True)
class _Matches:
    """Search results shaped like usearch's (``keys``, ``distances``, ``counts``)."""

    keys: np.ndarray
    distances: np.ndarray
    counts: np.ndarray


class _Exact:
    """A kind's fresh vectors, searched exactly by one matrix product (there are few)."""

    def __init__(self, ids: np.ndarray, rows: np.ndarray):
        self.ids, self.rows = ids, rows

    def __len__(self) -> int:
        return int(self.ids.size)

    def contains(self, ids: np.ndarray) -> np.ndarray:
        return np.isin(ids, self.ids)

    def search(self, queries: np.ndarray, k: int, exact: bool = True, threads: int = 0) -> _Matches:
        sims = queries @ self.rows.T
        k = min(k, self.ids.size)
        # The k best of up to FRESH_CAP rows, then only those sorted (ties by row).
        if k < self.ids.size:
            top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        else:
            top = np.broadcast_to(np.arange(k), sims.shape).copy()
        cand = np.take_along_axis(sims, top, axis=1)
        top = np.take_along_axis(top, np.lexsort((top, -cand), axis=-1), axis=1)
        best = np.take_along_axis(sims, top, axis=1)
        return _Matches(self.ids[top], 1.0 - best, np.full(queries.shape[0], k))


class VectorIndex:
    """usearch indexes keyed by node kind; vectors are L2-normalized so inner product = cosine."""

    def __init__(self, dim: int, dtype: str = "f32", expansion_search: int = DEFAULT_EXPANSION):
        self.dim = dim
        self.dtype = dtype
        self.expansion_search = expansion_search
        #: Base HNSW index per kind (never changed once a version shares it).
        self.by_kind: dict[int, UsearchIndex] = {}
        #: Per kind: vectors added since the base (ids, float32 rows), this version's own.
        self.fresh: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        #: Per kind: sorted ids removed from the base since it was built.
        self.removed: dict[int, np.ndarray] = {}
        #: Per kind: a base below ``EXACT_BELOW`` vectors and its vectors in one matrix
        #: (``_small_base``), carried to the next versions while they share the base.
        self._exact_bases: dict[int, tuple[UsearchIndex, _Exact]] = {}
        #: Per kind: the version whose vectors the base holds (those written later are fresh).
        self.base_versions: dict[int, int] = {}
        #: Per kind: the base its cache file holds (``unsaved`` compares by identity).
        self.cached: dict[int, UsearchIndex] = {}

    # construction ---------------------------------------------------------------------------
    @classmethod
    def build(
        cls, vectors: VectorTable, dtype: str = "f32", expansion_search: int = DEFAULT_EXPANSION
    ) -> VectorIndex:
        """Index every live vector of a version from scratch (no base is in a cache file)."""
        vi = cls(vectors.dim, dtype, expansion_search)
        kinds = [int(k) for k in sets.unique(vectors.kinds)]
        vi.base_versions = dict.fromkeys(kinds, vectors.version)
        sizes = np.bincount(
            np.asarray(vectors.kinds, np.int64), minlength=max(kinds, default=0) + 1
        )

        def add(j: int) -> None:
            ids, mat = vectors.of_kind(kinds[j])
            mat = np.ascontiguousarray(mat, dtype=np.float32)
            vi.by_kind[kinds[j]] = _new_base(ids, mat, dtype, expansion_search)

        _for_each_kind(add, len(kinds), True, [sizes[kind] >= GRAPH_BUILD_MIN for kind in kinds])
        return vi

    @classmethod
    def restore(
        cls,
        files: dict[int, CacheFile],
        vectors: VectorTable,
        dtype: str = "f32",
        expansion_search: int = DEFAULT_EXPANSION,
    ) -> VectorIndex:
        """Map each kind's cache file and bring it to ``vectors``.

        Each kind's file is memory-mapped (usearch ``view``): opening reads no index into
        memory. A view is never modified (usearch cannot modify one): the vectors added and
        removed since the file's version are applied as the version's fresh and removed
        parts, and when they are many the kind is merged into an in-memory base at once, as
        a write would do (module docstring). A kind with vectors but no file is built.

        Parameters
        ----------
        files:
            The cache file of each kind and the version whose vectors it holds (as
            ``save_bases`` or ``save_merged`` wrote them and the manifest records them).
        vectors:
            The vector table of the version opened.
        dtype, expansion_search:
            As for ``build``.

        Raises
        ------
        ValueError
            A file is not a usearch index.
        """
        vi = cls(vectors.dim, dtype, expansion_search)
        for kind, file in sorted(files.items()):
            vi._set_base(int(kind), UsearchIndex.restore(str(file.path), view=True), file.path)
        vi.cached = dict(vi.by_kind)
        return vi._caught_up(vectors, {kind: file.version for kind, file in files.items()})

    @classmethod
    def restore_single_file(
        cls,
        path: Path,
        vectors: VectorTable,
        cache_version: int,
        dtype: str = "f32",
        expansion_search: int = DEFAULT_EXPANSION,
    ) -> VectorIndex:
        """As :meth:`restore`, from the one ``.npz`` of every kind that indexes written
        before the per-kind files keep until their cache is next written (read into memory:
        an ``.npz`` member cannot be mapped). No kind counts as saved: the next commit writes
        each into its own file."""
        vi = cls(vectors.dim, dtype, expansion_search)
        with np.load(path) as blobs:
            for name in blobs.files:
                vi._set_base(
                    int(name), UsearchIndex.restore(bytearray(blobs[name].tobytes())), path
                )
        return vi._caught_up(vectors, dict.fromkeys(vi.by_kind, cache_version))

    def _set_base(self, kind: int, index: UsearchIndex | None, path: Path) -> None:
        if index is None:
            raise ValueError(f"vector cache {path} holds no usearch index for kind {kind}")
        # usearch declares this setter apart from its getter, which mypy misreads.
        index.expansion_search = self.expansion_search  # type: ignore[misc]
        self.by_kind[kind] = index

    def _caught_up(self, vectors: VectorTable, versions: dict[int, int]) -> VectorIndex:
        """This restored cache with the vectors written and removed since each kind's
        ``versions`` entry applied (a kind without one is built from all its vectors)."""
        self.base_versions = dict(versions)
        since: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        present = np.flatnonzero(np.bincount(vectors.kinds, minlength=1)).tolist()
        for kind in sorted(set(self.by_kind) | set(present)):
            version = versions.get(kind, -1)
            if version not in since:
                since[version] = vectors.since(version)
            new_ids, new_kinds = since[version]
            base = self.by_kind.get(kind)
            keys = np.asarray(base.keys, np.int64) if base is not None else _EMPTY_IDS
            add = new_ids[new_kinds == kind]
            # Dead since the file, or written again (a rewritten vector keeps its node id).
            gone = sets.union(keys[~vectors.has(keys)], add)
            self._apply(kind, add, vectors.get(add), gone, vectors.version)
        return self

    def unsaved(self) -> list[int]:
        """Kinds whose base is not the one their cache file holds (rebuilt since, or never
        saved): a reader of the file would rebuild it again."""
        return [k for k in self.kinds() if self.by_kind[k] is not self.cached.get(k)]

    def save_bases(
        self, path_of: Callable[[int], Path], kinds: Iterable[int]
    ) -> dict[int, CacheFile]:
        """Write the bases of ``kinds``, each into its own usearch file with the version
        whose vectors it holds (a commit: its fresh vectors and removals stay to be applied
        by a reader, as the writer keeps them apart).

        Parameters
        ----------
        path_of:
            The file to write for a node kind.
        kinds:
            The kinds to write (``unsaved``).

        Returns
        -------
        dict
            The file written for each kind (``restore`` maps them back).
        """
        out = {}
        for kind in kinds:
            path = path_of(kind)
            self.by_kind[kind].save(str(path))
            out[kind] = CacheFile(path, self.base_versions[kind])
        return out

    def save_merged(self, path_of: Callable[[int], Path], version: int) -> dict[int, CacheFile]:
        """Write every kind whole, its fresh vectors linked and removals applied, as of
        ``version`` (a compaction: a reader then has nothing to apply).

        Parameters
        ----------
        path_of:
            The file to write for a node kind.
        version:
            The version this index is of.

        Returns
        -------
        dict
            The file written for each kind.
        """
        out = {}
        for kind in self.kinds():
            path = path_of(kind)
            self._merged(kind).save(str(path))
            out[kind] = CacheFile(path, version)
        return out

    def mark_saved(self, kinds: Iterable[int]) -> None:
        """Record that the cache files of ``kinds`` were committed (for ``unsaved``); one
        assignment, as readers may share this object."""
        self.cached = {**self.cached, **{int(k): self.by_kind[int(k)] for k in kinds}}

    def _merged(self, kind: int, with_fresh: bool = True) -> UsearchIndex:
        """``kind``'s base with its removals and (``with_fresh``) its fresh vectors applied
        (a copy if any)."""
        base = self.by_kind[kind]
        fresh = self.fresh.get(kind) if with_fresh else None
        removed = self.removed.get(kind, _EMPTY_IDS)
        if (fresh is None or not fresh[0].size) and not removed.size:
            return base
        if len(base) < EXACT_BELOW:
            return self._small_merged(kind, base, fresh, removed)
        merged = base.copy()
        if removed.size:
            merged.remove(removed)
        if fresh is not None and fresh[0].size:
            merged.add(fresh[0], fresh[1], threads=ADD_THREADS)
        return merged

    def _small_merged(
        self,
        kind: int,
        base: UsearchIndex,
        fresh: tuple[np.ndarray, np.ndarray] | None,
        removed: np.ndarray,
    ) -> UsearchIndex:
        """A small base merged by making it again from its live vectors and ``fresh``.

        usearch 2.25.3 mishandles a copy of an index that had removals: copied, removed from
        and added to in turn (as a merge does), its ``len`` overcounted and keys were neither
        ``contains``-ed nor ``get``-able from the third merge on (30 removed and 40 added
        over 400 vectors: 10 lost at the third, 80 at the fifth); a copy through its bytes
        crashed adding past its capacity. Reading such a base's vectors out
        (``_small_base``) then failed a write. Below ``EXACT_BELOW`` vectors making the base
        again costs little and leaves no removed slot behind
        (``tests/unit/test_vectors.py``). A large base still goes through ``copy``.
        """
        held = self._small_base(kind, base) if len(base) else None
        ids = held.ids if isinstance(held, _Exact) else np.zeros(0, np.int64)
        rows = held.rows if isinstance(held, _Exact) else np.zeros((0, self.dim), np.float32)
        if removed.size:
            keep = ~np.isin(ids, removed)
            ids, rows = ids[keep], rows[keep]
        if fresh is not None and fresh[0].size:
            ids, rows = np.concatenate([ids, fresh[0]]), np.concatenate([rows, fresh[1]])
        return _new_base(
            ids, np.ascontiguousarray(rows, np.float32), self.dtype, self.expansion_search
        )

    # updates --------------------------------------------------------------------------------
    def updated(
        self,
        add_ids: np.ndarray,
        add_kinds: np.ndarray,
        add_matrix: np.ndarray,
        remove_ids: np.ndarray,
        version: int,
        neighbours: NeighbourLists | None = None,
    ) -> VectorIndex:
        """A new VectorIndex with the changes of ``version`` applied; untouched kinds are
        shared, not copied, and a touched kind copies only its fresh part (module
        docstring). A new kind's base made from its k-NN graph starts that graph from
        ``neighbours`` (``graph_bases``)."""
        out = VectorIndex(self.dim, self.dtype, self.expansion_search)
        out.by_kind, out.fresh, out.removed, out._exact_bases = (
            dict(self.by_kind),
            dict(self.fresh),
            dict(self.removed),
            dict(self._exact_bases),
        )
        out.base_versions, out.cached = dict(self.base_versions), dict(self.cached)
        remove_ids = np.asarray(remove_ids, np.int64)
        touched: set[int] = set(sets.unique(add_kinds).tolist())
        if remove_ids.size:
            touched |= {k for k in self.kinds() if self.contains(remove_ids, k).any()}
        kinds = sorted(touched)

        def apply(j: int) -> None:
            sel = add_kinds == kinds[j]
            out._apply(kinds[j], add_ids[sel], add_matrix[sel], remove_ids, version, neighbours)

        # Each kind's update writes only its own entries of ``out``'s dicts. A new kind made
        # from its k-NN graph runs alone (its kernels use every core).
        per_kind = np.bincount(np.asarray(add_kinds, np.int64), minlength=max(kinds, default=0) + 1)
        alone = [kind not in self.by_kind and per_kind[kind] >= GRAPH_BUILD_MIN for kind in kinds]
        _for_each_kind(apply, len(kinds), add_ids.size >= PARALLEL_KINDS_MIN, alone)
        return out

    def _apply(
        self,
        kind: int,
        add_ids: np.ndarray,
        add_matrix: np.ndarray,
        remove_ids: np.ndarray,
        version: int,
        neighbours: NeighbourLists | None = None,
    ) -> None:
        """Add and remove the vectors of one kind at ``version`` (this object is the new
        version's)."""
        matrix = np.ascontiguousarray(add_matrix, dtype=np.float32)
        base = self.by_kind.get(kind)
        if base is None:  # a new kind: its base is built directly
            index = _new_base(add_ids, matrix, self.dtype, self.expansion_search, neighbours)
            self.by_kind[kind], self.base_versions[kind] = index, version
            return
        ids, rows = self.fresh.get(kind, (_EMPTY_IDS, np.zeros((0, self.dim), np.float32)))
        removed = self.removed.get(kind, _EMPTY_IDS)
        if remove_ids.size:
            keep = ~np.isin(ids, remove_ids)
            ids, rows = ids[keep], rows[keep]
            in_base = remove_ids[np.asarray(base.contains(remove_ids), dtype=bool)]
            removed = sets.union(removed, in_base)
        ids, rows = np.concatenate([ids, add_ids]), np.concatenate([rows, matrix])
        big = min(max(FRESH_MIN, FRESH_SHARE * len(base)), FRESH_CAP)
        self.fresh[kind], self.removed[kind] = (ids, rows), removed
        if ids.size > big:
            self.by_kind[kind], self.base_versions[kind] = self._merged(kind), version
            self.fresh.pop(kind)
            self.removed.pop(kind)
        elif removed.size > removal_limit(len(base)):
            # Only the removals: linking the fresh vectors into the copy was 0.63 of the
            # 0.77 s this merge took when opening the 1M-chunk index 46 writes after its
            # cache (609 rewritten summaries; issue 17), and they are searched exactly
            # until they outgrow their own bound.
            self.by_kind[kind] = self._merged(kind, with_fresh=False)
            self.removed.pop(kind)

    def kinds(self) -> list[int]:
        """The kinds this index holds vectors of (or held: a kind may be empty now)."""
        return sorted(self.by_kind)

    def contains(self, ids: np.ndarray, kind: int) -> np.ndarray:
        """bool per id: does ``kind``'s index hold it (base minus removed, plus fresh)."""
        ids = np.asarray(ids, np.int64)
        base = self.by_kind.get(kind)
        out = np.zeros(ids.size, bool)
        if base is not None and ids.size:
            out = np.asarray(base.contains(ids), dtype=bool)
            out &= ~np.isin(ids, self.removed.get(kind, _EMPTY_IDS))
        fresh = self.fresh.get(kind)
        if fresh is not None:
            out |= np.isin(ids, fresh[0])
        return out

    def _parts(self, kind: int) -> list[tuple[Any, np.ndarray]]:
        """``(searchable, ids to drop from its results)`` of a kind: the base and, when
        there is one, a small exact index of the fresh vectors."""
        base = self.by_kind.get(kind)
        if base is None:
            return []
        searched = self._small_base(kind, base)
        parts: list[tuple[Any, np.ndarray]] = [(searched, self.removed.get(kind, _EMPTY_IDS))]
        fresh = self.fresh.get(kind)
        if fresh is not None and fresh[0].size:
            parts.append((_Exact(*fresh), _EMPTY_IDS))
        return parts

    def _small_base(self, kind: int, base: UsearchIndex) -> UsearchIndex | _Exact:
        """``base``, or below ``EXACT_BELOW`` vectors the same vectors searched by one
        matrix product: usearch's exact search took 3.0 ms for 13 queries over 2,660
        vectors where the product and selection took 0.7 ms (a microbenchmark), and every
        write's semantic edges search the attributes' kind (issue 17). The matrix is read
        out of the base once, when a version first searches it. An f16 base's rows are its
        stored values widened to float32, so the product scores what usearch's exact search
        scores (at 100k chunks its 2.9k attributes took 4.3 ms a write's search by usearch,
        build/scratch/sem_insert.py)."""
        if not 0 < len(base) < EXACT_BELOW:
            return base
        held = self._exact_bases.get(kind)
        if held is None or held[0] is not base:
            keys = np.asarray(base.keys, np.int64)
            rows = np.ascontiguousarray(base.get(keys), dtype=np.float32).reshape(-1, self.dim)
            held = (base, _Exact(keys, rows))
            self._exact_bases[kind] = held  # one assignment: concurrent readers may race
        return held[1]

    # search ---------------------------------------------------------------------------------
    def count(self, kinds: Iterable[int] | None = None) -> int:
        """How many vectors the indexes of ``kinds`` (default: all) hold: each base less its
        removed ids, plus its fresh vectors. Counted from the parts' sizes, not through
        ``_parts``, which reads a small base's vectors out for searching (every commit
        counts the vectors to decide whether its caches are stale)."""
        kinds = self.by_kind.keys() if kinds is None else kinds
        total = 0
        for kind in kinds:
            base = self.by_kind.get(int(kind))
            if base is None:
                continue
            fresh = self.fresh.get(int(kind))
            total += len(base) - self.removed.get(int(kind), _EMPTY_IDS).size
            total += 0 if fresh is None else int(fresh[0].size)
        return total

    def warm(self, probe: np.ndarray) -> None:
        """Search every base large enough for HNSW once with ``probe`` (one vector), so that
        the walk's shared start (the entry and its neighbourhood, which every query passes)
        is in the CPU caches again when a new version starts serving.

        A write's own memory traffic evicts them: on the 1M scale index a dense chunk
        search took 1.14 ms p50 warm, 1.46 ms first after a one-document write and 1.71 ms
        after touching 512 MB of other memory, no write (build/scratch/churn_dense.py), and
        a second query after the write was as fast as a warm one (after_write.py). Lucene's
        searchers are warmed the same way before a commit is published (Solr's
        ``newSearcher`` warming queries).
        """
        probe = np.ascontiguousarray(np.atleast_2d(probe), dtype=np.float32)
        for base in self.by_kind.values():
            if len(base) >= EXACT_BELOW:
                base.search(probe, WARM_K, threads=1)

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
        exclude = sets.unique(np.asarray(exclude, dtype=np.int64))
        srcs, dsts, sims = [], [], []
        parts = [p for kind in kinds for p in self._parts(int(kind))]
        for index, dropped in parts:
            if len(index) == 0 or m <= 0 or nq == 0:
                continue
            # The excluded ids the index still holds are filtered out of its matches, asked
            # for as ``_search_without`` does (``OVERSAMPLE`` more, then all of them for a
            # query short of m): asking every query for m + all of them lets a base that
            # deletes of older documents filled with removed ids (up to ``removal_limit``,
            # 1,024) be asked for that many more matches on every write (not measured: the
            # scale benchmark deletes what it inserted). One more for the query itself,
            # where the index holds it.
            skip = sets.union(exclude, dropped)
            held = skip[np.asarray(index.contains(skip), dtype=bool)] if skip.size else skip
            selves = bool(np.any(index.contains(query_ids)))
            keys, sim, valid = _search_without(index, queries, m + int(selves), held)
            valid &= keys != query_ids[:, None]
            k = keys.shape[1]
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
        parts = [p for kind in kinds for p in self._parts(int(kind))]
        for index, dropped in parts:
            if len(index) == 0 or k <= 0:
                continue
            keys, sims, valid = _search_without(index, queries, k, dropped)
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
