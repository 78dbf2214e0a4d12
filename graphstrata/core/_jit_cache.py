"""Numba's on-disk kernel cache must never fail a computation.

Every kernel is ``@njit(cache=True)``: the first call of a signature compiles it and saves
the machine code next to the module (or under ``NUMBA_CACHE_DIR``). Numba raises any
``OSError`` of that save from the kernel call itself, outside Windows, so a full disk or a
file-size limit turned a read such as ``Index.open`` into a crash, and a write into an
``OSError`` that named no table (the store wraps only its own files into ``StoreWriteError``).
The compiled function is already in memory and correct when the save fails; only the next
process loses the cache entry and compiles again. So a failed save is a warning here.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

from numba.core import caching

_MARK = "_graphstrata_tolerates_save_errors"


def tolerate_cache_save_errors() -> None:
    """Make numba warn, not raise, when it cannot save a compiled kernel to its cache.

    Idempotent: the wrapper is installed once per process, on ``numba.core.caching.Cache``.
    """
    original = caching.Cache.save_overload
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def save_overload(self: caching.Cache, sig: Any, data: Any) -> None:
        try:
            original(self, sig, data)
        except OSError as err:
            warnings.warn(
                f"numba could not save a compiled kernel to its cache ({err}); "
                "it stays compiled for this process and compiles again in the next",
                RuntimeWarning,
                stacklevel=2,
            )

    setattr(save_overload, _MARK, True)
    caching.Cache.save_overload = save_overload  # type: ignore[method-assign]
