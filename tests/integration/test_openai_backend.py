"""The ``openai`` backend against a real HTTP server on loopback (tests/helpers/fake_openai_server.py).

Concurrency bound, retries (429, 5xx, dropped connections, timeouts, Retry-After), JSON mode
negotiation, JSON repair and re-ask, token accounting, the response cache (zero HTTP calls on
a rerun, resume after an interruption), use from inside a running event loop, and the
``/v1/embeddings`` embedder.
"""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from graphstrata.bindings.llm.cache import LLMCache
from graphstrata.bindings.registry import make_embedder, make_llm
from graphstrata.engine import prompts
from graphstrata.engine.interfaces import EmbedderError, LLMError
from graphstrata.engine.tokens import count_tokens
from tests.helpers.fake_openai_server import FakeOpenAIServer

pytestmark = pytest.mark.integration

FAST = "base_delay=0.01&max_delay=0.05"


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv
    assert not srv.overflowed


@pytest.fixture(scope="module")
def sentences(request) -> list[str]:
    with open("examples/sample.jsonl", encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh if line.strip()]
    out = []
    for doc in docs:
        for line in doc["text"].splitlines():
            if len(line.split()) > 8 and not line.startswith("#"):
                out.append(line.split(". ")[0].strip().rstrip(".") + ".")
                break
    return out


def llm_for(server: FakeOpenAIServer, options: str = "", **kwargs):
    query = f"?{FAST}" + (f"&{options}" if options else "")
    return make_llm(f"openai:fake-model@{server.url}{query}", **kwargs)


def test_batch_runs_concurrently_within_the_bound_and_keeps_order(server, sentences):
    server.delay = 0.3
    llm = llm_for(server, "max_concurrency=3")
    batch = [prompts.summarize_request([s], 60) for s in sentences[:12]]
    out = llm.complete(batch)
    assert server.seen.max_in_flight == 3  # used the bound, never exceeded it
    assert server.seen.chat_requests == 12
    for sentence, response in zip(sentences[:12], out, strict=True):
        assert response.text.startswith(sentence[:40])  # each answer is its own prompt's


def test_429_5xx_and_dropped_connections_are_retried(server, sentences):
    server.retry_after = "0"
    server.push("429", "500", "drop", "503")
    llm = llm_for(server, "max_concurrency=1")
    out = llm.complete([prompts.summarize_request([s], 60) for s in sentences[:3]])
    assert len(out) == 3 and all(r.text for r in out)
    assert server.seen.chat_requests == 3 + 4
    assert server.seen.statuses[429] == 1 and server.seen.statuses[500] == 1
    assert llm.counters["retries"] == 4


def test_retry_after_is_honoured(server, sentences):
    server.retry_after = "1"
    server.push("429")
    llm = make_llm(f"openai:m@{server.url}?base_delay=0&max_delay=0")
    llm.complete([prompts.summarize_request(sentences[:1], 60)])
    first, second = server.seen.arrivals
    assert second - first >= 0.9  # without Retry-After the backoff here would be 0 s


def test_timeouts_are_retried(server, sentences):
    server.slow_seconds = 1.5
    server.push("slow")
    llm = llm_for(server, "timeout=0.3&max_concurrency=1")
    (response,) = llm.complete([prompts.summarize_request(sentences[:1], 60)])
    assert response.text and llm.counters["retries"] >= 1


def test_a_server_that_keeps_failing_gives_a_clear_error(server, sentences):
    server.fail_after = 0
    llm = llm_for(server, "max_retries=2&max_concurrency=1")
    with pytest.raises(LLMError, match=r"no answer after 3 attempts.*HTTP 500"):
        llm.complete([prompts.summarize_request(sentences[:1], 60)])
    assert server.seen.chat_requests == 3


def test_client_errors_are_not_retried_and_the_key_is_sent(server, sentences, monkeypatch):
    server.api_key = "sk-local"
    with pytest.raises(LLMError, match="HTTP 401"):
        llm_for(server).complete([prompts.summarize_request(sentences[:1], 60)])
    assert server.seen.requests == 1 and server.seen.statuses[401] == 1
    monkeypatch.setenv("GRAPHSTRATA_API_KEY", "sk-local")
    (response,) = llm_for(server).complete([prompts.summarize_request(sentences[:1], 60)])
    assert response.text and server.seen.headers[-1]["authorization"] == "Bearer sk-local"


def test_json_schema_mode_is_sent_when_the_server_accepts_it(server, sentences):
    out = llm_for(server).complete([prompts.decompose_request(" ".join(sentences[:3]), 512)])
    fmt = server.seen.bodies[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"] == prompts.DECOMPOSE_SCHEMA
    units = json.loads(out[0].text)["semantic_units"]
    assert len(units) == 3 and all({"text", "entities", "relationships"} <= set(u) for u in units)


def test_json_mode_falls_back_and_remembers(server, sentences):
    server.reject_formats = {"json_schema", "json_object"}
    llm = llm_for(server, "max_concurrency=1")
    batch = [prompts.query_entities_request(f"Where is {s}") for s in sentences[:4]]
    out = llm.complete(batch)
    assert llm.json_mode == "prompt" and out[0].meta["json_mode"] == "prompt"
    assert server.seen.statuses[400] == 2  # one refusal per mode, then remembered
    assert "response_format" not in server.seen.bodies[-1]
    assert all("entities" in json.loads(r.text) for r in out)
    server.reset()
    llm.complete(batch[:2])
    assert server.seen.statuses[400] == 0 and server.seen.chat_requests == 2


def test_other_400s_do_not_change_the_json_mode(server):
    server.push("too_long")
    llm = llm_for(server)
    with pytest.raises(LLMError, match="maximum context length"):
        llm.complete([prompts.query_entities_request("Who founded the Halvorsen Observatory?")])
    assert llm.json_mode == "json_schema" and server.seen.chat_requests == 1


def test_malformed_json_is_repaired_or_asked_again(server):
    llm = llm_for(server)
    ask = [prompts.query_entities_request("Who runs Meridian Optics in Brekkvik?")]
    server.push("malformed")
    (repaired,) = llm.complete(ask)
    assert repaired.meta.get("repaired") and not repaired.meta.get("reasked")
    assert server.seen.chat_requests == 1
    for bad in ("garbage", "wrong_keys"):
        server.reset()
        server.push(bad, "ok")
        (reasked,) = llm.complete(ask)
        assert reasked.meta.get("reasked") and server.seen.chat_requests == 2
        assert json.loads(reasked.text) == {"entities": ["Meridian Optics", "Brekkvik"]}
        assert "could not be used" in server.seen.bodies[1]["messages"][-1]["content"]
    assert json.loads(repaired.text) == {"entities": ["Meridian Optics", "Brekkvik"]}


def test_unusable_json_after_the_reask_is_handed_on_marked_unusable(server, sentences):
    # Issue 50: one bad answer no longer fails a whole build; the engine counts it and holds
    # the stage to the index's yield floor (tests/integration/test_llm_yield.py).
    server.push("garbage", "garbage")
    llm = llm_for(server, "max_concurrency=1")
    (answer,) = llm.complete(
        [prompts.query_entities_request("Who founded the Halvorsen Observatory?")]
    )
    assert server.seen.chat_requests == 2
    assert answer.text == "Sorry, I cannot help with that."
    assert "expected a JSON object" in answer.meta["unusable"] and answer.meta["reasked"]
    assert llm.counters["unusable"] == 1


def test_token_counts_are_the_servers_usage_summed(server, sentences):
    llm = llm_for(server, "max_concurrency=4")
    server.push("garbage")  # the re-ask's tokens count too
    batch = [prompts.summarize_request([s], 60) for s in sentences[:5]]
    batch.append(prompts.query_entities_request("Who founded the Halvorsen Observatory?"))
    out = llm.complete(batch)
    assert sum(r.prompt_tokens for r in out) == server.seen.prompt_tokens
    assert sum(r.completion_tokens for r in out) == server.seen.completion_tokens
    assert server.seen.prompt_tokens > 0


def test_without_usage_tokens_are_counted_with_tiktoken(server, sentences):
    server.report_usage = False
    (response,) = llm_for(server).complete([prompts.summarize_request(sentences[:1], 60)])
    request = prompts.summarize_request(sentences[:1], 60)
    assert response.prompt_tokens == count_tokens(request.prompt)
    assert response.completion_tokens == count_tokens(response.text)


def test_cache_rerun_makes_zero_http_calls(server, sentences, tmp_path):
    cache = tmp_path / "llm-cache.sqlite"
    batch = [prompts.summarize_request([s], 60) for s in sentences[:6]]
    batch.append(prompts.decompose_request(sentences[0], 512))
    first = llm_for(server, cache_path=cache).complete(batch)
    assert server.seen.chat_requests == 7 and not any(r.cached for r in first)
    server.reset()
    second = llm_for(server, cache_path=cache).complete(batch)
    assert server.seen.requests == 0
    assert all(r.cached for r in second) and [r.text for r in second] == [r.text for r in first]
    # --no-cache goes to the server again.
    llm_for(server, cache_path=cache, use_cache=False).complete(batch[:2])
    assert server.seen.chat_requests == 2


def test_interrupted_batch_resumes_paying_only_for_the_rest(server, sentences, tmp_path):
    cache = tmp_path / "llm-cache.sqlite"
    batch = [prompts.summarize_request([s], 60) for s in sentences[:10]]
    server.fail_after = 6
    with pytest.raises(LLMError):
        llm_for(server, "max_retries=1&max_concurrency=2", cache_path=cache).complete(batch)
    stored = len(LLMCache(cache))
    assert stored == 6  # every answer that arrived was written at once
    server.fail_after = None
    server.reset()
    out = llm_for(server, cache_path=cache).complete(batch)
    assert server.seen.chat_requests == 10 - stored
    assert sum(r.cached for r in out) == stored


def test_works_from_inside_a_running_event_loop(server, sentences):
    llm = llm_for(server)

    async def handler() -> list:
        # A blocking call from async code, as a FastAPI endpoint would make it.
        return llm.complete([prompts.summarize_request([s], 60) for s in sentences[:2]])

    out = asyncio.run(handler())
    assert len(out) == 2 and all(r.text for r in out)
    llm.close()
    assert llm.complete([prompts.summarize_request(sentences[:1], 60)])[0].text  # reopens


def test_openai_embedder_batches_orders_and_normalizes(server, sentences):
    emb = make_embedder(f"openai-embed:fake-embed@{server.url}?batch_size=4")
    assert emb.dim == 32  # probed once
    vecs = emb.embed(sentences[:10])
    assert vecs.shape == (10, 32) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    single = emb.embed([sentences[5]])
    np.testing.assert_allclose(single[0], vecs[5], atol=1e-6)  # rows follow "index", not order
    assert server.seen.embedding_requests == 1 + 3 + 1


def test_openai_embedder_errors_are_clear(server):
    server.api_key = "sk-other"
    emb = make_embedder(f"openai-embed:fake-embed@{server.url}?dim=32&max_retries=0")
    with pytest.raises(EmbedderError, match="HTTP 401"):
        emb.embed(["text"])
