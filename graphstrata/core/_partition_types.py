"""Constants and kernel state of :mod:`graphstrata.core.partition`.

The kernels take two named tuples (Numba compiles ``typing.NamedTuple`` classes in nopython
mode, so a field is read by name at no cost over a positional tuple):

* :class:`CodeIndex`, read-only: the items in sorted order and the index of their
  distinct codes (direct table or multi-index);
* :class:`State`, mutated in place: the clusters ("roots") as linked member lists, their
  sizes and flags, the free list of root ids and the per-code root summary ``info``.

See docs/architecture.md, "Kernels".
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# Dynamic-program costs, lexicographic by magnitude (see the partition module docstring).
CUT_SAME_ROOT_SAME_CODE = 1e9  # splitting an equal-code run inside one cluster
CUT_SAME_ROOT = 1e6  # splitting a cluster between two codes
REMAINDER_ITEM = 1e3  # each item pushed out as a remainder (infeasible splits only)
CUT_SAME_CODE = 1e2  # cutting between two clusters that share a code
PART = 10.0  # each part (fewer, larger parts first)
# balance: (size / hi) ** 2 per part, at most 1

MODE_BOUNDS = 0  # parts in [s_min, s_max]
MODE_REMAINDER = 1  # parts in [s_min, s_max] plus exactly one part in [1, s_min - 1]
MODE_RELAXED = 2  # parts of floor/ceil(T / ceil(T / s_max)): the input is infeasible

# info[slot(k)] per distinct code k: the root holding all items of the code, else one of:
MIXED = -1  # items of this code lie in several roots
NO_ROOT = -2  # no item of this code has a root (new items before assignment)
BIG = 1 << 62

ALIVE = 1  # flags bits
DIRTY = 2
FROZEN = 4  # produced by the relaxed split: never re-examined

DIRECT_MAX_BITS = 22  # direct code -> index table up to 4M entries (16 MB)


class CodeIndex(NamedTuple):
    """Distinct codes of the items, as the kernels read them.

    The kernels work on *positions* in sorted (code, tiebreak, index) order, not on item
    ids: the items of one code are then contiguous, which keeps the member walks
    cache-friendly. Exactly one of ``direct`` (narrow codes) and ``widths`` (wide codes,
    multi-index) is non-empty.
    """

    ck: np.ndarray  # int64 [m]: distinct-code index of each position (non-decreasing)
    ucodes: np.ndarray  # uint64 [g]: distinct codes, ascending
    ustart: np.ndarray  # int64 [g + 1]: positions of code k are ustart[k]:ustart[k + 1]
    nbits: int  # bit length of the widest code
    direct: np.ndarray  # int32 [2**nbits]: code -> k or -1 (direct mode), else empty
    widths: np.ndarray  # int64 [s]: substring widths (multi-index mode), else empty
    shifts: np.ndarray  # int64 [s]: substring offsets
    bstart: np.ndarray  # int32 [s, 2**wmax + 1]: bucket starts per substring value
    bitems: np.ndarray  # int32 [s, g]: distinct codes bucketed by substring value


class State(NamedTuple):
    """Clusters ("roots") during a build or an update, mutated in place by the kernels.

    Root ids index ``head``/``tail``/``size``/``flags``; positions index ``root``/``nxt``.
    """

    root: np.ndarray  # int32 [m]: root of each position
    nxt: np.ndarray  # int32 [m]: next position in the same root, -1 at the tail
    head: np.ndarray  # int32 [cap]: first position of each root
    tail: np.ndarray  # int32 [cap]: last position of each root
    size: np.ndarray  # int32 [cap]: items in each root
    flags: np.ndarray  # uint8 [cap]: ALIVE | DIRTY | FROZEN
    free: np.ndarray  # int64 [cap]: free list of root ids (first counters[0] entries)
    counters: np.ndarray  # int64 [2]: free-list length, next never-used root id
    info: np.ndarray  # int32 [2**nbits or g]: per-code root summary (see MIXED, NO_ROOT)
