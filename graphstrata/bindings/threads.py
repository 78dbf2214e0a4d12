"""One thread budget per process, decided by the process's role (docs/decisions/threads.md).

Every library on the query and build path brings its own thread pool sized to the machine:
OpenBLAS (numpy's matrix products), Numba's parallel kernels, ONNX Runtime's and torch's
intra-op pools, and the server's search pool. Alone on idle cores that is harmless; as soon as
anything else wants a core (a concurrent request, another process, a build) the pools fight
and a 3 ms search takes 6 to 17 ms (issue 52). :func:`apply` sizes them together from the
cores this process may run on (its CPU affinity) and its role:

========  ====  =================  =====  =====  ==============================
role      BLAS  Numba              ONNX   torch  search pool
========  ====  =================  =====  =====  ==============================
server    1     1 per request      rest   1      ``min(8, max(1, cores - 1))`` requests
query     1     all (by crossover) all    1      -
build     all   all                all    all    -
worker    all   all                all    all    - (cores = the actor's threads)
========  ====  =================  =====  =====  ==============================

"all" is the budget's cores; "rest" is ``max(1, cores - search pool)``: the server embeds
queries in micro-batches on one thread of its own, beside the search pool's requests, so a
batch gets the cores the searches leave (one thread on 1 to 9 cores). A server request runs single-threaded
(its parallelism is the concurrent requests); a one-shot query keeps Numba's pool for the kernels whose batch is large
enough to pay for it (each kernel checks its own crossover, e.g.
``core.parallel.BETWEENNESS_PARALLEL_MIN``) but never hands a per-query matrix product to a
second BLAS thread. In every role the OpenMP threads sleep instead of spinning when idle
(``OMP_WAIT_POLICY=PASSIVE``, set before Numba's pool starts): spinning threads take the core
from the thread that has work as soon as the cores are shared.

One setting overrides the cores: ``GRAPHSTRATA_THREADS=N`` (or ``--threads N`` of the
command line, ``ServerSettings.threads``) makes the budget ``N`` cores, so ``1`` runs every
pool at one thread; ``GRAPHSTRATA_THREADS=default`` leaves every library at its own default
(the behaviour before this module).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

#: Environment variable of the override (an integer number of cores, or ``default``).
ENV = "GRAPHSTRATA_THREADS"

#: The process roles :func:`apply` knows.
ROLES = ("server", "query", "build", "worker")

#: The override value that leaves every library at its own default.
LIBRARY_DEFAULTS = "default"

Role = Literal["server", "query", "build", "worker"]
Override = int | Literal["default"] | None

_current: ThreadBudget | None = None


@dataclass(frozen=True)
class ThreadBudget:
    """The threads each pool of a process gets (``None``: the library's own default).

    Attributes
    ----------
    role:
        One of :data:`ROLES`.
    cores:
        The cores the budget spreads over: the CPU affinity, or the override.
    blas:
        BLAS threads (OpenBLAS / MKL through ``threadpoolctl``).
    numba:
        Numba threads of the thread that applies the budget (and of the server's search
        threads, through :func:`thread_initializer`).
    numba_layer:
        Numba threading layer to ask for before its pool starts (``None``: numba's choice).
    onnx:
        Intra-op threads of the ONNX Runtime embedders' sessions.
    torch:
        ``torch.set_num_threads`` (applied only where torch is imported anyway).
    search_pool:
        Threads of the server's search pool (concurrent requests searched at once).
    passive_omp:
        Set ``OMP_WAIT_POLICY=PASSIVE`` before an OpenMP runtime starts.
    """

    role: str
    cores: int
    blas: int | None
    numba: int | None
    numba_layer: str | None
    onnx: int | None
    torch: int | None
    search_pool: int
    passive_omp: bool


def available_cores() -> int:
    """Cores this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` elsewhere),
    so a container or ``taskset`` limit counts, not the host's CPUs."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def parse_override(value: str | int | None) -> Override:
    """An override value: a positive integer, ``"default"``, or ``None`` (empty / unset).

    Raises
    ------
    ValueError
        For anything else.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str) and value.strip().lower() == LIBRARY_DEFAULTS:
        return "default"
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n < 1:
        raise ValueError(f"{ENV} must be a number of threads >= 1 or 'default', got {value!r}")
    return n


def budget(role: str, threads: str | int | None = None) -> ThreadBudget:
    """The budget of ``role``, without applying it.

    Parameters
    ----------
    role:
        One of :data:`ROLES`.
    threads:
        The override (an integer, ``"default"``), else ``GRAPHSTRATA_THREADS``, else the CPU
        affinity.

    Returns
    -------
    ThreadBudget

    Raises
    ------
    ValueError
        For an unknown role or an invalid override.
    """
    if role not in ROLES:
        raise ValueError(f"unknown thread role {role!r} (expected one of {', '.join(ROLES)})")
    override = parse_override(threads)
    if override is None:
        override = parse_override(os.environ.get(ENV))
    if override == LIBRARY_DEFAULTS:
        cores = available_cores()
        return ThreadBudget(role, cores, None, None, None, None, None, min(8, cores + 2), False)
    cores = override if isinstance(override, int) else available_cores()
    # The server's query embeddings run on one thread of their own (ONNX Runtime releases the
    # GIL), so searches get the other cores: a search releases the GIL only in its kernels,
    # and more search threads than that only queue for the GIL. Serving graph on 2 cores
    # (python -m benchmarks.kernels.threads, 800 requests a cell), req/s at concurrency 8 / 32:
    # 3 search threads 176.8 / 187.9, 2 threads 189.3 / 204.8, 1 thread (this rule) 221.5 /
    # 216.6; each library's default (4 threads, ONNX on every core) 154.3 / 177.4.
    pool = min(8, max(1, cores - 1))
    if role == "server":
        # Parallelism comes from concurrent requests; many request threads may each launch a
        # Numba kernel, which only a threadsafe layer (OpenMP, TBB) allows.
        # The embedder's batches get the cores the searches leave: a batch with every core
        # (ONNX intra-op threads = cores) lost to one thread at concurrency 8 (147.9 against
        # 155.1 req/s, and 158.6 / 182.0 in the run before).
        share = max(1, cores - pool)
        return ThreadBudget(role, cores, 1, 1, "threadsafe", share, 1, pool, True)
    if role == "query":
        return ThreadBudget(role, cores, 1, cores, None, cores, 1, 1, True)
    return ThreadBudget(role, cores, cores, cores, None, cores, cores, 1, True)


def apply(role: str, threads: str | int | None = None) -> ThreadBudget:
    """Size every pool of this process for ``role`` (see the module docstring).

    BLAS is limited through ``threadpoolctl`` (the libraries already loaded) and
    ``OPENBLAS_NUM_THREADS`` / ``MKL_NUM_THREADS`` (those loaded later), Numba's threads of
    the calling thread with ``numba.set_num_threads`` (its layer and OpenMP's wait policy
    first, if its pool has not started yet), torch's only if torch is already imported.
    ONNX Runtime sessions created afterwards read :func:`onnx_threads`.

    Parameters
    ----------
    role, threads:
        As for :func:`budget`.

    Returns
    -------
    ThreadBudget
        What was applied (also :func:`current` from now on).
    """
    global _current
    b = budget(role, threads)
    if b.blas is not None:
        for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = str(b.blas)
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=b.blas, user_api="blas")
    _apply_numba(b)
    apply_torch(b)
    _current = b
    return b


def current() -> ThreadBudget | None:
    """The budget :func:`apply` applied last in this process, or ``None``."""
    return _current


def onnx_threads() -> int:
    """Intra-op threads for a new ONNX Runtime session: the applied budget's, else the
    available cores."""
    b = _current
    return b.onnx if b is not None and b.onnx is not None else available_cores()


def llm_threads() -> int:
    """torch threads for a local LLM's generation (``bindings/llm/local.py``): the applied
    budget's torch threads (one in a server, whose requests are its parallelism; all cores
    in a build), else the available cores."""
    b = _current
    return b.torch if b is not None and b.torch is not None else available_cores()


def apply_torch(b: ThreadBudget | None = None) -> None:
    """``torch.set_num_threads`` of the budget (default: :func:`current`), if torch is
    imported; torch is never imported for this."""
    b = b if b is not None else _current
    torch = sys.modules.get("torch")
    if b is not None and b.torch is not None and torch is not None:
        torch.set_num_threads(b.torch)


def thread_initializer(b: ThreadBudget) -> Callable[[], None]:
    """An ``initializer`` for a thread pool whose threads run kernels (the server's search
    pool): Numba's thread count is per thread, and a new thread starts at the whole pool."""

    def init() -> None:
        if b.numba is not None:
            _set_numba_threads(b.numba)

    return init


def _apply_numba(b: ThreadBudget) -> None:
    from numba.core import config

    if not _numba_started():
        # Read when the OpenMP runtime loads (with Numba's pool), so only before that.
        if b.passive_omp:
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        if (
            b.numba_layer is not None
            and str(getattr(config, "THREADING_LAYER", "default")).lower() == "default"
            and _threadsafe_layer_available()
        ):
            # numba's config attributes are set at import, unknown to type checkers.
            setattr(config, "THREADING_LAYER", b.numba_layer)  # noqa: B010
    if b.numba is not None:
        _set_numba_threads(b.numba)


def _set_numba_threads(n: int) -> None:
    import numba
    from numba.core import config

    numba.set_num_threads(max(1, min(n, int(getattr(config, "NUMBA_NUM_THREADS", n)))))


def _numba_started() -> bool:
    """Whether Numba's thread pool (and with it the OpenMP runtime) has started."""
    import numba

    try:
        numba.threading_layer()
    except ValueError:  # "Threading layer is not initialized."
        return False
    return True


def _threadsafe_layer_available() -> bool:
    """Whether Numba has a layer that allows kernels from several threads (TBB or OpenMP)."""
    for module in ("numba.np.ufunc.tbbpool", "numba.np.ufunc.omppool"):
        with contextlib.suppress(ImportError, OSError):
            __import__(module)
            return True
    return False
