"""Malformed 200 responses from an OpenAI-compatible server (issue: no crash on a bad upstream).

Each shape in ``BAD_SHAPES`` is sent by the real loopback server; the backend must retry it
like any failed exchange and, when it keeps coming, raise ``LLMError`` naming the problem,
with sibling requests cancelled cleanly (no "Task exception was never retrieved").
"""

from __future__ import annotations

import gc
import logging

import pytest

from graphstrata.bindings.registry import make_llm
from graphstrata.engine import prompts
from graphstrata.engine.interfaces import LLMError
from tests.helpers.fake_openai_server import BAD_SHAPES, FakeOpenAIServer

pytestmark = pytest.mark.integration

FAST = "base_delay=0.01&max_delay=0.02"


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


def request():
    return prompts.summarize_request(["Meridian Optics was founded in 1921 in Bergen."], 60)


@pytest.mark.parametrize(
    "shape", sorted(set(BAD_SHAPES) - {"usage_string", "usage_list", "usage_bool"})
)
def test_a_bad_shape_is_retried_then_answered(server, shape):
    server.push(shape)
    llm = make_llm(f"openai:m@{server.url}?{FAST}&max_concurrency=1")
    (response,) = llm.complete([request()])
    assert isinstance(response.text, str) and response.text
    assert llm.counters["retries"] == 1


@pytest.mark.parametrize("shape", ["usage_string", "usage_list", "usage_bool"])
def test_bad_usage_falls_back_to_counting_tokens(server, shape):
    server.push(shape)
    llm = make_llm(f"openai:m@{server.url}?{FAST}&max_concurrency=1")
    (response,) = llm.complete([request()])
    assert response.text and response.prompt_tokens > 0 and response.completion_tokens > 0
    assert llm.counters["retries"] == 0


def test_a_bad_shape_that_keeps_coming_is_an_llm_error(server):
    server.push(*["content_list"] * 3)
    llm = make_llm(f"openai:m@{server.url}?{FAST}&max_retries=2&max_concurrency=1")
    with pytest.raises(LLMError, match=r"no answer after 3 attempts.*unreadable 200 response"):
        llm.complete([request()])


def test_concurrent_failures_are_all_retrieved(server, caplog):
    server.push(*["body_list"] * 40)
    llm = make_llm(f"openai:m@{server.url}?{FAST}&max_retries=0&max_concurrency=4")
    with caplog.at_level(logging.ERROR, logger="asyncio"), pytest.raises(LLMError):
        llm.complete([request() for _ in range(8)])
    llm.close()
    gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
