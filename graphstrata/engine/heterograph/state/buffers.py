"""Recycled memory for the walk graph's CSR, which every commit writes anew.

At 100k chunks the CSR holds 18.8M entries (226 MB of indices and weights). A commit writes
a new one (``core.graph.advance_csr``) and the previous version's is freed once no reader
holds it. Freshly allocated, those pages are faulted in and zeroed by the kernel as the
kernel writes them: on a synthetic graph of that size the same call took 0.10 s into memory
already touched against 0.13-0.39 s into fresh memory (a one-off script, not kept);
inside a write at 100k its fill took 0.14 s fresh and 0.08 s recycled. A
:class:`BufferPool` hands out arrays over anonymous memory maps it keeps: when an array and
every view of it are gone (a finalizer on the array), its map returns to the pool for the
next commit, its pages still mapped.
"""

from __future__ import annotations

import mmap
import threading
import weakref

import numpy as np

#: Arrays below this size are allocated normally (the pool is for the big ones).
MIN_POOLED_BYTES = 1 << 22
#: Free maps kept at most (two arrays per CSR: indices and weights).
MAX_FREE = 4
#: A map is reused for an array needing at least this share of it.
MIN_FILL = 0.7
#: A new map gets this much room beyond the array, so that a slowly growing graph reuses it.
HEADROOM = 1.1


class BufferPool:
    """Arrays over recycled anonymous memory maps (thread-safe).

    Parameters
    ----------
    max_free:
        Free maps kept; one more is released to the system.
    """

    def __init__(self, max_free: int = MAX_FREE):
        self._free: list[mmap.mmap] = []
        self._max_free = max_free
        self._lock = threading.Lock()

    def empty(self, n: int, dtype: type) -> np.ndarray:
        """An uninitialized 1-d array of ``n`` items of ``dtype``, like ``np.empty``."""
        dt = np.dtype(dtype)
        nbytes = int(n) * dt.itemsize
        if nbytes < MIN_POOLED_BYTES:
            return np.empty(n, dt)
        buf = self._take(nbytes)
        if buf is None:
            buf = mmap.mmap(-1, int(nbytes * HEADROOM))
        out = np.frombuffer(buf, dtype=dt, count=int(n))
        # When the array and every view of it are gone, the map can be reused.
        weakref.finalize(out, self._give_back, buf)
        return out

    def _take(self, nbytes: int) -> mmap.mmap | None:
        with self._lock:
            fits = [b for b in self._free if nbytes <= len(b) and nbytes >= MIN_FILL * len(b)]
            if not fits:
                return None
            best = min(fits, key=len)
            self._free.remove(best)
            return best

    def _give_back(self, buf: mmap.mmap) -> None:
        with self._lock:
            self._free.append(buf)
            if len(self._free) > self._max_free:
                self._free.sort(key=len)
                self._free.pop(0)  # the smallest goes back to the system

    def free_maps(self) -> int:
        """How many maps wait for reuse (for tests)."""
        with self._lock:
            return len(self._free)


#: The pool the walk graph's CSR is written into.
CSR_BUFFERS = BufferPool()
