"""The SQLite response cache: keys, hits, per-answer writes, threads, bad files."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

import pytest

from graphstrata.bindings.llm.cache import CachedLLM, LLMCache, request_key
from graphstrata.bindings.llm.extractive import ExtractiveLLM
from graphstrata.bindings.registry import make_llm
from graphstrata.engine import prompts
from graphstrata.engine.interfaces import LLMError, LLMRequest, LLMResponse

TEXTS = [
    "The Halvorsen Observatory sits on Mount Kjell above Brekkvik.",
    "Meridian Optics polishes mirrors in its hall by Lake Sundra.",
    "The ferry crosses Lake Sundra twice a day in summer.",
    "Snowpack surveys started in 1961 on the Sundra plateau.",
]


class CountingExtractive(ExtractiveLLM):
    """The real extractive backend, counting the prompts it is asked."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def complete(self, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
        self.asked.extend(r.prompt for r in requests)
        return super().complete(requests)


class StreamingThenFailing(CountingExtractive):
    """Answers ``ok`` requests one by one through ``on_answer``, then fails (a lost server)."""

    streams_answers = True

    def __init__(self, ok: int) -> None:
        super().__init__()
        self.ok = ok

    def complete(self, requests, on_answer=None):  # type: ignore[override]
        out = []
        for i, request in enumerate(requests):
            if i >= self.ok:
                raise LLMError("server went away")
            (response,) = super().complete([request])
            if on_answer is not None:
                on_answer(i, response)
            out.append(response)
        return out


def summaries(texts: Sequence[str] = TEXTS) -> list[LLMRequest]:
    return [prompts.summarize_request([t], 40) for t in texts]


def test_key_depends_on_every_field():
    base = LLMRequest("decompose", "p", 100, schema={"type": "object"}, temperature=0.0)
    key = request_key("openai", "m", base)
    assert key == request_key("openai", "m", base)
    variants = [
        request_key("vllm", "m", base),
        request_key("openai", "m2", base),
        request_key("openai", "m", LLMRequest("decompose", "q", 100, schema={"type": "object"})),
        request_key("openai", "m", LLMRequest("decompose", "p", 100, schema={"type": "array"})),
        request_key("openai", "m", LLMRequest("decompose", "p", 100, schema=None)),
        request_key("openai", "m", LLMRequest("decompose", "p", 101, schema={"type": "object"})),
        request_key(
            "openai", "m", LLMRequest("decompose", "p", 100, {"type": "object"}, temperature=0.7)
        ),
    ]
    assert key not in variants and len(set(variants)) == len(variants)
    # The task label and the raw inputs do not shape a generative answer: same key.
    same = LLMRequest("summarize", "p", 100, schema={"type": "object"}, inputs=("x",))
    assert request_key("openai", "m", same) == key


def test_second_run_is_all_hits_and_asks_nothing(tmp_path):
    inner = CountingExtractive()
    llm = CachedLLM(inner, tmp_path / "c.sqlite")
    first = llm.complete(summaries())
    assert len(inner.asked) == 4 and not any(r.cached for r in first)
    again = CachedLLM(CountingExtractive(), tmp_path / "c.sqlite")  # a new process, same file
    second = again.complete(summaries())
    assert again.llm.asked == []  # type: ignore[attr-defined]
    assert all(r.cached for r in second)
    assert [r.text for r in second] == [r.text for r in first]
    assert [r.prompt_tokens for r in second] == [r.prompt_tokens for r in first]
    assert len(again.cache) == 4


def test_duplicates_in_one_batch_are_paid_once(tmp_path):
    inner = CountingExtractive()
    llm = CachedLLM(inner, tmp_path / "c.sqlite")
    batch = summaries([TEXTS[0], TEXTS[1], TEXTS[0]])
    out = llm.complete(batch)
    assert len(inner.asked) == 2
    assert [r.cached for r in out] == [False, False, True]
    assert out[0].text == out[2].text


def test_answers_are_stored_as_they_arrive(tmp_path):
    path = tmp_path / "c.sqlite"
    failing = CachedLLM(StreamingThenFailing(ok=3), path)
    with pytest.raises(LLMError):
        failing.complete(summaries())
    assert len(LLMCache(path)) == 3
    resumed = CachedLLM(CountingExtractive(), path)
    out = resumed.complete(summaries())
    assert resumed.llm.asked == [summaries()[3].prompt]  # type: ignore[attr-defined]
    assert [r.cached for r in out] == [True, True, True, False]


def test_wal_mode_and_concurrent_threads(tmp_path):
    cache = LLMCache(tmp_path / "c.sqlite")
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            for i in range(40):
                key = f"{t}-{i}"
                cache.put(key, "b", "m", "summarize", LLMResponse(f"answer {key}", 3, 2))
                assert cache.get_many([key])[key].text == f"answer {key}"
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert len(cache) == 8 * 40
    mode = sqlite3.connect(tmp_path / "c.sqlite").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_a_file_that_is_not_a_cache_is_a_clear_error(tmp_path):
    bad = tmp_path / "c.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(LLMError, match="--no-cache"):
        CachedLLM(CountingExtractive(), bad).complete(summaries())


def test_make_llm_wraps_generative_backends_only(tmp_path):
    assert isinstance(make_llm("extractive", cache_path=tmp_path / "c.sqlite"), ExtractiveLLM)
    spec = "openai:m@http://127.0.0.1:9/v1"
    cached = make_llm(spec, cache_path=tmp_path / "c.sqlite")
    assert isinstance(cached, CachedLLM) and cached.name == spec
    assert not isinstance(
        make_llm(spec, cache_path=tmp_path / "c.sqlite", use_cache=False), CachedLLM
    )
    assert not isinstance(make_llm(spec), CachedLLM)
    assert not (tmp_path / "c.sqlite").exists()  # opened on first use only
