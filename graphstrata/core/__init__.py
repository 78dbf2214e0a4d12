"""Compiled kernels: pure functions over numpy arrays. No I/O, no models.

Conventions (docs/architecture.md, "Kernels"): each public function checks and converts its
inputs in Python, then calls small ``@njit(cache=True, nogil=True)`` kernels over arrays of
explicit dtypes, so query-time kernels (``ppr``, ``budget``) run in parallel from the
server's thread pool. Kernel state that travels between kernels is a ``typing.NamedTuple``
of arrays (Numba compiles them), never a positional tuple. A failed save to numba's
on-disk cache (a full disk) is a warning, never a failed call (``_jit_cache``).
"""

from graphstrata.core._jit_cache import tolerate_cache_save_errors

tolerate_cache_save_errors()
