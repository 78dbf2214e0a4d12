"""MicroBatcher: concurrent submissions share one call, bounded in size, isolated on failure."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from graphstrata.bindings.embed.microbatch import MicroBatcher


class Recorder:
    """A batch function that records every call and returns each item doubled."""

    def __init__(self, gate: threading.Event | None = None, bad: Any = None):
        self.calls: list[tuple[Hashable, list[Any]]] = []
        self.gate = gate
        self.bad = bad
        self.lock = threading.Lock()

    def __call__(self, key: Hashable, items: list[Any]) -> list[Any]:
        with self.lock:
            self.calls.append((key, list(items)))
            first = len(self.calls) == 1
        if self.gate is not None and first:
            assert self.gate.wait(10), "gate never opened"
        if self.bad is not None and self.bad in items:
            raise ValueError(f"bad item {self.bad}")
        return [2 * x for x in items]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_concurrent_submissions_share_one_call():
    rec = Recorder()
    batcher = MicroBatcher(rec, wait_s=0.05, max_batch=64)

    async def main() -> list[int]:
        return await asyncio.gather(*(batcher.submit(i) for i in range(10)))

    assert run(main()) == [2 * i for i in range(10)]
    assert len(rec.calls) == 1
    assert rec.calls[0][1] == list(range(10))
    assert batcher.stats.batches == 1 and batcher.stats.items == 10
    assert batcher.stats.max_batch == 10


def test_batches_never_exceed_max_batch():
    rec = Recorder()
    batcher = MicroBatcher(rec, wait_s=0.05, max_batch=4)

    async def main() -> list[int]:
        return await asyncio.gather(*(batcher.submit(i) for i in range(10)))

    assert run(main()) == [2 * i for i in range(10)]
    sizes = [len(items) for _, items in rec.calls]
    assert sum(sizes) == 10
    assert max(sizes) <= 4
    assert sorted(x for _, items in rec.calls for x in items) == list(range(10))


def test_items_with_different_keys_never_share_a_call():
    rec = Recorder()
    batcher = MicroBatcher(rec, wait_s=0.05, max_batch=64, max_inflight=2)

    async def main() -> list[int]:
        return await asyncio.gather(*(batcher.submit(i, key=i % 3) for i in range(12)))

    assert run(main()) == [2 * i for i in range(12)]
    assert len(rec.calls) == 3
    for key, items in rec.calls:
        assert all(i % 3 == key for i in items)


def test_items_accumulate_while_a_batch_runs():
    """With one batch slot busy, later arrivals join one next batch instead of queueing."""
    gate = threading.Event()
    rec = Recorder(gate=gate)
    batcher = MicroBatcher(rec, wait_s=0.0, max_batch=64, max_inflight=1)

    async def main() -> list[int]:
        first = asyncio.ensure_future(batcher.submit(0))
        while not rec.calls:  # the first batch is running (blocked on the gate)
            await asyncio.sleep(0.001)
        rest = [asyncio.ensure_future(batcher.submit(i)) for i in range(1, 9)]
        await asyncio.sleep(0.01)
        assert batcher.queued == 8 and batcher.inflight == 1
        gate.set()
        return [await first, *(await asyncio.gather(*rest))]

    assert run(main()) == [2 * i for i in range(9)]
    assert [items for _, items in rec.calls] == [[0], list(range(1, 9))]


def test_one_bad_item_fails_only_its_own_request():
    rec = Recorder(bad=3)
    batcher = MicroBatcher(rec, wait_s=0.05, max_batch=64)

    async def main() -> list[Any]:
        return await asyncio.gather(*(batcher.submit(i) for i in range(6)), return_exceptions=True)

    out = run(main())
    assert [x for i, x in enumerate(out) if i != 3] == [0, 2, 4, 8, 10]
    assert isinstance(out[3], ValueError) and "bad item 3" in str(out[3])
    assert batcher.stats.failed_batches == 2  # the whole batch, then item 3 alone
    assert batcher.stats.items == 5


def test_failure_without_isolation_fails_the_whole_batch():
    rec = Recorder(bad=1)
    batcher = MicroBatcher(rec, wait_s=0.05, isolate_failures=False)

    async def main() -> list[Any]:
        return await asyncio.gather(*(batcher.submit(i) for i in range(3)), return_exceptions=True)

    assert all(isinstance(x, ValueError) for x in run(main()))
    assert len(rec.calls) == 1


def test_no_wait_and_batch_of_one_turns_batching_off():
    rec = Recorder()
    batcher = MicroBatcher(rec, wait_s=0.0, max_batch=1)

    async def main() -> list[int]:
        return await asyncio.gather(*(batcher.submit(i) for i in range(5)))

    assert run(main()) == [0, 2, 4, 6, 8]
    assert [items for _, items in rec.calls] == [[0], [1], [2], [3], [4]]


def test_cancelled_requests_are_left_out_of_the_batch():
    gate = threading.Event()
    rec = Recorder(gate=gate)
    batcher = MicroBatcher(rec, wait_s=0.0, max_inflight=1)

    async def main() -> list[int]:
        first = asyncio.ensure_future(batcher.submit(0))
        while not rec.calls:
            await asyncio.sleep(0.001)
        keep = asyncio.ensure_future(batcher.submit(1))
        gone = asyncio.ensure_future(batcher.submit(2))
        await asyncio.sleep(0.01)
        gone.cancel()
        gate.set()
        return [await first, await keep]

    assert run(main()) == [0, 2]
    assert [items for _, items in rec.calls] == [[0], [1]]


def test_batched_embeddings_equal_one_by_one(hashing_embedder):
    """The server's use: one embed call for concurrent queries gives each its own vector."""
    texts = [f"query number {i} about the lidar and the observatory" for i in range(20)]
    pool = ThreadPoolExecutor(1)
    batcher = MicroBatcher(
        lambda key, items: list(hashing_embedder.embed(items)), executor=pool, wait_s=0.05
    )

    async def main() -> list[np.ndarray]:
        return await asyncio.gather(*(batcher.submit(t) for t in texts))

    try:
        batched = run(main())
    finally:
        pool.shutdown()
    assert batcher.stats.batches == 1
    for text, vec in zip(texts, batched, strict=True):
        np.testing.assert_array_equal(vec, hashing_embedder.embed([text])[0])


def test_wrong_result_count_is_an_error():
    batcher = MicroBatcher(lambda key, items: items[:-1], wait_s=0.01, isolate_failures=False)

    async def main() -> list[Any]:
        return await asyncio.gather(*(batcher.submit(i) for i in range(3)), return_exceptions=True)

    out = run(main())
    assert all(isinstance(x, RuntimeError) for x in out)


class Panic(BaseException):
    """Like pyo3's PanicException: not an Exception subclass."""


def test_a_panicking_batch_fails_its_requests_instead_of_losing_them():
    def run_batch(key: Hashable, items: list[Any]) -> list[Any]:
        raise Panic("tokenizer panicked")

    batcher = MicroBatcher(run_batch, wait_s=0.01)

    async def main() -> list[Any]:
        return await asyncio.wait_for(
            asyncio.gather(*(batcher.submit(i) for i in range(3)), return_exceptions=True), 10
        )

    out = run(main())
    assert all(isinstance(x, RuntimeError) and "Panic" in str(x) for x in out)


@pytest.mark.parametrize("kwargs", [{"wait_s": -1}, {"max_batch": 0}, {"max_inflight": 0}], ids=str)
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        MicroBatcher(lambda key, items: items, **kwargs)
