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
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from graphstrata.core.lsh import _as_codes, _popcount

__all__ = ["RepartitionResult", "partition", "repartition"]

# Dynamic-program costs, lexicographic by magnitude (see module docstring).
_CUT_SAME_ROOT_SAME_CODE = 1e9  # splitting an equal-code run inside one cluster
_CUT_SAME_ROOT = 1e6  # splitting a cluster between two codes
_REMAINDER_ITEM = 1e3  # each item pushed out as a remainder (infeasible splits only)
_CUT_SAME_CODE = 1e2  # cutting between two clusters that share a code
_PART = 10.0  # each part (fewer, larger parts first)
# balance: (size / hi) ** 2 per part, at most 1

_MODE_BOUNDS = 0  # parts in [s_min, s_max]
_MODE_REMAINDER = 1  # parts in [s_min, s_max] plus exactly one part in [1, s_min - 1]
_MODE_RELAXED = 2  # parts of floor/ceil(T / ceil(T / s_max)): the input is infeasible

# info[k] per distinct code k: the root holding all items of the code, else one of these.
_MIXED = -1  # items of this code lie in several roots
_NO_ROOT = -2  # no item of this code has a root (new items before assignment)
_BIG = 1 << 62

_ALIVE = 1  # flags bits
_DIRTY = 2
_FROZEN = 4  # produced by the relaxed split: never re-examined

_DIRECT_MAX_BITS = 22  # direct code -> index table up to 4M entries (16 MB)


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


# --------------------------------------------------------------------------- code index


@njit(cache=True)
def _counting_sort(codes: np.ndarray, max_code: np.int64):
    # Stable counting sort over a narrow code range -> order, distinct codes, run starts,
    # distinct-code index per item.
    m = codes.shape[0]
    cnt = np.zeros(max_code + 2, dtype=np.int64)
    for i in range(m):
        cnt[np.int64(codes[i]) + 1] += 1
    g = 0
    for c in range(max_code + 1):
        if cnt[c + 1] > 0:
            g += 1
    ucodes = np.empty(g, dtype=np.uint64)
    ustart = np.empty(g + 1, dtype=np.int64)
    k = 0
    acc = 0
    for c in range(max_code + 1):
        n = cnt[c + 1]
        if n > 0:
            ucodes[k] = np.uint64(c)
            ustart[k] = acc
            cnt[c + 1] = k  # reuse as code -> k
            acc += n
            k += 1
    ustart[g] = acc
    pos = ustart[:g].copy()
    order = np.empty(m, dtype=np.int64)
    code_k = np.empty(m, dtype=np.int64)
    for i in range(m):
        kk = cnt[np.int64(codes[i]) + 1]
        code_k[i] = kk
        order[pos[kk]] = i
        pos[kk] += 1
    return order, code_k, ucodes, ustart


@njit(cache=True)
def _runs_from_sorted(codes: np.ndarray, order: np.ndarray):
    # order sorts codes (not stably): restore index order inside each run and derive
    # distinct codes, run starts and each item's distinct-code index.
    m = order.shape[0]
    g = 0
    for j in range(m):
        if j == 0 or codes[order[j]] != codes[order[j - 1]]:
            g += 1
    ucodes = np.empty(g, dtype=np.uint64)
    ustart = np.empty(g + 1, dtype=np.int64)
    code_k = np.empty(m, dtype=np.int64)
    k = -1
    for j in range(m):
        c = codes[order[j]]
        if j == 0 or c != codes[order[j - 1]]:
            k += 1
            ucodes[k] = c
            ustart[k] = j
        code_k[order[j]] = k
    ustart[g] = m
    for k in range(g):
        a, b = ustart[k], ustart[k + 1]
        if b - a > 1:
            order[a:b] = np.sort(order[a:b])
    return code_k, ucodes, ustart


@njit(cache=True)
def _tiebreak_runs(order: np.ndarray, ustart: np.ndarray, tiebreak: np.ndarray) -> None:
    # Inside each equal-code run, order items by tiebreak (stable: index breaks ties).
    for k in range(ustart.shape[0] - 1):
        a, b = ustart[k], ustart[k + 1]
        if b - a > 1:
            run = order[a:b].copy()
            keys = np.empty(b - a, dtype=np.float64)
            for j in range(b - a):
                keys[j] = tiebreak[run[j]]
            perm = np.argsort(keys, kind="mergesort")
            for j in range(b - a):
                order[a + j] = run[perm[j]]


@njit(cache=True)
def _build_substring_index(ucodes: np.ndarray, widths: np.ndarray, shifts: np.ndarray):
    # For each substring j: the distinct codes bucketed by their substring value
    # (bitems[j, bstart[j, v]:bstart[j, v + 1]]).
    ns = widths.shape[0]
    g = ucodes.shape[0]
    wmax = 0
    for j in range(ns):
        wmax = max(wmax, widths[j])
    bstart = np.zeros((ns, (1 << wmax) + 1), dtype=np.int32)
    bitems = np.empty((ns, g), dtype=np.int32)
    for j in range(ns):
        mask = (np.uint64(1) << np.uint64(widths[j])) - np.uint64(1)
        sh = np.uint64(shifts[j])
        for k in range(g):
            v = np.int64((ucodes[k] >> sh) & mask)
            bstart[j, v + 1] += 1
        for v in range(1 << wmax):
            bstart[j, v + 1] += bstart[j, v]
        fill = bstart[j, :].copy()
        for k in range(g):
            v = np.int64((ucodes[k] >> sh) & mask)
            bitems[j, fill[v]] = k
            fill[v] += 1
    return bstart, bitems


class _Codes(NamedTuple):
    order: np.ndarray  # items sorted by (code, tiebreak, index): position -> item
    code_k: np.ndarray  # distinct-code index of each item
    ck: np.ndarray  # distinct-code index of each position (non-decreasing)
    ucodes: np.ndarray  # distinct codes, ascending
    ustart: np.ndarray  # run of code k is order[ustart[k]:ustart[k+1]]
    nbits: int  # bit length of the widest code
    direct: np.ndarray  # int32 [2**nbits]: code -> k or -1 (direct mode), else empty
    widths: np.ndarray  # int64 [s]: substring widths (multi-index mode), else empty
    shifts: np.ndarray  # int64 [s]
    bstart: np.ndarray  # int32 [s, 2**wmax + 1]
    bitems: np.ndarray  # int32 [s, g]

    def as_tuple(self) -> tuple:
        # What the kernels take (a heterogeneous tuple is one Numba argument). The kernels
        # work on positions in sorted order, not on item ids: the items of one code are
        # then contiguous, which keeps the member walks cache-friendly.
        return (
            self.ck,
            self.ucodes,
            self.ustart,
            self.nbits,
            self.direct,
            self.widths,
            self.shifts,
            self.bstart,
            self.bitems,
        )


def _sort_codes(codes: np.ndarray, tiebreak: np.ndarray | None) -> _Codes:
    m = codes.shape[0]
    max_code = int(codes.max())
    nbits = int(np.bitwise_or.reduce(codes)).bit_length()
    if max_code < 2 * m + 65536:  # counting sort: O(m + max_code) beats O(m log m)
        order, code_k, ucodes, ustart = _counting_sort(codes, np.int64(max_code))
    else:
        order = np.argsort(codes).astype(np.int64)
        code_k, ucodes, ustart = _runs_from_sorted(codes, order)
    if tiebreak is not None:
        _tiebreak_runs(order, ustart, tiebreak)
    ck = np.repeat(np.arange(ucodes.shape[0], dtype=np.int64), np.diff(ustart))
    g = ucodes.shape[0]
    lg = max(1, math.ceil(math.log2(g + 1)))
    e32 = np.zeros(0, dtype=np.int32)
    e64 = np.zeros(0, dtype=np.int64)
    if nbits <= min(max(16, lg + 3), _DIRECT_MAX_BITS):
        direct = np.full(1 << nbits, -1, dtype=np.int32)
        direct[ucodes.astype(np.int64)] = np.arange(g, dtype=np.int32)
        return _Codes(
            order, code_k, ck, ucodes, ustart, nbits, direct, e64, e64,
            np.zeros((0, 0), np.int32), np.zeros((0, 0), np.int32),
        )  # fmt: skip
    # multi-index: substrings of about log2(g) + 1 bits keep buckets near one code each
    w = min(max(lg + 1, 8), 20)
    ns = math.ceil(nbits / w)
    widths = np.array([nbits // ns + (1 if j < nbits % ns else 0) for j in range(ns)])
    shifts = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.int64)
    bstart, bitems = _build_substring_index(ucodes, widths.astype(np.int64), shifts)
    return _Codes(
        order, code_k, ck, ucodes, ustart, nbits, e32, widths.astype(np.int64), shifts,
        bstart, bitems,
    )  # fmt: skip


# --------------------------------------------------------------------------- helpers


@njit(cache=True, inline="always")
def _feasible(t: np.int64, lo: np.int64, hi: np.int64) -> bool:
    # t items can be cut into parts of sizes in [lo, hi] iff ceil(t/hi) * lo <= t.
    if t == 0:
        return True
    p = (t + hi - 1) // hi
    return p * lo <= t


@njit(cache=True)
def _n_choose(n: np.int64, d: np.int64, cap: np.int64) -> np.int64:
    # C(n, d) saturated at cap (only compared against a work budget).
    if d < 0 or d > n:
        return np.int64(0)
    r = np.int64(1)
    for i in range(d):
        r = r * (n - i) // (i + 1)
        if r > cap:
            return cap
    return r


@njit(cache=True)
def _slot(k, cs) -> np.int64:
    # Where code index k keeps its info: at the code itself in direct mode (so a probe is
    # one load: info[code ^ mask]), at k in multi-index mode.
    if cs[4].shape[0] > 0:
        return np.int64(cs[1][k])
    return np.int64(k)


@njit(cache=True)
def _set_info(k, cs, st) -> None:
    # Recompute info[k] from the run of code k.
    ustart = cs[2]
    root, info = st[0], st[8]
    u = np.int64(-1)
    mixed = False
    for j in range(ustart[k], ustart[k + 1]):
        r = root[j]
        if r < 0:
            continue
        if u < 0:
            u = r
        elif r != u:
            mixed = True
            break
    sl = _slot(k, cs)
    if mixed:
        info[sl] = _MIXED
    elif u < 0:
        info[sl] = _NO_ROOT
    else:
        info[sl] = u


@njit(cache=True)
def _probe_mixed(k, r, cap_room, cs, st) -> np.int64:
    return _probe_run(k, r, cap_room, cs[2], st[0], st[4], st[5])


@njit(cache=True)
def _probe_run(k, r, cap_room, ustart, root, size, flags) -> np.int64:
    # First root other than r, with size <= cap_room, among the roots holding code k.
    for j in range(ustart[k], ustart[k + 1]):
        u = root[j]
        if u >= 0 and u != r and (flags[u] & _ALIVE) and size[u] <= cap_room:
            return u
    return np.int64(-1)


@njit(cache=True)
def _nearest(r, ks, nk, cap_room, cs, st, idx) -> np.int64:
    # Nearest root other than r (single-linkage Hamming distance from codes ks[:nk]) with
    # size <= cap_room; the first met at the minimum distance wins. -1 when none.
    # idx: int64 workspace of length >= 64.
    if cs[5].shape[0] > 0:
        return _nearest_multi(r, ks, nk, cap_room, cs, st, idx)
    u = _nearest_direct(
        r, ks, nk, cap_room, cs[3], cs[1], cs[4], cs[2], st[8], st[4], st[0], st[5], idx
    )
    if u == -2:
        return _nearest_scan(r, ks, nk, cap_room, 0, cs, st)
    return u


@njit(cache=True)
def _nearest_direct(
    r, ks, nk, cap_room, nbits, ucodes, direct, ustart, info, size, root, flags, idx
) -> np.int64:
    # Direct mode (info indexed by code): probe the Hamming shells radius by radius.
    # Returns the root, -1 when none, -2 when a linear scan is cheaper than the next shell.
    # This runs once per merge and dominates the build: arrays come as plain arguments
    # (passing the state tuples costs more than the probes) and the probe is one load.
    g = ucodes.shape[0]
    for d in range(0, nbits + 1):
        # The radius-d shell costs nk * C(nbits, d) probes; a scan over the distinct
        # codes costs g * nk and finds the exact nearest in one go.
        if _n_choose(nbits, d, g + 1) * nk > g:
            return np.int64(-2)
        for j in range(d):
            idx[j] = j
        while True:
            mask = np.uint64(0)
            for j in range(d):
                mask |= np.uint64(1) << np.uint64(idx[j])
            for a in range(nk):
                code = ucodes[ks[a]] ^ mask
                u = info[code]
                if u >= 0:
                    if u != r and size[u] <= cap_room:
                        return np.int64(u)
                elif u == _MIXED:
                    u = _probe_run(direct[code], r, cap_room, ustart, root, size, flags)
                    if u >= 0:
                        return np.int64(u)
            i = d - 1
            while i >= 0 and idx[i] == nbits - d + i:
                i -= 1
            if i < 0:
                break
            idx[i] += 1
            for j in range(i + 1, d):
                idx[j] = idx[j - 1] + 1
    return np.int64(-1)


@njit(cache=True)
def _nearest_multi(r, ks, nk, cap_room, cs, st, idx) -> np.int64:
    # Multi-index search for wide codes. Level t enumerates, for each substring, the
    # values within t flips of the query's substring: by pigeonhole every code within
    # distance ns*(t+1) - 1 shares such a value, so the best candidate up to that bound is
    # exact. Candidates below ns*t were all seen (and refused) at earlier levels.
    ucodes, nbits, widths, shifts, bstart, bitems = cs[1], cs[3], cs[5], cs[6], cs[7], cs[8]
    size, info = st[4], st[8]
    g = ucodes.shape[0]
    ns = widths.shape[0]
    wmax = 0
    for j in range(ns):
        wmax = max(wmax, widths[j])
    for t in range(0, wmax + 1):
        lo_d = ns * t
        hi_d = min(nbits, ns * (t + 1) - 1)
        if lo_d > nbits:
            break
        cost = np.int64(0)
        for j in range(ns):
            cost += _n_choose(widths[j], t, g + 1) * max(1, g >> widths[j])
        if cost * nk > g * 4:
            return _nearest_scan(r, ks, nk, cap_room, lo_d, cs, st)
        best = np.int64(-1)
        best_d = hi_d + 1
        for a in range(nk):
            q = ucodes[ks[a]]
            for j in range(ns):
                wj = widths[j]
                if t > wj:
                    continue
                wmask = (np.uint64(1) << np.uint64(wj)) - np.uint64(1)
                qj = np.int64((q >> np.uint64(shifts[j])) & wmask)
                for jj in range(t):
                    idx[jj] = jj
                while True:
                    v = qj
                    for jj in range(t):
                        v ^= np.int64(1) << idx[jj]
                    for p in range(bstart[j, v], bstart[j, v + 1]):
                        k2 = bitems[j, p]
                        d = _popcount(ucodes[k2] ^ q)
                        if d >= best_d:
                            continue
                        w = info[k2]
                        u = np.int64(-1)
                        if w >= 0:
                            if w != r and size[w] <= cap_room:
                                u = w
                        elif w == _MIXED:
                            u = _probe_mixed(k2, r, cap_room, cs, st)
                        if u >= 0:
                            best = u
                            best_d = d
                            if d == lo_d:
                                return best
                    i = t - 1
                    while i >= 0 and idx[i] == wj - t + i:
                        i -= 1
                    if i < 0:
                        break
                    idx[i] += 1
                    for jj in range(i + 1, t):
                        idx[jj] = idx[jj - 1] + 1
        if best >= 0:
            return best
    return _nearest_scan(r, ks, nk, cap_room, 0, cs, st)


@njit(cache=True)
def _nearest_scan(r, ks, nk, cap_room, d_floor, cs, st) -> np.int64:
    # Exact scan over all distinct codes; ties -> lowest code index. d_floor: no root
    # with room lies closer (stop as soon as one at that distance is found).
    ucodes = cs[1]
    dmode = cs[4].shape[0] > 0
    size, info = st[4], st[8]
    best = np.int64(-1)
    best_d = np.int64(65)
    for k2 in range(ucodes.shape[0]):
        w = info[np.int64(ucodes[k2]) if dmode else k2]
        if w == _NO_ROOT:
            continue
        c2 = ucodes[k2]
        d = np.int64(65)
        for a in range(nk):
            dd = _popcount(c2 ^ ucodes[ks[a]])
            if dd < d:
                d = dd
        if d >= best_d:
            continue
        u = np.int64(-1)
        if w >= 0:
            if w != r and size[w] <= cap_room:
                u = w
        else:
            u = _probe_mixed(k2, r, cap_room, cs, st)
        if u >= 0:
            best = u
            best_d = d
            if d <= d_floor:
                break
    return best


# --------------------------------------------------------------------------- splitting


@njit(cache=True)
def _cut_dp(cut: np.ndarray, t: np.int64, lo: np.int64, hi: np.int64, mode: np.int64):
    # Minimum-cost segmentation of positions [0, t) into parts of length in [lo, hi];
    # cut[j] is the cost of a boundary before position j. In remainder mode exactly one
    # part has length in [1, lo - 1]. Returns part lengths in order.
    inf = np.inf
    dp0 = np.full(t + 1, inf)
    dp1 = np.full(t + 1, inf)
    prev0 = np.full(t + 1, -1, dtype=np.int64)
    prev1 = np.full(t + 1, -1, dtype=np.int64)
    from1 = np.zeros(t + 1, dtype=np.bool_)  # dp1[j] reached from dp1 (True) or dp0
    dp0[0] = 0.0
    hf = np.float64(hi)
    for j in range(1, t + 1):
        for length in range(lo, min(hi, j) + 1):
            i = j - length
            c = _PART + (length / hf) ** 2 + (cut[i] if i > 0 else 0.0)
            if dp0[i] + c < dp0[j]:
                dp0[j] = dp0[i] + c
                prev0[j] = i
            if mode == _MODE_REMAINDER and dp1[i] + c < dp1[j]:
                dp1[j] = dp1[i] + c
                prev1[j] = i
                from1[j] = True
        if mode == _MODE_REMAINDER:
            for length in range(1, min(lo - 1, j) + 1):
                i = j - length
                c = _PART + _REMAINDER_ITEM * length + (cut[i] if i > 0 else 0.0)
                if dp0[i] + c < dp1[j]:
                    dp1[j] = dp0[i] + c
                    prev1[j] = i
                    from1[j] = False
    lengths = np.empty(t, dtype=np.int64)
    n = 0
    j = t
    state1 = mode == _MODE_REMAINDER
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


@njit(cache=True)
def _new_root(st) -> np.int64:
    free, counters = st[6], st[7]
    if counters[0] > 0:
        counters[0] -= 1
        return free[counters[0]]
    u = counters[1]
    counters[1] += 1
    return u


@njit(cache=True)
def _split_region(region, nreg, mode, s_min, s_max, cs, st) -> np.int64:
    # Cut the union of roots region[:nreg] (in that order) into parts; returns the id of
    # the remainder part (remainder mode) or -1.
    ck = cs[0]
    root, nxt, head, tail, size, flags, free, counters = st[:8]
    total = np.int64(0)
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
            cut[j] = _CUT_SAME_ROOT_SAME_CODE if same_code else _CUT_SAME_ROOT
        elif same_code:
            cut[j] = _CUT_SAME_CODE
    if mode == _MODE_RELAXED:
        p = (total + s_max - 1) // s_max
        lo = total // p
        hi = (total + p - 1) // p
    else:
        lo = s_min
        hi = s_max
    lengths = _cut_dp(cut, total, lo, hi, mode)
    for a in range(nreg):
        flags[region[a]] = _DIRTY  # dead unless reused below; dirty: it lost its items
    rem = np.int64(-1)
    pos = 0
    for q in range(lengths.shape[0]):
        u = region[q] if q < nreg else _new_root(st)
        fl = _ALIVE | _DIRTY
        if mode == _MODE_RELAXED:
            fl |= _FROZEN
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
    last = np.int64(-1)
    for j in range(total):  # seq is grouped by code within each source root
        kk = ck[seq[j]]
        if kk != last:
            _set_info(kk, cs, st)
            last = kk
    return rem


@njit(cache=True)
def _fallback(r, ks, nk, s_min, s_max, cs, st, region) -> None:
    # No root has room for r: absorb whole roots by Hamming distance from r's codes until
    # the total can be cut in bounds, then cut it. If everything is absorbed and the total
    # still cannot be cut (the input is infeasible), cut it into balanced parts <= s_max.
    ck, ucodes = cs[0], cs[1]
    root, size, flags, counters = st[0], st[4], st[5], st[7]
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
        if (flags[u] & _ALIVE) and u != r:
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
    mode = _MODE_BOUNDS if _feasible(total, s_min, s_max) else _MODE_RELAXED
    _split_region(region, nreg, mode, s_min, s_max, cs, st)


# --------------------------------------------------------------------------- the engine


@njit(cache=True)
def _engine(root, n_roots0, dirty_init, s_min, s_max, cs) -> np.ndarray:
    # root: int32[m], the root (0..n_roots0-1) of each position in sorted order (rewritten
    # in place; int32 halves the working set of the hot probes: m < 2**31). Returns the
    # dirty flag of every root id used (ids may exceed n_roots0).
    ucodes = cs[1]
    m = root.shape[0]
    g = ucodes.shape[0]
    cap = n_roots0 + m + 1
    # Only ids < n_roots0 are read before being written: np.empty keeps the rest of
    # these arrays untouched (no page faults for capacity that is never used).
    head = np.empty(cap, dtype=np.int32)
    tail = np.empty(cap, dtype=np.int32)
    size = np.empty(cap, dtype=np.int32)
    flags = np.zeros(cap, dtype=np.uint8)
    free = np.empty(cap, dtype=np.int64)
    counters = np.array([0, n_roots0], dtype=np.int64)  # free-list length, next new id
    nxt = np.empty(m, dtype=np.int32)
    # direct mode: one slot per possible code (absent codes stay _NO_ROOT)
    info = np.full(cs[4].shape[0] if cs[4].shape[0] > 0 else g, _NO_ROOT, dtype=np.int32)
    head[:n_roots0] = -1
    size[:n_roots0] = 0
    for i in range(m):  # member lists in sorted order
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
            flags[r] = _ALIVE | (_DIRTY if dirty_init[r] else 0)
    st = (root, nxt, head, tail, size, flags, free, counters, info)
    ustart = cs[2]
    dmode = cs[4].shape[0] > 0
    for k in range(g):  # _set_info for every code, written out (runs are contiguous)
        u = np.int64(-1)
        for j in range(ustart[k], ustart[k + 1]):
            if u == -1:
                u = root[j]
            elif root[j] != u:
                u = _MIXED
                break
        info[np.int64(ucodes[k]) if dmode else k] = u
    region = np.empty(cap, dtype=np.int64)

    # 1. split oversized dirty roots
    for r in range(n_roots0):
        if (flags[r] & _DIRTY) and size[r] > s_max:
            region[0] = r
            mode = _MODE_BOUNDS if _feasible(size[r], s_min, s_max) else _MODE_REMAINDER
            _split_region(region, 1, mode, s_min, s_max, cs, st)

    # 2. merge small dirty roots into the nearest root with room
    n_ids = counters[1]
    queue = np.empty(n_ids, dtype=np.int64)
    nq = 0
    for r in range(n_ids):
        if (flags[r] & (_ALIVE | _DIRTY)) == (_ALIVE | _DIRTY) and size[r] < s_min:
            queue[nq] = r
            nq += 1
    ks = np.empty(max(s_max, s_min) + 1, dtype=np.int64)
    idx = np.empty(64, dtype=np.int64)
    ck, nbits, direct = cs[0], cs[3], cs[4]
    for qi in range(nq):
        r = queue[qi]
        while (flags[r] & (_ALIVE | _FROZEN)) == _ALIVE and size[r] < s_min:
            # r's codes, one entry per run of its member list: lists are concatenations
            # of code-sorted runs, so these are nearly always distinct; a rare repeat costs
            # a few extra probes, never a wrong answer
            nk = 0
            last = np.int64(-1)
            i = head[r]
            while i >= 0:
                if ck[i] != last:
                    last = ck[i]
                    ks[nk] = last
                    nk += 1
                i = nxt[i]
            if dmode:
                t = _nearest_direct(
                    r, ks, nk, s_max - size[r], nbits, ucodes, direct, ustart, info, size,
                    root, flags, idx,
                )  # fmt: skip
                if t == -2:
                    t = _nearest_scan(r, ks, nk, s_max - size[r], 0, cs, st)
            else:
                t = _nearest(r, ks, nk, s_max - size[r], cs, st, idx)
            if t < 0:
                _fallback(r, ks, nk, s_min, s_max, cs, st, region)
                break
            # merge r into t
            i = head[r]
            while i >= 0:
                root[i] = t
                i = nxt[i]
            nxt[tail[t]] = head[r]
            tail[t] = tail[r]
            size[t] += size[r]
            flags[r] = _DIRTY  # dead (not _ALIVE), and its old membership is gone
            flags[t] |= _DIRTY
            free[counters[0]] = r
            counters[0] += 1
            for a in range(nk):  # r's codes now lie in t (or are still mixed)
                kk = ks[a]
                sl = np.int64(ucodes[kk]) if dmode else kk
                if info[sl] == r:
                    info[sl] = t
                elif info[sl] == _MIXED:
                    _set_info(kk, cs, st)
            r = t
    dirty = np.empty(counters[1], dtype=np.bool_)
    for u in range(counters[1]):
        dirty[u] = (flags[u] & _DIRTY) != 0
    return dirty


# --------------------------------------------------------------------------- labelling


@njit(cache=True)
def _label_sorted(root: np.ndarray, order: np.ndarray, n_ids: np.int64, start: np.int64):
    # Output ids start, start+1, ... in order of each root's first position in sorted
    # (code, tiebreak, index) order; scattered back to item order in the same pass.
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


def _build(cs: _Codes, s_min: int, s_max: int, start: int) -> np.ndarray:
    g = cs.ucodes.shape[0]
    root = cs.ck.astype(np.int32)  # one root per distinct code
    dirty = _engine(root, g, np.ones(g, dtype=np.bool_), s_min, s_max, cs.as_tuple())
    return _label_sorted(root, cs.order, np.int64(dirty.shape[0]), np.int64(start))


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
    return _build(_sort_codes(codes, tb), s_min, s_max, 0)


@njit(cache=True)
def _assign_new(new_k, root, static_size, cs) -> np.ndarray:
    # Target root of each distinct new code: a root already holding the code, else the
    # Hamming-nearest root (first met at the minimum distance). root: per position.
    g = cs[1].shape[0]
    m = root.shape[0]
    n_roots = static_size.shape[0]
    flags = np.zeros(n_roots, dtype=np.uint8)
    for u in range(n_roots):
        if static_size[u] > 0:
            flags[u] = _ALIVE
    info = np.full(cs[4].shape[0] if cs[4].shape[0] > 0 else g, _NO_ROOT, dtype=np.int32)
    e = np.zeros(0, dtype=np.int32)
    st = (root, np.empty(m, dtype=np.int32), e, e, static_size, flags, np.zeros(0, np.int64),
          np.zeros(0, np.int64), info)  # fmt: skip
    for k in range(g):
        _set_info(k, cs, st)
    out = np.empty(new_k.shape[0], dtype=np.int64)
    ks = np.empty(1, dtype=np.int64)
    idx = np.empty(64, dtype=np.int64)
    for a in range(new_k.shape[0]):
        ks[0] = new_k[a]
        out[a] = _nearest(-1, ks, 1, _BIG, cs, st, idx)
    return out


def _exact_changes(
    before: np.ndarray, after: np.ndarray, changed: np.ndarray, removed: np.ndarray
) -> RepartitionResult:
    """Derive ``changed``/``removed`` from the assignments themselves (the contract), so an
    id whose members all moved away is always reported removed."""
    moved = before != after
    alive = np.unique(after)
    old_of_moved = before[moved]
    old_of_moved = old_of_moved[(old_of_moved >= 0) & np.isin(old_of_moved, alive)]
    changed = np.union1d(changed, np.union1d(after[moved], old_of_moved)).astype(np.int64)
    gone = np.setdiff1d(np.unique(before[before >= 0]), alive)
    removed = np.union1d(removed, gone).astype(np.int64)
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
        tch = np.unique(tch.astype(np.int64))
        if tch.size and tch[0] < 0:
            raise ValueError("touched ids must be >= 0")
    old_ids, old_root = np.unique(seg, return_inverse=True)
    old_root = old_root.astype(np.int64).reshape(-1)
    if old_ids.size and old_ids[0] == -1:
        old_ids = old_ids[1:]
        old_root -= 1  # new items -> -1
    n_old = old_ids.shape[0]
    missing = np.setdiff1d(tch, old_ids).astype(np.int64)  # touched ids with no item left
    empty = np.zeros(0, dtype=np.int64)
    if m == 0:
        return RepartitionResult(empty, empty, missing)
    id_base = max(int(old_ids[-1]) if n_old else -1, int(tch[-1]) if tch.size else -1) + 1
    cs = _sort_codes(codes, tb)
    if n_old == 0:  # build = insert into empty: identical to partition()
        out = _build(cs, s_min, s_max, id_base)
        return RepartitionResult(out, np.unique(out), missing)

    item_root = old_root.copy()
    is_new = item_root < 0
    static_size = np.bincount(old_root[~is_new], minlength=n_old).astype(np.int64)
    dirty0 = np.zeros(n_old, dtype=np.bool_)
    dirty0[np.searchsorted(old_ids, np.intersect1d(tch, old_ids))] = True
    if is_new.any():
        new_k = np.unique(cs.code_k[is_new])
        target = _assign_new(
            new_k, item_root[cs.order].astype(np.int32), static_size.astype(np.int32),
            cs.as_tuple(),
        )  # fmt: skip
        lut = np.full(cs.ucodes.shape[0], -1, dtype=np.int64)
        lut[new_k] = target
        item_root[is_new] = lut[cs.code_k[is_new]]
        dirty0[target] = True
    root = item_root[cs.order].astype(np.int32)
    dirty = _engine(root, n_old, dirty0, s_min, s_max, cs.as_tuple())
    item_root[cs.order] = root
    res = _relabel(item_root, root, dirty, old_root, old_ids, static_size, id_base, missing)
    return _exact_changes(seg, res.segment, res.changed, res.removed)


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
    roots, first = np.unique(root_sorted, return_index=True)  # first sorted position
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
    removed = np.union1d(old_ids[~claimed], missing).astype(np.int64)
    return RepartitionResult(segment.astype(np.int64), changed, removed)
