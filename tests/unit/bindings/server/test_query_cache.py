"""QueryVectorCache: LRU eviction, hit/miss counting, per-embedder keys, thread safety; and the
QueryRunner in front of a real (hashing) embedder: a repeated query is not embedded again."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from graphstrata.bindings.server.metrics import ServiceMetrics
from graphstrata.bindings.server.runtime import QueryRunner, QueryVectorCache
from graphstrata.bindings.server.settings import ServerSettings
from graphstrata.engine.config import ConfigError


def vec(i: float) -> np.ndarray:
    return np.full(4, i, dtype=np.float32)


def test_least_recently_used_is_evicted():
    cache = QueryVectorCache(2)
    cache.put("e", "a", vec(1))
    cache.put("e", "b", vec(2))
    assert cache.get("e", "a") is not None  # "a" is now the most recent; "b" the oldest
    cache.put("e", "c", vec(3))
    assert cache.get("e", "b") is None
    np.testing.assert_array_equal(cache.get("e", "a"), vec(1))
    np.testing.assert_array_equal(cache.get("e", "c"), vec(3))
    assert len(cache) == 2
    assert cache.evictions == 1


def test_hits_and_misses_are_counted():
    cache = QueryVectorCache(8)
    assert cache.get("e", "q") is None
    cache.put("e", "q", vec(1))
    assert cache.get("e", "q") is not None
    assert cache.get("e", "q") is not None
    assert cache.get("e", "other") is None
    stats = cache.stats()
    assert (stats["hits"], stats["misses"], stats["entries"]) == (2, 2, 1)
    assert stats["hit_rate"] == 0.5


def test_key_is_embedder_and_exact_text():
    cache = QueryVectorCache(8)
    cache.put("minilm-onnx", "Who won?", vec(1))
    assert cache.get("hashing-64", "Who won?") is None
    assert cache.get("minilm-onnx", "who won?") is None
    assert cache.get("minilm-onnx", "Who won? ") is None
    np.testing.assert_array_equal(cache.get("minilm-onnx", "Who won?"), vec(1))


def test_put_overwrites_and_stored_vectors_are_read_only_copies():
    cache = QueryVectorCache(4)
    source = vec(1)
    cache.put("e", "q", source)
    source[:] = 9  # the caller's array changes; the cached copy does not
    got = cache.get("e", "q")
    assert got is not None
    np.testing.assert_array_equal(got, vec(1))
    with pytest.raises(ValueError):
        got[0] = 5
    cache.put("e", "q", vec(2))
    np.testing.assert_array_equal(cache.get("e", "q"), vec(2))
    assert len(cache) == 1


def test_capacity_zero_stores_nothing():
    cache = QueryVectorCache(0)
    cache.put("e", "q", vec(1))
    assert cache.get("e", "q") is None
    assert len(cache) == 0


@pytest.mark.parametrize("bad", [-1, 1.5, True, "8"])
def test_bad_capacity_is_refused(bad):
    with pytest.raises(ValueError, match="capacity"):
        QueryVectorCache(bad)


@pytest.mark.parametrize("bad", [-1, 2.0, True])
def test_settings_refuse_bad_cache_size(bad):
    with pytest.raises(ConfigError, match="query_cache_size"):
        ServerSettings(query_cache_size=bad).check()


def test_threads_see_consistent_counts_and_bounded_size():
    cache = QueryVectorCache(50)
    threads, rounds = 4, 2000
    barrier = threading.Barrier(threads)
    wrong: list[str] = []

    def work(t: int) -> None:
        rng = np.random.default_rng(t)
        barrier.wait()
        for _ in range(rounds):
            key = str(int(rng.integers(0, 80)))
            got = cache.get("e", key)
            if got is None:
                cache.put("e", key, vec(float(key)))
            elif got[0] != float(key):
                wrong.append(key)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert not wrong
    assert cache.hits + cache.misses == threads * rounds
    assert cache.hits > 0 and cache.misses > 0
    assert len(cache) == 50
    # A miss stores one vector, which evicts one once the cache is full (two threads that
    # miss the same key at once store it twice, the second time without an eviction).
    assert 0 < cache.evictions <= cache.misses - 50


class CountingEmbedder:
    """The hashing embedder, counting the texts it embeds."""

    def __init__(self, inner):
        self.inner = inner
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts):
        self.texts.extend(texts)
        return self.inner.embed(texts)


def test_runner_embeds_a_repeated_query_once(make_index, sample_docs, hashing_embedder):
    index = make_index()
    index.insert(sample_docs[:5])
    engine = index.engine
    counting = CountingEmbedder(hashing_embedder)
    engine.embedder = counting
    metrics = ServiceMetrics(index="ix")
    runner = QueryRunner(index, ServerSettings(query_cache_size=16), metrics)
    try:

        async def main():
            first = await runner.retrieve("solar power storage", "naive", None, 3, {})
            again = await runner.retrieve("solar power storage", "naive", None, 3, {})
            return first, again

        first, again = asyncio.run(main())
        assert counting.texts == ["solar power storage"]
        assert [n.id for n in first.nodes] == [n.id for n in again.nodes]
        results = runner.query_batch(
            ["solar power storage", "ocean tides", "ocean tides"], "naive", None, 3, {}
        )
        assert len(results) == 3
        assert counting.texts == ["solar power storage", "ocean tides"]
        q = runner.stats()["query_cache"]
        assert (q["hits"], q["misses"], q["entries"]) == (2, 3, 2)
        of_ix = {"index": "ix"}  # every per-index series names its index (issue 47)
        assert metrics.registry.get_sample_value("graphstrata_query_cache_hits_total", of_ix) == 2
        assert metrics.registry.get_sample_value("graphstrata_query_cache_misses_total", of_ix) == 3
    finally:
        runner.close()
