"""Vector search over the embedded kinds with usearch (one HNSW index per node kind).

The usearch indexes are a cache of the vector segments: they can always be rebuilt from the
store. Updates are copy-on-write, so readers of the previous version keep a consistent index
while a writer adds and removes the changed nodes only. A kind is a *base* HNSW index shared
by versions, plus the version's own *fresh* vectors (added since the base, searched exactly)
and the *dead* ids of the base (removed since it was made: filtered out of its results): a
write copies only the fresh part, O(change), not the whole index. When the fresh vectors
outgrow the ``vector_fresh`` policy (``MaintenanceConfig``), they are merged into a new
base (usearch's ``copy`` of the base and their inserts: one O(n) copy, amortized over the
writes before it); the dead ids stay in it, still filtered. When more of a base is dead
than the ``vector_removed`` policy allows, the base is made anew from its live and fresh
vectors.

No usearch index is ever removed from (``Index.remove``): usearch 2.25.3 reuses a removed
slot for a later insert, and in an index that was copied or loaded that reuse loses keys
and brings removed ones back into results (``_merged``). Dead vectors leave a base only
when it is made anew, from vectors, by inserts or from their k-NN graph.

The cache file of a kind is a base, and the version whose vectors that base holds: a reader
maps it and takes the vectors written since as fresh, the base's keys without a live vector
as dead, and so reaches the writer's state (merging or remaking the base, as the writer did,
when they pass the bounds). A commit writes the base of a kind that was rebuilt since its
file (``unsaved``) once the kind's rows written since reach the stale share
(``engine.read_caches``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from usearch.index import Index as UsearchIndex

from graphstrata.core import sets
from graphstrata.core.ann import has_removed_slots, hnsw_index, match_arrays
from graphstrata.core.ids import contains as sorted_contains
from graphstrata.core.knn import best_per_query
from graphstrata.engine.config import SearchConfig
from graphstrata.engine.exact_vectors import ExactVectors, read_out, widened
from graphstrata.engine.graph_bases import NeighbourLists, graph_base
from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.store import VectorTable
from graphstrata.engine.store.caches import CacheFile

#: The HNSW query-time expansion of a VectorIndex made without one (the config's default).
DEFAULT_EXPANSION = SearchConfig.expansion_search
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
#: Matches a warming search asks each base for (``VectorIndex.warm``).
WARM_K = 10

_EMPTY_IDS = np.zeros(0, np.int64)


def _search_without(
    index: Any, queries: np.ndarray, k: int, dropped: np.ndarray, policy: MaintenanceConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``match_arrays`` of the top matches of ``index`` with the ``dropped`` ids (sorted)
    marked invalid, at least k valid per query where the index holds that many others
    (``policy.vector_oversample``, ``vector_widen``): evenly spread dead ids leave a top-k
    search ~k/8 dead matches to skip, within the oversample for the engine's vector k (10
    to 50: ``entry_top_k``, ``top_k``); clustered ones (a rewritten summary's old versions)
    are found by asking again."""
    nq, n = queries.shape[0], len(index)
    exact = n < policy.vector_exact_below
    kk = min(k + min(dropped.size, policy.vector_oversample), n)
    # One query (a retrieval) is searched on the calling thread: usearch's pool (threads=0)
    # took 1.5-2.7 ms per query against 1.1 ms on the 100k-chunk T index, beside a busy core
    # (a one-off script, not kept), and a server's concurrent requests each keep
    # their own thread. A write's batch of new nodes uses every core.
    threads = 1 if nq == 1 else 0
    keys, sims, valid = match_arrays(
        index.search(queries, kk, exact=exact, threads=threads), nq, kk
    )
    if not dropped.size:
        return keys, sims, valid
    # Membership by binary search or a bitmap: a base may hold up to 1/8 dead ids.
    valid &= ~sorted_contains(dropped, keys)
    full = min(k + dropped.size, n)
    short = np.flatnonzero(valid.sum(axis=1) < min(k, kk))
    while short.size and kk < full:  # those queries' top matches were mostly dead ids
        kk = min(full, policy.vector_widen * kk)
        k2, s2, v2 = match_arrays(
            index.search(queries[short], kk, exact=exact, threads=threads),
            short.size,
            kk,
        )
        v2 &= ~sorted_contains(dropped, k2)
        keys, sims, valid = widened(keys, kk), widened(sims, kk), widened(valid, kk)
        keys[short], sims[short], valid[short] = (
            widened(k2, kk),
            widened(s2, kk),
            widened(v2, kk),
        )
        short = short[v2.sum(axis=1) < min(k, kk)]
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


def _new_index(dim: int, dtype: str, expansion_search: int) -> UsearchIndex:
    return hnsw_index(dim, dtype, expansion_search)


def _new_base(
    ids: np.ndarray,
    matrix: np.ndarray,
    dtype: str,
    expansion_search: int,
    graph_build_min: int,
    neighbours: NeighbourLists | None = None,
) -> UsearchIndex:
    """An index of these vectors: made from their k-NN graph (seeded from ``neighbours``)
    when they are at least ``graph_build_min`` (``MaintenanceConfig.vector_graph_build_min``,
    and usearch's layout is the one written), else by inserts."""
    if ids.size >= graph_build_min:
        index = graph_base(ids, matrix, dtype, expansion_search, neighbours)
        if index is not None:
            return index
    index = _new_index(matrix.shape[1], dtype, expansion_search)
    if ids.size:
        index.add(ids, matrix, threads=ADD_THREADS)
    return index


class VectorIndex:
    """usearch indexes keyed by node kind; vectors are L2-normalized so inner product = cosine.

    ``maintenance`` holds the fold policies of the fresh and dead parts and the search
    tunables (``MaintenanceConfig``: ``vector_*``; the defaults when None).
    """

    def __init__(
        self,
        dim: int,
        dtype: str = "f32",
        expansion_search: int = DEFAULT_EXPANSION,
        maintenance: MaintenanceConfig | None = None,
    ):
        self.dim = dim
        self.dtype = dtype
        self.expansion_search = expansion_search
        self.maintenance = maintenance if maintenance is not None else MaintenanceConfig()
        #: Base HNSW index per kind (never changed once a version shares it).
        self.by_kind: dict[int, UsearchIndex] = {}
        #: Per kind: vectors added since the base (ids, float32 rows), this version's own.
        self.fresh: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        #: Per kind: sorted ids removed from the base since it was built.
        self.removed: dict[int, np.ndarray] = {}
        #: Per kind: a base below ``vector_exact_below`` vectors and its vectors in one matrix
        #: (``_small_base``), carried to the next versions while they share the base.
        self._exact_bases: dict[int, tuple[UsearchIndex, ExactVectors]] = {}
        #: Per kind: the version whose vectors the base holds (those written later are fresh).
        self.base_versions: dict[int, int] = {}
        #: Per kind: the base its cache file holds (``unsaved`` compares by identity).
        self.cached: dict[int, UsearchIndex] = {}
        #: Per kind: the last base made anew from its vectors (``_remade``), which a reader
        #: of an older file would make again (``made_unsaved``).
        self.made: dict[int, UsearchIndex] = {}

    # construction ---------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        vectors: VectorTable,
        dtype: str = "f32",
        expansion_search: int = DEFAULT_EXPANSION,
        maintenance: MaintenanceConfig | None = None,
    ) -> VectorIndex:
        """Index every live vector of a version from scratch (no base is in a cache file)."""
        vi = cls(vectors.dim, dtype, expansion_search, maintenance)
        graph_min = vi.maintenance.vector_graph_build_min
        kinds = [int(k) for k in sets.unique(vectors.kinds)]
        vi.base_versions = dict.fromkeys(kinds, vectors.version)
        sizes = np.bincount(
            np.asarray(vectors.kinds, np.int64), minlength=max(kinds, default=0) + 1
        )

        def add(j: int) -> None:
            ids, mat = vectors.of_kind(kinds[j])
            mat = np.ascontiguousarray(mat, dtype=np.float32)
            vi.by_kind[kinds[j]] = _new_base(ids, mat, dtype, expansion_search, graph_min)

        _for_each_kind(add, len(kinds), True, [sizes[kind] >= graph_min for kind in kinds])
        return vi

    @classmethod
    def restore(
        cls,
        files: dict[int, CacheFile],
        vectors: VectorTable,
        dtype: str = "f32",
        expansion_search: int = DEFAULT_EXPANSION,
        maintenance: MaintenanceConfig | None = None,
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
        dtype, expansion_search, maintenance:
            As for ``build``.

        Raises
        ------
        ValueError
            A file is not a usearch index.
        """
        vi = cls(vectors.dim, dtype, expansion_search, maintenance)
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
        maintenance: MaintenanceConfig | None = None,
    ) -> VectorIndex:
        """As :meth:`restore`, from the one ``.npz`` of every kind that indexes written
        before the per-kind files keep until their cache is next written (read into memory:
        an ``.npz`` member cannot be mapped). No kind counts as saved: the next commit writes
        each into its own file."""
        vi = cls(vectors.dim, dtype, expansion_search, maintenance)
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

    def made_unsaved(self) -> list[int]:
        """Unsaved kinds whose base was made anew from its vectors and is searched by HNSW
        (at least ``vector_exact_below`` vectors): a reader of the older file would make it again
        at its open (21 s for the 100,691 chunks of the 100k-chunk scale index, 1.1 s for
        its 9,850 summaries; issue 17), so a commit writes it at once (its bytes: once per
        ``vector_removed`` dead vectors)."""
        exact_below = self.maintenance.vector_exact_below
        return [
            k
            for k in self.unsaved()
            if self.made.get(k) is self.by_kind[k] and len(self.by_kind[k]) >= exact_below
        ]

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
        """Write every kind whole, its fresh vectors inserted, as of ``version`` (a
        compaction: a reader then has only the dead ids to filter, which every open finds
        from the live vectors).

        Dead vectors stay in the file (at most ``vector_removed`` of a base: past it the
        writer has made the base anew): dropping them would make every base with one anew,
        minutes for a million vectors, where a compaction otherwise copies.

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
            self._merged(kind)[0].save(str(path))
            out[kind] = CacheFile(path, version)
        return out

    def mark_saved(self, kinds: Iterable[int]) -> None:
        """Record that the cache files of ``kinds`` were committed (for ``unsaved``); one
        assignment, as readers may share this object."""
        self.cached = {**self.cached, **{int(k): self.by_kind[int(k)] for k in kinds}}

    def _merged(self, kind: int) -> tuple[UsearchIndex, np.ndarray]:
        """``kind``'s base with its fresh vectors inserted into a copy of it (the base itself
        when there are none), and the dead ids it still holds.

        usearch 2.25.3 reuses the slot of a removed vector for a later insert, and in an
        index that was copied or loaded that reuse corrupts it: 6,000 f16 vectors copied,
        64 removed and 200 added, ten times over, ended with ``len`` 54 above the live
        count, 1,421 live keys neither ``contains``-ed nor ``get``-able and removed keys in
        search results, from the third such merge on (a one-off script, not kept);
        loading the index from its bytes instead crashed the process (``free(): corrupted
        unsorted chunks``, 1,024 removed a round, a one-off script, not kept). 2.26.6
        is exact in both, but crashes a later ``import onnxruntime`` (setup.cfg). Inserts
        alone into a copy stayed exact through the same ten merges, so no usearch index is
        ever removed from: the dead ids stay in the copy and filtered. A base that holds
        removed slots all the same (a cache file written before this rule) or holds one of
        the fresh ids already (a rewritten vector keeps its node id) is made anew instead.
        """
        base = self.by_kind[kind]
        dead = self.removed.get(kind, _EMPTY_IDS)
        fresh = self.fresh.get(kind)
        if fresh is None or not fresh[0].size:
            return base, dead
        if has_removed_slots(base) or np.asarray(base.contains(fresh[0]), dtype=bool).any():
            return self._remade(kind), _EMPTY_IDS
        merged = base.copy()
        merged.add(fresh[0], fresh[1], threads=ADD_THREADS)
        return merged, dead

    def _remade(self, kind: int) -> UsearchIndex:
        """``kind``'s base made anew from its live vectors and its fresh ones (``_new_base``:
        inserts, or the k-NN graph of at least ``vector_graph_build_min``), holding no dead
        id."""
        base = self.by_kind[kind]
        held = self._small_base(kind, base) if len(base) else None
        ids, rows = (held.ids, held.rows) if isinstance(held, ExactVectors) else read_out(base)
        dead = self.removed.get(kind, _EMPTY_IDS)
        if dead.size:
            keep = ~sorted_contains(dead, ids)
            ids, rows = ids[keep], rows[keep]
        fresh = self.fresh.get(kind)
        if fresh is not None and fresh[0].size:
            ids, rows = np.concatenate([ids, fresh[0]]), np.concatenate([rows, fresh[1]])
        made = _new_base(
            ids,
            np.ascontiguousarray(rows, np.float32),
            self.dtype,
            self.expansion_search,
            self.maintenance.vector_graph_build_min,
        )
        self.made[kind] = made
        return made

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
        out = VectorIndex(self.dim, self.dtype, self.expansion_search, self.maintenance)
        out.by_kind, out.fresh, out.removed, out._exact_bases = (
            dict(self.by_kind),
            dict(self.fresh),
            dict(self.removed),
            dict(self._exact_bases),
        )
        out.base_versions, out.cached = dict(self.base_versions), dict(self.cached)
        out.made = dict(self.made)
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
        graph_min = self.maintenance.vector_graph_build_min
        alone = [kind not in self.by_kind and per_kind[kind] >= graph_min for kind in kinds]
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
            index = _new_base(
                add_ids,
                matrix,
                self.dtype,
                self.expansion_search,
                self.maintenance.vector_graph_build_min,
                neighbours,
            )
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
        self.fresh[kind], self.removed[kind] = (ids, rows), removed
        policy = self.maintenance
        if policy.vector_removed.should_fold(removed.size, len(base)):
            index, dead = self._remade(kind), _EMPTY_IDS
        elif policy.vector_fresh.should_fold(ids.size, len(base)):
            index, dead = self._merged(kind)
        else:
            return
        self.by_kind[kind], self.base_versions[kind] = index, version
        self.fresh.pop(kind)
        self.removed[kind] = dead

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
            out &= ~sorted_contains(self.removed.get(kind, _EMPTY_IDS), ids)
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
            parts.append((ExactVectors(*fresh), _EMPTY_IDS))
        return parts

    def _small_base(self, kind: int, base: UsearchIndex) -> UsearchIndex | ExactVectors:
        """``base``, or below ``vector_exact_below`` vectors the same vectors searched by one
        matrix product: usearch's exact search took 3.0 ms for 13 queries over 2,660
        vectors where the product and selection took 0.7 ms (a microbenchmark), and every
        write's semantic edges search the attributes' kind (issue 17). The matrix is read
        out of the base once, when a version first searches it. An f16 base's rows are its
        stored values widened to float32, so the product scores what usearch's exact search
        scores (at 100k chunks its 2.9k attributes took 4.3 ms a write's search by usearch,
        a one-off script, not kept)."""
        if not 0 < len(base) < self.maintenance.vector_exact_below:
            return base
        held = self._exact_bases.get(kind)
        if held is None or held[0] is not base:
            held = (base, ExactVectors(*read_out(base)))
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
        after touching 512 MB of other memory, no write (a one-off script, not kept), and
        a second query after the write was as fast as a warm one (after_write.py). Lucene's
        searchers are warmed the same way before a commit is published (Solr's
        ``newSearcher`` warming queries).
        """
        probe = np.ascontiguousarray(np.atleast_2d(probe), dtype=np.float32)
        for base in self.by_kind.values():
            if len(base) >= self.maintenance.vector_exact_below:
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
        exactly below ``vector_exact_below`` vectors, by HNSW above.

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
            # The excluded ids the index still holds are filtered out of its matches with
            # its dead ids, asked for as ``_search_without`` does (``vector_oversample`` more,
            # then ``vector_widen`` times as many for a query short of m): asking every query
            # for m + all of them would ask a base holding up to an eighth of dead ids
            # (``vector_removed``) for that many more matches on every write. The dead ids
            # are the index's own; only the excluded ones are looked up. One more match for
            # the query itself, where the index holds it.
            mine = (
                exclude[np.asarray(index.contains(exclude), dtype=bool)]
                if exclude.size
                else exclude
            )
            held = sets.union(dropped, mine) if mine.size else dropped
            selves = bool(np.any(index.contains(query_ids)))
            keys, sim, valid = _search_without(
                index, queries, m + int(selves), held, self.maintenance
            )
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
            keys, sims, valid = _search_without(index, queries, k, dropped, self.maintenance)
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
