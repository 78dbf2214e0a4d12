"""Hostile numbers and sizes from an OpenAI-compatible upstream (issue 51, defects 4 and 10).

The real loopback server answers with ``usage`` counts of ``10**30`` and with a 60 MB
content; the backend and its SQLite cache must neither crash nor store what they refuse.
"""

from __future__ import annotations

import sqlite3

import pytest

from graphstrata.bindings.llm.cache import CachedLLM
from graphstrata.bindings.registry import make_llm
from graphstrata.engine import prompts
from graphstrata.engine.interfaces import LLMError
from tests.helpers.fake_openai_server import FakeOpenAIServer

pytestmark = pytest.mark.integration

FAST = "base_delay=0.01&max_delay=0.02&max_concurrency=1"


def request():
    return prompts.summarize_request(["Meridian Optics was founded in 1921 in Bergen."], 60)


def test_usage_of_ten_to_the_thirty_is_counted_and_cached(tmp_path):
    cache_file = tmp_path / "llm-cache.sqlite"
    with FakeOpenAIServer() as server:
        server.push("usage_huge")
        llm = CachedLLM(make_llm(f"openai:m@{server.url}?{FAST}", use_cache=False), cache_file)
        (response,) = llm.complete([request()])
        llm.close()
    assert response.text
    # Not believed: counted like a missing usage, as the engine counts tokens.
    assert 0 < response.prompt_tokens < 10_000 and 0 < response.completion_tokens < 10_000
    with sqlite3.connect(cache_file) as conn:
        rows = conn.execute("SELECT prompt_tokens, completion_tokens FROM responses").fetchall()
    assert rows == [(response.prompt_tokens, response.completion_tokens)]


def test_a_60_mb_answer_is_refused_and_not_cached(tmp_path):
    cache_file = tmp_path / "llm-cache.sqlite"
    with FakeOpenAIServer() as server:
        server.push("huge")
        llm = CachedLLM(make_llm(f"openai:m@{server.url}?{FAST}", use_cache=False), cache_file)
        with pytest.raises(LLMError, match="larger than max_response_bytes=8,388,608"):
            llm.complete([request()])
        assert server.seen.chat_requests == 1  # refused, not asked again
        assert len(llm.cache) == 0
        llm.close()
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) < 1 << 20


def test_the_bound_is_a_setting(tmp_path):
    with FakeOpenAIServer(huge_bytes=20_000) as server:
        server.push("huge", "huge")
        small = make_llm(f"openai:m@{server.url}?{FAST}&max_response_bytes=10000", use_cache=False)
        with pytest.raises(LLMError, match="max_response_bytes=10,000"):
            small.complete([request()])
        small.close()
        default = make_llm(f"openai:m@{server.url}?{FAST}", use_cache=False)
        (response,) = default.complete([request()])
        default.close()
    assert response.text == "x" * 20_000


def test_a_nonpositive_bound_is_a_config_error():
    from graphstrata.engine.config import ConfigError

    with pytest.raises(ConfigError, match="max_response_bytes"):
        make_llm("openai:m@http://127.0.0.1:9/v1?max_response_bytes=0", use_cache=False)
