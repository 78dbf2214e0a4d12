"""A pool of model actors that lives for a whole build, and the rows-per-stage meter.

Why actors that outlive a stage, and not a Ray Data ``map_batches`` actor pool per call:
the engine calls its embedder once per 256 texts and its LLM once per stage (per hierarchy
layer, per heterograph stage), dozens of calls per build. A Ray Data actor pool lives for one
dataset execution, so every call would start its actors and load the model again: seconds
per call even with a model-free embedder, against milliseconds for a call to a live actor
(``benchmarks/results/distributed.md``, "One engine call of 256 texts"). So
each model gets one pool for the build (one model per actor, loaded once), work goes to it as
Arrow tables, and the stateless extractive LLM runs as Ray Data tasks (``backends.py``).

Faults: actors are created with ``max_restarts`` and ``max_task_retries``
(``RayOptions``): an actor that dies mid-call is restarted (its model loaded again) and Ray
resends the calls it had not answered. Each result carries its row positions and the driver
checks that every row came back exactly once (``arrow.check_positions``), so a retried call
can neither lose nor duplicate work. A backend's own error (``LLMError``, ``EmbedderError``)
is not retried by Ray: it is raised on the driver as it is, and the engine's operation aborts
with nothing committed.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from graphstrata.bindings.distributed.cluster import Cluster, Placement, require_ray
from graphstrata.bindings.distributed.workers import BackendSpec, ModelActor

ProgressFn = Callable[[str, int, int], None]

#: Calls queued per actor: one running, one waiting, so an actor never idles between pieces.
QUEUE_DEPTH = 2


@dataclass
class StageStats:
    """Rows, calls and seconds of one stage on the cluster (``"embed"``, ``"llm:decompose"``)."""

    rows: int = 0
    calls: int = 0
    seconds: float = 0.0

    @property
    def rows_per_second(self) -> float:
        """Throughput (0 before any work)."""
        return self.rows / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Meter:
    """Rows per stage, shown through a progress callback and kept for the report."""

    progress: ProgressFn | None = None
    stages: dict[str, StageStats] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str, total: int) -> Iterator[Callable[[int], None]]:
        """Time one call of ``total`` rows; the yielded function reports rows done."""
        stats = self.stages.setdefault(name, StageStats())
        done = 0
        start = time.perf_counter()

        def advance(rows: int) -> None:
            nonlocal done
            done += rows
            if self.progress is not None:
                self.progress(f"{name} rows", done, total)

        try:
            yield advance
        finally:
            stats.seconds += time.perf_counter() - start
            stats.rows += done
            stats.calls += 1

    def notes(self) -> list[str]:
        """One line per stage, for ``OperationReport.notes``."""
        return [
            f"ray {name}: {s.rows} rows in {s.seconds:.2f} s ({s.rows_per_second:.0f} rows/s, "
            f"{s.calls} calls)"
            for name, s in self.stages.items()
        ]


def user_cause(exc: BaseException) -> Exception | None:
    """The exception a worker raised (``LLMError``, ``ConfigError``, ...) behind Ray's wrappers.

    Ray raises a class derived from both ``RayTaskError`` and the cause's class, with the
    original as ``cause``: the deepest exception of the chain not defined by Ray is it.
    """
    found: Exception | None = None
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, Exception) and not type(current).__module__.startswith("ray"):
            found = current
        seen.add(id(current))
        nxt = getattr(current, "cause", None)
        current = nxt if isinstance(nxt, BaseException) else current.__cause__
    return found


class ModelPool:
    """``n`` actors, each holding one model built from ``spec``.

    Parameters
    ----------
    cluster:
        The connected cluster.
    spec:
        The backend every actor builds.
    placement:
        Resources of one actor.
    n:
        How many actors.
    """

    def __init__(self, cluster: Cluster, spec: BackendSpec, placement: Placement, n: int):
        ray = require_ray()
        self._ray = ray
        remote_cls = ray.remote(ModelActor).options(**placement.actor_options(cluster.options))
        self.actors = [remote_cls.remote(spec, placement.threads) for _ in range(n)]
        self.spec = spec
        self.placement = placement
        # Not awaited here: the pools of a build start side by side (their actors load
        # their models in parallel); the first use of ``info`` waits.
        self._describe = self.actors[0].describe.remote()
        self._info: dict[str, Any] | None = None

    @property
    def info(self) -> dict[str, Any]:
        """The backend's :func:`workers.describe` (waits for the first actor to be up)."""
        if self._info is None:
            self._info = self._get(self._describe)
        return self._info

    def run(
        self, method: str, pieces: list[pa.Table], on_result: Callable[[pa.Table], None]
    ) -> None:
        """Send each piece to an actor (``QUEUE_DEPTH`` queued per actor) and hand back results.

        Parameters
        ----------
        method:
            ``"embed"`` or ``"complete"``.
        pieces:
            The work, one Arrow table per call.
        on_result:
            Called on the driver with each result table as it arrives (any order).

        Raises
        ------
        Exception
            The backend's own error (``LLMError``, ``EmbedderError``, ``ConfigError`` of a bad
            spec), as raised in the actor.
        RuntimeError
            When an actor died more often than ``max_restarts`` / ``max_task_retries`` allow.
        """
        ray = self._ray
        todo = list(reversed(pieces))
        flight: dict[Any, Any] = {}

        def submit(actor: Any) -> None:
            if todo:
                flight[getattr(actor, method).remote(todo.pop())] = actor

        for actor in self.actors:
            for _ in range(QUEUE_DEPTH):
                submit(actor)
        try:
            while flight:
                ready, _ = ray.wait(list(flight), num_returns=1)
                actor = flight.pop(ready[0])
                result = self._get(ready[0])
                submit(actor)
                on_result(result)
        finally:
            for ref in flight:  # an error stops the stage: drop the calls still queued
                with contextlib.suppress(Exception):  # never hide the error that stopped it
                    ray.cancel(ref)

    def _get(self, ref: Any) -> Any:
        ray = self._ray
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = user_cause(exc)
            if cause is not None:
                raise cause from None
            raise
        except ray.exceptions.RayActorError as exc:
            raise RuntimeError(
                f"a {self.spec.kind} actor died more often than max_restarts / "
                f"max_task_retries allow ({exc}); nothing was committed"
            ) from exc

    def close(self) -> None:
        """Close each backend and kill the actors (their resources go back to the cluster)."""
        ray = self._ray
        closing = [actor.close.remote() for actor in self.actors]
        # An actor that is already gone needs no closing; waiting is bounded either way.
        with contextlib.suppress(Exception):
            ray.wait(closing, num_returns=len(closing), timeout=10.0)
        for actor in self.actors:
            ray.kill(actor, no_restart=True)
        self.actors = []
