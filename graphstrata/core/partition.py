"""LSH codes -> bounded segments (EraRAG partitioning), full and incremental.

The problem
-----------
Items carry LSH codes. A *segment* is a set of items summarized together, so its size must
lie in ``[s_min, s_max]``: ``s_max`` bounds the LLM context of one summary (hard limit),
``s_min`` keeps the hierarchy shrinking. Items with equal codes belong together; an item
that must leave its code group should land in the Hamming-nearest group (the public
EraRAG code walks buckets in integer order instead, which is not a distance).

The algorithm (shared by :func:`partition` and :func:`repartition`)
--------------------------------------------------------------------
Clusters start as equal-code groups (build) or as the existing segments plus the new items
that joined them (insert/delete). Only *dirty* clusters (all of them, for a build) are
examined:

1. **Split.** A dirty cluster above ``s_max`` is cut into consecutive runs of its items
   ordered by (code, tiebreak, index). Cut positions come from a small dynamic program
   that, in this order of priority, avoids cutting inside an equal-code run, avoids
   cutting a previous cluster, uses as few parts as possible and balances their sizes
   (so one large equal-code group becomes ``ceil(n / s_max)`` balanced parts along
   ``tiebreak``). If no cut puts every part within bounds (e.g. 13 items for
   ``[8, 12]``), it cuts in-bound parts plus one *remainder* below ``s_min``, as small as
   possible (13 -> 12 + 1); the remainder then goes through step 2 like any small cluster.
2. **Merge.** A cluster below ``s_min`` joins the Hamming-nearest cluster *with room*
   (combined size <= ``s_max``). The distance between clusters is the minimum Hamming
   distance between their codes (single linkage); among clusters at the same distance
   the first met in a fixed enumeration order wins (the cluster's codes in ascending
   order, flipped bits in ascending order). It keeps merging until it reaches ``s_min``.
   Merges never exceed ``s_max``, so nothing has to be split again, and each merge
   removes a small cluster, so the loop terminates.
3. **Fallback.** When no cluster has room, the small cluster absorbs whole clusters in
   order of Hamming distance until the absorbed total can be cut into in-bound parts, and
   the dynamic program of step 1 cuts it (no remainder).

Guarantees
----------
* Every item is in exactly one segment; no segment exceeds ``s_max``.
* If the total ``m`` can be written as a sum of sizes in ``[s_min, s_max]`` (that is,
  ``ceil(m / s_max) * s_min <= m``), every segment produced or changed is within bounds.
* Otherwise (``m < s_min``, or e.g. ``m`` in 13..15 for ``[8, 12]``) the relaxation is:
  ``s_max`` stays hard and the whole input is cut into ``p = ceil(m / s_max)`` parts whose
  sizes differ by at most one (``floor(m / p)`` or ``ceil(m / p)``); ``s_min`` is relaxed.
* An equal-code group of at most ``s_max`` items is only cut by a fallback region (step 3)
  that cannot be cut in bounds along group boundaries.
* Deterministic: the output depends only on the inputs.

Cost: a counting sort (O(m + max code)) when codes are narrow, else an O(m log m) sort;
then each merge probes the Hamming ball around the small cluster's codes, radius by
radius, stopping at the first cluster with room. Codes up to ~22 bits are looked up in a
direct table; wider codes use a multi-index (the code cut into substrings of ~log2(#codes)
bits: two codes within distance ``s*(t+1) - 1`` agree up to ``t`` bits on one of ``s``
substrings). When a shell would cost more probes than there are distinct codes, a linear
scan over the distinct codes replaces it. The fallback is O(m) and rare.

The kernel is built for the code widths EraRAG uses (16-20 bits): 200k items at 16 bits take
about the time of ``np.unique``. Wide codes stay exact, but when they are nearly all
distinct (64 bits over clustered embeddings: nearest codes ~12 bits apart) every merge needs
a deep search, and the build approaches O(m * distinct codes): ~1 min for 200k x 64 bits.

Layout
------
This module holds the public wrappers (input checks, ids, change reports). The kernels
live in private modules: ``_partition_types`` (constants and the ``CodeIndex`` /
``State`` named tuples the kernels share), ``_partition_codes`` (sorting and code
index), ``_partition_search`` (Hamming-nearest root with room) and ``_partition_engine``
(split, merge, fallback). See docs/architecture.md, "Kernels".
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from graphstrata.core import sets
from graphstrata.core._partition_codes import SortedCodes, sort_codes
from graphstrata.core._partition_engine import assign_new, engine, label_sorted
from graphstrata.core.ids import contains
from graphstrata.core.lsh import _as_codes

__all__ = ["RepartitionResult", "partition", "repartition"]

# Kernel-level names kept importable from here (the tests call them directly).
_sort_codes = sort_codes
_assign_new = assign_new


class RepartitionResult(NamedTuple):
    """Result of :func:`repartition`.

    Attributes
    ----------
    segment : int64 array [m]
        Segment id of each item.
    changed : int64 array
        Output ids whose membership differs from the input (brand-new ids included), sorted.
    removed : int64 array
        Input ids (and ``touched`` ids) that no longer exist, sorted.
    """

    segment: np.ndarray
    changed: np.ndarray
    removed: np.ndarray


# --------------------------------------------------------------------------- public API


def _check_bounds(s_min: int, s_max: int) -> tuple[int, int]:
    s_min, s_max = int(s_min), int(s_max)
    if s_min < 1 or s_max < s_min:
        raise ValueError(f"need 1 <= s_min <= s_max, got s_min={s_min}, s_max={s_max}")
    return s_min, s_max


def _check_tiebreak(tiebreak: np.ndarray | None, m: int) -> np.ndarray | None:
    if tiebreak is None:
        return None
    tb = np.asarray(tiebreak)
    if tb.ndim != 1 or tb.shape[0] != m:
        raise ValueError(f"tiebreak must have shape ({m},), got {tb.shape}")
    if not (np.issubdtype(tb.dtype, np.floating) or np.issubdtype(tb.dtype, np.integer)):
        raise ValueError(f"tiebreak must be numeric, got {tb.dtype}")
    tb = tb.astype(np.float64)
    if not np.all(np.isfinite(tb)):
        raise ValueError("tiebreak must be finite")
    return tb


def _build(cs: SortedCodes, s_min: int, s_max: int, start: int) -> np.ndarray:
    g = cs.ucodes.shape[0]
    root = cs.code_index.ck.astype(np.int32)  # one root per distinct code
    dirty = engine(root, g, np.ones(g, dtype=np.bool_), s_min, s_max, cs.code_index)
    return label_sorted(root, cs.order, dirty.shape[0], start)


def partition(
    codes: np.ndarray, s_min: int, s_max: int, tiebreak: np.ndarray | None = None
) -> np.ndarray:
    """Cut items into segments of ``s_min..s_max`` items, grouping equal and near LSH codes.

    See the module docstring for the algorithm, the guarantees and the relaxation used when
    ``m`` itself cannot be cut within bounds.

    Parameters
    ----------
    codes : uint64 array [m]
        LSH code of each item.
    s_min, s_max : int
        Segment size bounds, ``1 <= s_min <= s_max``. ``s_max`` is never exceeded.
    tiebreak : float array [m], optional
        Order of items inside an equal-code group (e.g. a further projection), used to cut
        groups larger than ``s_max`` into coherent parts; default: item index.

    Returns
    -------
    int64 array [m]
        Segment id of each item, ``0..k-1``, numbered in order of each segment's first
        item in (code, tiebreak, index) order.
    """
    codes = _as_codes(codes, "codes")
    s_min, s_max = _check_bounds(s_min, s_max)
    m = codes.shape[0]
    tb = _check_tiebreak(tiebreak, m)
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    return _build(sort_codes(codes, tb), s_min, s_max, 0)


def _exact_changes(
    before: np.ndarray,
    old_ids: np.ndarray,
    after: np.ndarray,
    changed: np.ndarray,
    removed: np.ndarray,
) -> RepartitionResult:
    """Derive ``changed``/``removed`` from the assignments themselves (the contract), so an
    id whose members all moved away is always reported removed. ``old_ids`` are the
    distinct ids of ``before`` (-1 left out): the caller has them, and finding them again
    took 6.4 of the 86 ms of repartition in four writes at 100k chunks under
    line_profiler."""
    moved = before != after
    alive = sets.unique(after)
    old_of_moved = before[moved]
    old_of_moved = old_of_moved[(old_of_moved >= 0) & contains(alive, old_of_moved)]
    changed = sets.union(changed, sets.union(after[moved], old_of_moved)).astype(np.int64)
    gone = sets.difference(old_ids, alive)
    removed = sets.union(removed, gone).astype(np.int64)
    return RepartitionResult(after, changed, removed)


def repartition(
    codes: np.ndarray,
    segment: np.ndarray,
    s_min: int,
    s_max: int,
    tiebreak: np.ndarray | None = None,
    touched: np.ndarray | None = None,
) -> RepartitionResult:
    """Incremental partition after inserts and deletes (EraRAG Algorithm 3, bounded).

    Items with ``segment == -1`` are new. All new items with one code join the same
    existing segment: one that already holds the code (that of the code's first item in
    (code, tiebreak, index) order), else the Hamming-nearest segment by its items' codes.
    Only segments that gained items or are listed in ``touched`` are re-examined, with the
    split / merge / fallback steps of :func:`partition`; a segment that receives a merge or
    is absorbed by a fallback changes too. Segments never reached keep their membership
    and id, even if they were out of bounds on input.

    Parameters
    ----------
    codes : uint64 array [m]
        LSH codes of all live items (existing and new).
    segment : int64 array [m]
        Current segment id of each item (any non-negative ids), -1 for new items.
    s_min, s_max : int
        Segment size bounds, as in :func:`partition`.
    tiebreak : float array [m], optional
        Order inside equal-code groups, as in :func:`partition`.
    touched : int64 array, optional
        Segment ids that lost members (deletes). Ids that no longer hold any item are
        reported in ``removed``.

    Returns
    -------
    RepartitionResult
        ``segment`` (int64 [m]): a surviving segment keeps its id (the old id it shares
        most items with); new segments get ids above the largest input or touched id, in
        order of their first item in (code, tiebreak, index) order. ``changed``: output
        ids whose membership differs from the input (new ids included). ``removed``: input
        or touched ids that no longer exist. With no existing segment the result equals
        :func:`partition` (shifted above the touched ids, if any) with every id in
        ``changed``.
    """
    codes = _as_codes(codes, "codes")
    s_min, s_max = _check_bounds(s_min, s_max)
    m = codes.shape[0]
    seg = np.asarray(segment)
    if seg.ndim != 1 or seg.shape[0] != m:
        raise ValueError(f"segment must have shape ({m},), got {seg.shape}")
    if m and not np.issubdtype(seg.dtype, np.integer):
        raise ValueError(f"segment must be integer, got {seg.dtype}")
    seg = seg.astype(np.int64)
    if m and seg.min() < -1:
        raise ValueError("segment ids must be >= 0, or -1 for new items")
    tb = _check_tiebreak(tiebreak, m)
    if touched is None:
        tch = np.zeros(0, dtype=np.int64)
    else:
        tch = np.asarray(touched)
        if tch.ndim != 1 or (tch.size and not np.issubdtype(tch.dtype, np.integer)):
            raise ValueError("touched must be a 1-d integer array")
        tch = sets.unique(tch.astype(np.int64))
        if tch.size and tch[0] < 0:
            raise ValueError("touched ids must be >= 0")
    old_ids, old_root = sets.unique_inverse(seg)
    old_root = old_root.astype(np.int64).reshape(-1)
    if old_ids.size and old_ids[0] == -1:
        old_ids = old_ids[1:]
        old_root -= 1  # new items -> -1
    n_old = old_ids.shape[0]
    missing = sets.difference(tch, old_ids).astype(np.int64)  # touched ids with no item left
    empty = np.zeros(0, dtype=np.int64)
    if m == 0:
        return RepartitionResult(empty, empty, missing)
    id_base = max(int(old_ids[-1]) if n_old else -1, int(tch[-1]) if tch.size else -1) + 1
    cs = sort_codes(codes, tb)
    if n_old == 0:  # build = insert into empty: identical to partition()
        out = _build(cs, s_min, s_max, id_base)
        return RepartitionResult(out, sets.unique(out), missing)

    item_root = old_root.copy()
    is_new = item_root < 0
    static_size = np.bincount(old_root[~is_new], minlength=n_old).astype(np.int64)
    dirty0 = np.zeros(n_old, dtype=np.bool_)
    dirty0[np.searchsorted(old_ids, sets.intersection(tch, old_ids))] = True
    if is_new.any():
        new_k = sets.unique(cs.code_k[is_new])
        target = assign_new(
            new_k, item_root[cs.order].astype(np.int32), static_size.astype(np.int32), cs.code_index
        )
        lut = np.full(cs.ucodes.shape[0], -1, dtype=np.int64)
        lut[new_k] = target
        item_root[is_new] = lut[cs.code_k[is_new]]
        dirty0[target] = True
    root = item_root[cs.order].astype(np.int32)
    dirty = engine(root, n_old, dirty0, s_min, s_max, cs.code_index)
    item_root[cs.order] = root
    res = _relabel(item_root, root, dirty, old_root, old_ids, static_size, id_base, missing)
    return _exact_changes(seg, old_ids, res.segment, res.changed, res.removed)


def _relabel(
    item_root: np.ndarray,
    root_sorted: np.ndarray,
    dirty: np.ndarray,
    old_root: np.ndarray,
    old_ids: np.ndarray,
    old_size: np.ndarray,
    id_base: int,
    missing: np.ndarray,
) -> RepartitionResult:
    # Roots never dirtied are exactly their old segment (root id == old compact index).
    # Each dirty root claims the old id it shares most items with (greedy, largest overlap
    # first; ties -> lower old id, then lower root); the rest get fresh ids.
    n_old = old_ids.shape[0]
    n_ids = dirty.shape[0]
    new_size = np.bincount(item_root, minlength=n_ids)
    label = np.full(n_ids, -1, dtype=np.int64)
    clean = np.flatnonzero(~dirty[:n_old] & (new_size[:n_old] > 0))
    label[clean] = clean
    claimed = np.zeros(n_old, dtype=np.bool_)
    claimed[clean] = True
    in_dirty = dirty[item_root]
    sel = in_dirty & (old_root >= 0)
    pair = item_root[sel] * n_old + old_root[sel]
    keys, counts = np.unique(pair, return_counts=True)
    p_root, p_old = keys // n_old, keys % n_old
    overlap = np.zeros(n_ids, dtype=np.int64)
    for j in np.lexsort((p_root, p_old, -counts)):
        u, o = p_root[j], p_old[j]
        if label[u] < 0 and not claimed[o]:
            label[u] = o
            claimed[o] = True
            overlap[u] = counts[j]
    roots, first = sets.unique_first(root_sorted)  # first sorted position
    unlabelled = label[roots] < 0
    fresh = roots[unlabelled][np.argsort(first[unlabelled], kind="stable")]
    out_label = label.copy()
    is_old = out_label >= 0
    out_label[is_old] = old_ids[out_label[is_old]]
    out_label[fresh] = id_base + np.arange(fresh.shape[0], dtype=np.int64)
    segment = out_label[item_root]
    dirty_roots = roots[dirty[roots]]
    lab = label[dirty_roots]
    same = (lab >= 0) & (overlap[dirty_roots] == new_size[dirty_roots])
    same[same] &= new_size[dirty_roots[same]] == old_size[lab[same]]
    changed = np.sort(out_label[dirty_roots[~same]]).astype(np.int64)
    removed = sets.union(old_ids[~claimed], missing).astype(np.int64)
    return RepartitionResult(segment.astype(np.int64), changed, removed)
