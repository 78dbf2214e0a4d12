"""Split / merge / fallback over clusters of sorted codes (:mod:`graphstrata.core.partition`).

:func:`engine` runs the three steps of the partition module docstring on the dirty roots;
:func:`assign_new` places new codes of an update; :func:`label_sorted` numbers the roots of
a build. All kernels work on positions in sorted (code, tiebreak, index) order and keep
their state in a :class:`~graphstrata.core._partition_types.State`. See
docs/architecture.md, "Kernels".
"""

from __future__ import annotations

import numpy as np
from numba import njit

from graphstrata.core._partition_search import _set_info, nearest, nearest_direct, nearest_scan
from graphstrata.core._partition_types import (
    ALIVE,
    BIG,
    CUT_SAME_CODE,
    CUT_SAME_ROOT,
    CUT_SAME_ROOT_SAME_CODE,
    DIRTY,
    FROZEN,
    MIXED,
    MODE_BOUNDS,
    MODE_RELAXED,
    MODE_REMAINDER,
    NO_ROOT,
    PART,
    REMAINDER_ITEM,
    CodeIndex,
    State,
)
from graphstrata.core.lsh import _popcount


@njit(cache=True, nogil=True, inline="always")
def _feasible(t: int, lo: int, hi: int) -> bool:
    # t items can be cut into parts of sizes in [lo, hi] iff ceil(t/hi) * lo <= t.
    if t == 0:
        return True
    p = (t + hi - 1) // hi
    return bool(p * lo <= t)


# --------------------------------------------------------------------------- splitting


@njit(cache=True, nogil=True)
def _cut_dp(cut: np.ndarray, t: int, lo: int, hi: int, mode: int) -> np.ndarray:
    # Minimum-cost segmentation of positions [0, t) into parts of length in [lo, hi];
    # cut[j] is the cost of a boundary before position j. In remainder mode exactly one
    # part has length in [1, lo - 1]. Returns part lengths in order.
    inf = np.inf
    dp0 = np.full(t + 1, inf, dtype=np.float64)
    dp1 = np.full(t + 1, inf, dtype=np.float64)
    prev0 = np.full(t + 1, -1, dtype=np.int64)
    prev1 = np.full(t + 1, -1, dtype=np.int64)
    from1 = np.zeros(t + 1, dtype=np.bool_)  # dp1[j] reached from dp1 (True) or dp0
    dp0[0] = 0.0
    hf = np.float64(hi)
    for j in range(1, t + 1):
        for length in range(lo, min(hi, j) + 1):
            i = j - length
            c = PART + (length / hf) ** 2 + (cut[i] if i > 0 else 0.0)
            if dp0[i] + c < dp0[j]:
                dp0[j] = dp0[i] + c
                prev0[j] = i
            if mode == MODE_REMAINDER and dp1[i] + c < dp1[j]:
                dp1[j] = dp1[i] + c
                prev1[j] = i
                from1[j] = True
        if mode == MODE_REMAINDER:
            for length in range(1, min(lo - 1, j) + 1):
                i = j - length
                c = PART + REMAINDER_ITEM * length + (cut[i] if i > 0 else 0.0)
                if dp0[i] + c < dp1[j]:
                    dp1[j] = dp0[i] + c
                    prev1[j] = i
                    from1[j] = False
    lengths = np.empty(t, dtype=np.int64)
    n = 0
    j = t
    state1 = mode == MODE_REMAINDER
    while j > 0:
        if state1:
            i = prev1[j]
            nxt_state = from1[j]
        else:
            i = prev0[j]
            nxt_state = False
        lengths[n] = j - i
        n += 1
        j = i
        state1 = nxt_state
    return lengths[:n][::-1].copy()


@njit(cache=True, nogil=True)
def _new_root(st: State) -> int:
    free, counters = st.free, st.counters
    if counters[0] > 0:
        counters[0] -= 1
        return free[counters[0]]
    u = counters[1]
    counters[1] += 1
    return u


@njit(cache=True, nogil=True)
def _split_region(
    region: np.ndarray, nreg: int, mode: int, s_min: int, s_max: int, ci: CodeIndex, st: State
) -> int:
    # Cut the union of roots region[:nreg] (in that order) into parts; returns the id of
    # the remainder part (remainder mode) or -1.
    ck = ci.ck
    root, nxt, head, tail, size, flags = st.root, st.nxt, st.head, st.tail, st.size, st.flags
    free, counters = st.free, st.counters
    total = 0
    for a in range(nreg):
        total += size[region[a]]
    seq = np.empty(total, dtype=np.int64)
    src = np.empty(total, dtype=np.int64)
    pos = 0
    for a in range(nreg):
        r = region[a]
        start = pos
        i = head[r]
        while i >= 0:
            seq[pos] = i
            pos += 1
            i = nxt[i]
        seq[start:pos] = np.sort(seq[start:pos])  # positions: (code, tiebreak, index)
        src[start:pos] = a
    cut = np.zeros(total + 1, dtype=np.float64)
    for j in range(1, total):
        same_code = ck[seq[j]] == ck[seq[j - 1]]
        if src[j] == src[j - 1]:
            cut[j] = CUT_SAME_ROOT_SAME_CODE if same_code else CUT_SAME_ROOT
        elif same_code:
            cut[j] = CUT_SAME_CODE
    if mode == MODE_RELAXED:
        p = (total + s_max - 1) // s_max
        lo = total // p
        hi = (total + p - 1) // p
    else:
        lo = s_min
        hi = s_max
    lengths = _cut_dp(cut, total, lo, hi, mode)
    for a in range(nreg):
        flags[region[a]] = DIRTY  # dead unless reused below; dirty: it lost its items
    rem = -1
    pos = 0
    for q in range(lengths.shape[0]):
        u = region[q] if q < nreg else _new_root(st)
        fl = ALIVE | DIRTY
        if mode == MODE_RELAXED:
            fl |= FROZEN
        flags[u] = fl
        n = lengths[q]
        size[u] = n
        head[u] = seq[pos]
        for j in range(pos, pos + n):
            it = seq[j]
            root[it] = u
            nxt[it] = seq[j + 1] if j + 1 < pos + n else -1
        tail[u] = seq[pos + n - 1]
        if n < lo:
            rem = u
        pos += n
    for a in range(lengths.shape[0], nreg):
        free[counters[0]] = region[a]
        counters[0] += 1
    last = -1
    for j in range(total):  # seq is grouped by code within each source root
        kk = ck[seq[j]]
        if kk != last:
            _set_info(kk, ci, st)
            last = kk
    return rem


@njit(cache=True, nogil=True)
def _fallback(
    r: int,
    ks: np.ndarray,
    nk: int,
    s_min: int,
    s_max: int,
    ci: CodeIndex,
    st: State,
    region: np.ndarray,
) -> None:
    # No root has room for r: absorb whole roots by Hamming distance from r's codes until
    # the total can be cut in bounds, then cut it. If everything is absorbed and the total
    # still cannot be cut (the input is infeasible), cut it into balanced parts <= s_max.
    ck, ucodes = ci.ck, ci.ucodes
    root, size, flags, counters = st.root, st.size, st.flags, st.counters
    g = ucodes.shape[0]
    m = root.shape[0]
    n_ids = counters[1]
    kdist = np.empty(g, dtype=np.int64)
    for k2 in range(g):
        dmin = np.int64(65)
        for a in range(nk):
            dd = _popcount(ucodes[k2] ^ ucodes[ks[a]])
            if dd < dmin:
                dmin = dd
        kdist[k2] = dmin
    rdist = np.full(n_ids, 65, dtype=np.int64)
    for i in range(m):
        u = root[i]
        if u >= 0 and kdist[ck[i]] < rdist[u]:
            rdist[u] = kdist[ck[i]]
    cand = np.empty(n_ids, dtype=np.int64)
    nc = 0
    for u in range(n_ids):
        if (flags[u] & ALIVE) and u != r:
            cand[nc] = u
            nc += 1
    keys = np.empty(nc, dtype=np.int64)
    for a in range(nc):
        keys[a] = rdist[cand[a]] * n_ids + cand[a]
    perm = np.argsort(keys)
    region[0] = r
    nreg = 1
    total = size[r]
    for a in range(nc):
        if _feasible(total, s_min, s_max):
            break
        u = cand[perm[a]]
        region[nreg] = u
        nreg += 1
        total += size[u]
    mode = MODE_BOUNDS if _feasible(total, s_min, s_max) else MODE_RELAXED
    _split_region(region, nreg, mode, s_min, s_max, ci, st)


# --------------------------------------------------------------------------- the engine


@njit(cache=True, nogil=True)
def _init_state(root: np.ndarray, n_roots0: int, dirty_init: np.ndarray, ci: CodeIndex) -> State:
    # Member lists in sorted order and the per-code info of every code. Only root ids
    # < n_roots0 are read before being written: np.empty keeps the rest of the capacity
    # untouched (no page faults for ids that are never used).
    m = root.shape[0]
    ucodes, ustart = ci.ucodes, ci.ustart
    g = ucodes.shape[0]
    cap = n_roots0 + m + 1
    head = np.empty(cap, dtype=np.int32)
    tail = np.empty(cap, dtype=np.int32)
    size = np.empty(cap, dtype=np.int32)
    flags = np.zeros(cap, dtype=np.uint8)
    free = np.empty(cap, dtype=np.int64)
    counters = np.array([0, n_roots0], dtype=np.int64)  # free-list length, next new id
    nxt = np.empty(m, dtype=np.int32)
    dmode = ci.direct.shape[0] > 0
    # direct mode: one slot per possible code (absent codes stay NO_ROOT)
    info = np.full(ci.direct.shape[0] if dmode else g, NO_ROOT, dtype=np.int32)
    head[:n_roots0] = -1
    size[:n_roots0] = 0
    for i in range(m):
        r = root[i]
        nxt[i] = -1
        if head[r] < 0:
            head[r] = i
        else:
            nxt[tail[r]] = i
        tail[r] = i
        size[r] += 1
    for r in range(n_roots0):
        if size[r] > 0:
            flags[r] = ALIVE | (DIRTY if dirty_init[r] else 0)
    for k in range(g):  # _set_info for every code, written out (runs are contiguous)
        u = -1
        for j in range(ustart[k], ustart[k + 1]):
            if u == -1:
                u = root[j]
            elif root[j] != u:
                u = MIXED
                break
        info[np.int64(ucodes[k]) if dmode else k] = u
    return State(root, nxt, head, tail, size, flags, free, counters, info)


@njit(cache=True, nogil=True)
def engine(
    root: np.ndarray, n_roots0: int, dirty_init: np.ndarray, s_min: int, s_max: int, ci: CodeIndex
) -> np.ndarray:
    """Split oversized and merge undersized dirty roots (steps 1-3 of the partition docs).

    Parameters
    ----------
    root : int32 array [m]
        Root (``0..n_roots0-1``) of each position in sorted order, rewritten in place
        (int32 halves the working set of the hot probes: ``m < 2**31``).
    n_roots0 : int
        Number of input roots.
    dirty_init : bool array [n_roots0]
        Roots to examine.
    s_min, s_max : int
        Segment size bounds.
    ci : CodeIndex
        The sorted codes.

    Returns
    -------
    bool array
        The dirty flag of every root id used (ids may exceed ``n_roots0``).
    """
    st = _init_state(root, n_roots0, dirty_init, ci)
    size, flags, counters = st.size, st.flags, st.counters
    region = np.empty(n_roots0 + root.shape[0] + 1, dtype=np.int64)

    # 1. split oversized dirty roots
    for r in range(n_roots0):
        if (flags[r] & DIRTY) and size[r] > s_max:
            region[0] = r
            mode = MODE_BOUNDS if _feasible(size[r], s_min, s_max) else MODE_REMAINDER
            _split_region(region, 1, mode, s_min, s_max, ci, st)

    # 2. merge small dirty roots into the nearest root with room
    n_ids = counters[1]
    queue = np.empty(n_ids, dtype=np.int64)
    nq = 0
    for r in range(n_ids):
        if (flags[r] & (ALIVE | DIRTY)) == (ALIVE | DIRTY) and size[r] < s_min:
            queue[nq] = r
            nq += 1
    ks = np.empty(max(s_max, s_min) + 1, dtype=np.int64)
    idx = np.empty(64, dtype=np.int64)
    dmode = ci.direct.shape[0] > 0
    # The merge loop runs once per merge and dominates the build: the fields are hoisted
    # into locals and the loop body stays inline (helpers taking the State tuple here, even
    # inline="always", measured ~1.5x slower on 200k x 16-bit codes).
    ck, nbits, ucodes, direct, ustart = ci.ck, ci.nbits, ci.ucodes, ci.direct, ci.ustart
    root, nxt, head, tail, info, free = st.root, st.nxt, st.head, st.tail, st.info, st.free
    for qi in range(nq):
        r = queue[qi]
        while (flags[r] & (ALIVE | FROZEN)) == ALIVE and size[r] < s_min:
            # r's codes, one entry per run of its member list: lists are concatenations
            # of code-sorted runs, so these are nearly always distinct; a rare repeat costs
            # a few extra probes, never a wrong answer
            nk = 0
            last = -1
            i = head[r]
            while i >= 0:
                if ck[i] != last:
                    last = ck[i]
                    ks[nk] = last
                    nk += 1
                i = nxt[i]
            if dmode:
                t = nearest_direct(
                    r, ks, nk, s_max - size[r], nbits, ucodes, direct, ustart, info, size,
                    root, flags, idx,
                )  # fmt: skip
                if t == -2:
                    t = nearest_scan(r, ks, nk, s_max - size[r], 0, ci, st)
            else:
                t = nearest(r, ks, nk, s_max - size[r], ci, st, idx)
            if t < 0:
                # 3. fallback: no root has room
                _fallback(r, ks, nk, s_min, s_max, ci, st, region)
                break
            # merge r into t; r dies (its id goes to the free list)
            i = head[r]
            while i >= 0:
                root[i] = t
                i = nxt[i]
            nxt[tail[t]] = head[r]
            tail[t] = tail[r]
            size[t] += size[r]
            flags[r] = DIRTY  # dead (not ALIVE), and its old membership is gone
            flags[t] |= DIRTY
            free[counters[0]] = r
            counters[0] += 1
            for a in range(nk):  # r's codes now lie in t (or are still mixed)
                kk = ks[a]
                sl = np.int64(ucodes[kk]) if dmode else kk
                if info[sl] == r:
                    info[sl] = t
                elif info[sl] == MIXED:
                    _set_info(kk, ci, st)
            r = t
    dirty = np.empty(counters[1], dtype=np.bool_)
    for u in range(counters[1]):
        dirty[u] = (flags[u] & DIRTY) != 0
    return dirty


@njit(cache=True, nogil=True)
def assign_new(
    new_k: np.ndarray, root: np.ndarray, static_size: np.ndarray, ci: CodeIndex
) -> np.ndarray:
    """Target root of each distinct new code of an update.

    A root already holding the code, else the Hamming-nearest root (the first met at the
    minimum distance).

    Parameters
    ----------
    new_k : int64 array [q]
        Distinct-code indices of the new items.
    root : int32 array [m]
        Root of each position in sorted order, -1 for new items.
    static_size : int32 array [n_roots]
        Items of each root before the update.
    ci : CodeIndex
        The sorted codes.

    Returns
    -------
    int64 array [q]
    """
    g = ci.ucodes.shape[0]
    m = root.shape[0]
    n_roots = static_size.shape[0]
    flags = np.zeros(n_roots, dtype=np.uint8)
    for u in range(n_roots):
        if static_size[u] > 0:
            flags[u] = ALIVE
    n_info = ci.direct.shape[0] if ci.direct.shape[0] > 0 else g
    info = np.full(n_info, NO_ROOT, dtype=np.int32)
    e = np.zeros(0, dtype=np.int32)
    e64 = np.zeros(0, dtype=np.int64)
    st = State(root, np.empty(m, dtype=np.int32), e, e, static_size, flags, e64, e64, info)
    for k in range(g):
        _set_info(k, ci, st)
    out = np.empty(new_k.shape[0], dtype=np.int64)
    ks = np.empty(1, dtype=np.int64)
    idx = np.empty(64, dtype=np.int64)
    for a in range(new_k.shape[0]):
        ks[0] = new_k[a]
        out[a] = nearest(-1, ks, 1, BIG, ci, st, idx)
    return out


@njit(cache=True, nogil=True)
def label_sorted(root: np.ndarray, order: np.ndarray, n_ids: int, start: int) -> np.ndarray:
    """Output ids ``start, start+1, ...`` in order of each root's first sorted position.

    Scattered back to item order in the same pass: returns int64 [m], by item.
    """
    lab = np.full(n_ids, -1, dtype=np.int64)
    out = np.empty(root.shape[0], dtype=np.int64)
    nxt_id = start
    for j in range(root.shape[0]):
        u = root[j]
        if lab[u] < 0:
            lab[u] = nxt_id
            nxt_id += 1
        out[order[j]] = lab[u]
    return out
