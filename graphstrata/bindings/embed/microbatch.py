"""Dynamic micro-batching of work submitted by concurrent requests.

On CPU the query embedder dominates the cost of a retrieval, and a transformer embeds a batch
of 32 short queries in far less than 32 times the time of one. The service therefore does not
embed each request's query on its own: concurrent requests hand their query to a
:class:`MicroBatcher`, which runs one call for everything that arrived within a small wait
window (default 2 ms, at most 64 items).

While the maximum number of batches is running (default one: an embedding call already uses
every core through the model's own threads), newly arrived items keep accumulating, so under
load the batch grows with the queue instead of the queue growing with the load.

Items carry a key; only items with the same key share a call (the server keys whole queries by
mode and budget when it has to batch ``Engine.query_batch`` calls, and uses one key when it
batches bare embeddings).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

#: ``run_batch(key, items) -> results`` (one result per item, in order).
BatchFn = Callable[[Hashable, list[Any]], Sequence[Any]]


@dataclass
class BatchStats:
    """What a batcher did so far (read by ``/v1/stats`` and ``/metrics``)."""

    batches: int = 0
    items: int = 0
    failed_batches: int = 0
    seconds: float = 0.0
    max_batch: int = 0
    sizes: dict[int, int] = field(default_factory=dict)

    @property
    def mean_batch(self) -> float:
        """Items per batch so far (0 before the first batch)."""
        return self.items / self.batches if self.batches else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The statistics as JSON (``sizes`` left out)."""
        return {
            "batches": self.batches,
            "items": self.items,
            "failed_batches": self.failed_batches,
            "seconds": round(self.seconds, 6),
            "mean_batch": round(self.mean_batch, 3),
            "max_batch": self.max_batch,
        }


@dataclass
class _Pending:
    items: list[Any] = field(default_factory=list)
    futures: list[asyncio.Future[Any]] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None
    due: bool = False


class MicroBatcher(Generic[Item, Result]):
    """Run ``run_batch`` once for items submitted close together by concurrent coroutines.

    Parameters
    ----------
    run_batch:
        ``run_batch(key, items) -> results``, one result per item, in order. Runs in
        ``executor`` (blocking work never runs on the event loop).
    executor:
        Where batches run; ``None`` means the loop's default executor.
    wait_s:
        How long the first item of a batch waits for company (default 2 ms). 0 disables
        waiting: each item is flushed as soon as a batch slot is free.
    max_batch:
        A batch is flushed as soon as it holds this many items (default 64).
    max_inflight:
        Batches running at once (default 1); later items wait and join the next batch.
    isolate_failures:
        When a batch of several items raises, run each item alone, so that one bad item
        fails only its own request (default True).
    on_batch:
        ``on_batch(size, seconds)`` after each successful batch (metrics hook).
    """

    def __init__(
        self,
        run_batch: BatchFn,
        *,
        executor: Executor | None = None,
        wait_s: float = 0.002,
        max_batch: int = 64,
        max_inflight: int = 1,
        isolate_failures: bool = True,
        on_batch: Callable[[int, float], None] | None = None,
    ):
        if wait_s < 0:
            raise ValueError(f"wait_s must be >= 0, got {wait_s}")
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        if max_inflight < 1:
            raise ValueError(f"max_inflight must be >= 1, got {max_inflight}")
        self.run_batch = run_batch
        self.executor = executor
        self.wait_s = wait_s
        self.max_batch = max_batch
        self.max_inflight = max_inflight
        self.isolate_failures = isolate_failures
        self.on_batch = on_batch
        self.stats = BatchStats()
        self._stats_lock = threading.Lock()
        self._pending: dict[Hashable, _Pending] = {}
        self._inflight = 0

    @property
    def inflight(self) -> int:
        """Batches running now."""
        return self._inflight

    @property
    def queued(self) -> int:
        """Items waiting for a batch."""
        return sum(len(p.items) for p in self._pending.values())

    async def submit(self, item: Item, key: Hashable = None) -> Result:
        """Queue ``item`` and wait for its result (or its exception)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Result] = loop.create_future()
        group = self._pending.get(key)
        if group is None:
            group = self._pending[key] = _Pending()
        group.items.append(item)
        group.futures.append(fut)
        if len(group.items) >= self.max_batch or self.wait_s == 0:
            group.due = True
        elif group.timer is None:
            group.timer = loop.call_later(self.wait_s, self._expire, key)
        self._dispatch()
        return await fut

    # ------------------------------------------------------------------ internals
    def _expire(self, key: Hashable) -> None:
        group = self._pending.get(key)
        if group is not None:
            group.timer = None
            group.due = True
            self._dispatch()

    def _dispatch(self) -> None:
        """Start due batches while batch slots are free (oldest key first)."""
        while self._inflight < self.max_inflight:
            due = [k for k, g in self._pending.items() if g.due][:1]
            if not due:
                return
            key = due[0]
            group = self._pending.pop(key)
            if group.timer is not None:
                group.timer.cancel()
            items, futures = group.items[: self.max_batch], group.futures[: self.max_batch]
            rest_items, rest_futures = (
                group.items[self.max_batch :],
                group.futures[self.max_batch :],
            )
            if rest_items:
                # Overflow beyond max_batch forms the next batch of this key, due at once.
                self._pending[key] = _Pending(rest_items, rest_futures, None, True)
            self._inflight += 1
            asyncio.get_running_loop().create_task(self._run(key, items, futures))

    async def _run(self, key: Hashable, items: list[Any], futures: list[asyncio.Future]) -> None:
        loop = asyncio.get_running_loop()
        try:
            live = [i for i, f in enumerate(futures) if not f.done()]  # skip cancelled requests
            if live:
                items = [items[i] for i in live]
                futures = [futures[i] for i in live]
                await self._run_live(loop, key, items, futures)
        finally:
            self._inflight -= 1
            self._dispatch()

    async def _run_live(
        self,
        loop: asyncio.AbstractEventLoop,
        key: Hashable,
        items: list[Any],
        futures: list[asyncio.Future],
    ) -> None:
        try:
            results = await loop.run_in_executor(self.executor, self._timed, key, items)
        except Exception as exc:
            self._count_failure()
            if self.isolate_failures and len(items) > 1:
                for item, fut in zip(items, futures, strict=True):
                    await self._run_live(loop, key, [item], [fut])
                return
            for fut in futures:
                if not fut.done():
                    fut.set_exception(exc)
            return
        for fut, result in zip(futures, results, strict=True):
            if not fut.done():
                fut.set_result(result)

    def _timed(self, key: Hashable, items: list[Any]) -> Sequence[Any]:
        start = time.perf_counter()
        try:
            results = self.run_batch(key, items)
        except Exception:
            raise
        except BaseException as exc:
            # e.g. a Rust panic surfacing from a tokenizer: turn it into an ordinary error so
            # the waiting requests fail cleanly instead of the batcher losing them.
            raise RuntimeError(f"batch failed: {type(exc).__name__}: {exc}") from exc
        seconds = time.perf_counter() - start
        if len(results) != len(items):
            raise RuntimeError(
                f"batch function returned {len(results)} results for {len(items)} items"
            )
        self._count_batch(len(items), seconds)
        return results

    def _count_batch(self, size: int, seconds: float) -> None:
        with self._stats_lock:
            s = self.stats
            s.batches += 1
            s.items += size
            s.seconds += seconds
            s.max_batch = max(s.max_batch, size)
            s.sizes[size] = s.sizes.get(size, 0) + 1
        if self.on_batch is not None:
            self.on_batch(size, seconds)

    def _count_failure(self) -> None:
        with self._stats_lock:
            self.stats.failed_batches += 1
