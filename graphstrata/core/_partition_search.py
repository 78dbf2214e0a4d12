"""Hamming-nearest root with room (the merge step of :mod:`graphstrata.core.partition`).

The distance between a root and a set of codes is the minimum Hamming distance between
them (single linkage); among roots at the same distance the first met in a fixed
enumeration order wins. Direct mode probes the Hamming shells around the codes radius by
radius (one load per probe through ``info``); multi-index mode enumerates substring
values; either falls back to an exact linear scan over the distinct codes when a shell
would cost more probes than there are codes. See docs/architecture.md, "Kernels".
"""

from __future__ import annotations

import numpy as np
from numba import njit

from graphstrata.core._partition_types import ALIVE, MIXED, NO_ROOT, CodeIndex, State
from graphstrata.core.lsh import _popcount


@njit(cache=True, nogil=True)
def _n_choose(n: int, d: int, cap: int) -> int:
    # C(n, d) saturated at cap (only compared against a work budget).
    if d < 0 or d > n:
        return 0
    r = 1
    for i in range(d):
        r = r * (n - i) // (i + 1)
        if r > cap:
            return cap
    return r


@njit(cache=True, nogil=True)
def _slot(k: int, ci: CodeIndex) -> np.int64:
    # Where code index k keeps its info: at the code itself in direct mode (so a probe is
    # one load: info[code ^ mask]), at k in multi-index mode.
    if ci.direct.shape[0] > 0:
        return np.int64(ci.ucodes[k])
    return np.int64(k)


@njit(cache=True, nogil=True)
def _set_info(k: int, ci: CodeIndex, st: State) -> None:
    # Recompute info[slot(k)] from the run of code k.
    ustart = ci.ustart
    root = st.root
    u = -1
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
    sl = _slot(k, ci)
    if mixed:
        st.info[sl] = MIXED
    elif u < 0:
        st.info[sl] = NO_ROOT
    else:
        st.info[sl] = u


@njit(cache=True, nogil=True)
def _probe_run(
    k: int,
    r: int,
    cap_room: int,
    ustart: np.ndarray,
    root: np.ndarray,
    size: np.ndarray,
    flags: np.ndarray,
) -> int:
    # First root other than r, with size <= cap_room, among the roots holding code k.
    for j in range(ustart[k], ustart[k + 1]):
        u = root[j]
        if u >= 0 and u != r and (flags[u] & ALIVE) and size[u] <= cap_room:
            return u
    return -1


@njit(cache=True, nogil=True)
def _probe_mixed(k: int, r: int, cap_room: int, ci: CodeIndex, st: State) -> int:
    return _probe_run(k, r, cap_room, ci.ustart, st.root, st.size, st.flags)


@njit(cache=True, nogil=True)
def nearest(
    r: int, ks: np.ndarray, nk: int, cap_room: int, ci: CodeIndex, st: State, idx: np.ndarray
) -> int:
    """Nearest root other than ``r`` to the codes ``ks[:nk]`` with size <= ``cap_room``.

    Single-linkage Hamming distance; the first root met at the minimum distance wins.
    Returns -1 when no root qualifies. ``idx`` is an int64 workspace of length >= 64.
    """
    if ci.widths.shape[0] > 0:
        return _nearest_multi(r, ks, nk, cap_room, ci, st, idx)
    u = nearest_direct(
        r, ks, nk, cap_room, ci.nbits, ci.ucodes, ci.direct, ci.ustart, st.info, st.size,
        st.root, st.flags, idx,
    )  # fmt: skip
    if u == -2:
        return nearest_scan(r, ks, nk, cap_room, 0, ci, st)
    return u


@njit(cache=True, nogil=True)
def nearest_direct(
    r: int,
    ks: np.ndarray,
    nk: int,
    cap_room: int,
    nbits: int,
    ucodes: np.ndarray,
    direct: np.ndarray,
    ustart: np.ndarray,
    info: np.ndarray,
    size: np.ndarray,
    root: np.ndarray,
    flags: np.ndarray,
    idx: np.ndarray,
) -> int:
    """Direct mode (``info`` indexed by code): probe the Hamming shells radius by radius.

    Returns the root, -1 when none, -2 when a linear scan is cheaper than the next shell.
    This runs once per merge and dominates the build: arrays come as plain arguments
    (passing the state tuples costs more than the probes) and a probe is one load.
    """
    g = ucodes.shape[0]
    for d in range(0, nbits + 1):
        # The radius-d shell costs nk * C(nbits, d) probes; a scan over the distinct
        # codes costs g * nk and finds the exact nearest in one go.
        if _n_choose(nbits, d, g + 1) * nk > g:
            return -2
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
                        return u
                elif u == MIXED:
                    u = _probe_run(direct[code], r, cap_room, ustart, root, size, flags)
                    if u >= 0:
                        return u
            i = d - 1
            while i >= 0 and idx[i] == nbits - d + i:
                i -= 1
            if i < 0:
                break
            idx[i] += 1
            for j in range(i + 1, d):
                idx[j] = idx[j - 1] + 1
    return -1


@njit(cache=True, nogil=True)
def _nearest_multi(
    r: int, ks: np.ndarray, nk: int, cap_room: int, ci: CodeIndex, st: State, idx: np.ndarray
) -> int:
    # Multi-index search for wide codes. Level t enumerates, for each substring, the
    # values within t flips of the query's substring: by pigeonhole every code within
    # distance ns*(t+1) - 1 shares such a value, so the best candidate up to that bound is
    # exact. Candidates below ns*t were all seen (and refused) at earlier levels.
    ucodes, nbits, widths, shifts = ci.ucodes, ci.nbits, ci.widths, ci.shifts
    bstart, bitems = ci.bstart, ci.bitems
    size, info = st.size, st.info
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
        cost = 0
        for j in range(ns):
            cost += _n_choose(widths[j], t, g + 1) * max(1, g >> widths[j])
        if cost * nk > g * 4:
            return nearest_scan(r, ks, nk, cap_room, lo_d, ci, st)
        best = -1
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
                        u = -1
                        if w >= 0:
                            if w != r and size[w] <= cap_room:
                                u = w
                        elif w == MIXED:
                            u = _probe_mixed(k2, r, cap_room, ci, st)
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
    return nearest_scan(r, ks, nk, cap_room, 0, ci, st)


@njit(cache=True, nogil=True)
def nearest_scan(
    r: int, ks: np.ndarray, nk: int, cap_room: int, d_floor: int, ci: CodeIndex, st: State
) -> int:
    """Exact scan over all distinct codes; ties go to the lowest code index.

    ``d_floor``: no root with room lies closer, so the scan stops at the first root found
    at that distance.
    """
    ucodes = ci.ucodes
    dmode = ci.direct.shape[0] > 0
    size, info = st.size, st.info
    best = -1
    best_d = np.int64(65)
    for k2 in range(ucodes.shape[0]):
        w = info[np.int64(ucodes[k2]) if dmode else k2]
        if w == NO_ROOT:
            continue
        c2 = ucodes[k2]
        d = np.int64(65)
        for a in range(nk):
            dd = _popcount(c2 ^ ucodes[ks[a]])
            if dd < d:
                d = dd
        if d >= best_d:
            continue
        u = -1
        if w >= 0:
            if w != r and size[w] <= cap_room:
                u = w
        else:
            u = _probe_mixed(k2, r, cap_room, ci, st)
        if u >= 0:
            best = u
            best_d = d
            if d <= d_floor:
                break
    return best
