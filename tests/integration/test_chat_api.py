"""The OpenAI-compatible chat API, end to end: the official ``openai`` client against the real
server (loopback subprocess, bearer token on) over the sample corpus."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from benchmarks.service.server_process import ServerHandle, server_process

openai = pytest.importorskip("openai")

pytestmark = pytest.mark.integration

TOKEN = "chat-token"
QUESTION = "Who founded Meridian Optics?"


@pytest.fixture(scope="module")
def chat_server(tmp_path_factory, sample_docs, hashing_embedder) -> Iterator[ServerHandle]:
    from graphstrata.bindings.api import Index

    path: Path = tmp_path_factory.mktemp("chat") / "sample"
    Index.create(path, embedder=hashing_embedder).insert(sample_docs)
    with server_process(path, ["--token", TOKEN]) as handle:
        yield handle
    assert "served " in handle.output


@pytest.fixture(scope="module")
def client(chat_server):
    return openai.OpenAI(base_url=f"{chat_server.url}/v1", api_key=TOKEN, max_retries=0)


def test_models_list_the_index_and_its_modes(client) -> None:
    ids = [m.id for m in client.models.list()]
    assert ids[0] == "sample"
    assert "sample:naive" in ids and "sample:graph" in ids


def test_chat_completion_answers_with_citations(client) -> None:
    completion = client.chat.completions.create(
        model="sample", messages=[{"role": "user", "content": QUESTION}]
    )
    assert completion.object == "chat.completion"
    text = completion.choices[0].message.content
    assert completion.choices[0].finish_reason == "stop"
    assert "Veld" in text
    markers = {int(m) for m in re.findall(r"\[(\d+)\]", text)}
    assert markers, text
    citations = completion.model_extra["citations"]
    assert citations and set(citations[0]) == {
        *("marker", "doc_id", "node_id", "kind", "score"),
        *("title", "metadata", "spans", "text"),
    }
    # Only the nodes the answer cites are listed (all of them, none else).
    assert {c["marker"] for c in citations} == markers
    assert any(c["doc_id"].startswith("optics/") for c in citations)
    assert all(c["text"] for c in citations)
    # The content names them too, for clients that keep only the text.
    footer = text.split("\n\nSources:\n")[1]
    assert {int(m) for m in re.findall(r"^\[(\d+)\] ", footer, re.MULTILINE)} == markers
    assert completion.usage.total_tokens > 0


def test_streamed_text_equals_non_streamed(client) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": QUESTION},
    ]
    whole = client.chat.completions.create(model="sample:naive", messages=messages)
    stream = client.chat.completions.create(model="sample:naive", messages=messages, stream=True)
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert len(chunks) > 3
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].model_extra["citations"] == whole.model_extra["citations"]


def test_stream_ends_with_done(chat_server) -> None:
    body = {"model": "sample", "stream": True, "messages": [{"role": "user", "content": QUESTION}]}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.stream(
        "POST", f"{chat_server.url}/v1/chat/completions", json=body, headers=headers, timeout=60
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        events = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]"


def test_wrong_token_and_unknown_model_are_refused(chat_server, client) -> None:
    bad = openai.OpenAI(base_url=f"{chat_server.url}/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.chat.completions.create(model="sample", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(
            model="sample:nomode", messages=[{"role": "user", "content": "x"}]
        )


def test_answer_streams_the_same_answer(chat_server) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    body = {"query": QUESTION, "mode": "naive"}
    url = f"{chat_server.url}/v1/answer"
    whole = httpx.post(url, json=body, headers=headers, timeout=60).json()
    with httpx.stream("POST", f"{url}?stream=true", json=body, headers=headers, timeout=60) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        events = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    decoded = [json.loads(e) for e in events[:-1]]
    text = "".join(e["delta"] for e in decoded if "delta" in e)
    assert text == whole["answer"] == decoded[-1]["answer"]
    assert decoded[-1]["done"] is True
    assert [n["id"] for n in decoded[-1]["nodes"]] == [n["id"] for n in whole["nodes"]]
    # Answered like chat: [n] markers, and citations of exactly the cited nodes.
    markers = {int(m) for m in re.findall(r"\[(\d+)\]", whole["answer"])}
    assert markers and {c["marker"] for c in whole["citations"]} == markers
    assert decoded[-1]["citations"] == whole["citations"]
    assert all(c["node_id"] == whole["nodes"][c["marker"] - 1]["id"] for c in whole["citations"])


def test_cli_answer_streams_with_citations(chat_server, tmp_path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "graphstrata.bindings.cli",
            "answer",
            "sample",
            QUESTION,
            "--url",
            chat_server.url,
            "--token",
            TOKEN,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    answer, *cited = out.strip().splitlines()
    assert "Tomas Veld" in answer and re.search(r"\[\d+\]", answer)
    assert any(re.match(r"\[\d+\] optics/", line) for line in cited)


#: Every member of the chat-completions request (openai 3.63) at a neutral value.
NEUTRAL: dict = {
    "presence_penalty": 0,
    "frequency_penalty": 0,
    "response_format": {"type": "text"},
    "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {}}}],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "logprobs": False,
    "top_logprobs": 0,
    "logit_bias": {},
    "metadata": {"app": "test"},
    "store": False,
    "reasoning_effort": "low",
    "seed": 7,
    "stop": ["\u0000never"],
    "user": "u-1",
    "service_tier": "auto",
    "modalities": ["text"],
    "prediction": {"type": "content", "content": "x"},
    "web_search_options": {},
    "verbosity": "medium",
    "prompt_cache_key": "k",
    "safety_identifier": "s",
    "n": 1,
    "max_tokens": 200,
    "max_completion_tokens": 100000,
    "temperature": 0.2,
    "top_p": 1,
    "functions": [{"name": "lookup", "parameters": {}}],
    "function_call": "auto",
}


def test_every_request_field_at_a_neutral_value_is_accepted(client) -> None:
    messages = [{"role": "user", "content": QUESTION}]
    completion = client.chat.completions.create(model="sample", messages=messages, **NEUTRAL)
    assert "Veld" in completion.choices[0].message.content
    stream = client.chat.completions.create(
        model="sample",
        messages=messages,
        stream=True,
        stream_options={"include_usage": True},
        **NEUTRAL,
    )
    chunks = list(stream)
    assert chunks[-1].usage.total_tokens > 0
    # An unknown member (OpenAI adds some often) is accepted too.
    extra = client.chat.completions.create(
        model="sample", messages=messages, extra_body={"a_future_member": {"x": 1}}
    )
    assert extra.choices[0].message.content == completion.choices[0].message.content


@pytest.mark.parametrize(
    ("member", "param"),
    [
        ({"n": 2}, "n"),
        ({"tools": NEUTRAL["tools"], "tool_choice": "required"}, "tool_choice"),
        (
            {
                "tools": NEUTRAL["tools"],
                "tool_choice": {"type": "function", "function": {"name": "lookup"}},
            },
            "tool_choice",
        ),
        (
            {"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
            "response_format",
        ),
        ({"response_format": {"type": "json_object"}}, "response_format"),
        ({"logprobs": True}, "logprobs"),
        ({"modalities": ["text", "audio"]}, "modalities"),
        ({"temperature": 3}, "temperature"),
        ({"seed": False}, "seed"),
    ],
)
def test_what_cannot_be_honoured_is_a_400_in_openai_shape(client, member, param) -> None:
    messages = [{"role": "user", "content": QUESTION}]
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model="sample", messages=messages, **member)
    body = err.value.body
    assert set(body) >= {"message", "type", "param", "code"}, body
    assert body["type"] == "invalid_request_error" and body["param"] == param


def test_errors_of_the_openai_routes_are_in_openai_shape(chat_server) -> None:
    url = chat_server.url
    r = httpx.get(f"{url}/v1/models", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "invalid_api_key"
    assert r.json()["error"]["type"] == "invalid_request_error"
    r = httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": "nope", "messages": [{"role": "user", "content": "x"}]},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert r.status_code == 404
    assert r.json()["error"] | {"message": ""} == {
        "message": "",
        "type": "invalid_request_error",
        "param": "model",
        "code": "model_not_found",
    }
    # The rest of the API keeps its own shape.
    r = httpx.post(
        f"{url}/v1/retrieve", json={"query": 5}, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert r.status_code == 422 and r.json()["error"]["code"] == "bad_request"


def test_a_follow_up_is_searched_with_the_conversation(client) -> None:
    first = client.chat.completions.create(
        model="sample:bm25", messages=[{"role": "user", "content": "Who founded Meridian Optics?"}]
    )
    follow_up = [
        {"role": "user", "content": "Who founded Meridian Optics?"},
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "Where did he work before that?"},
    ]
    second = client.chat.completions.create(model="sample:bm25", messages=follow_up)
    docs = {c["doc_id"] for c in second.model_extra["citations"]}
    assert "optics/meridian_founding.md" in docs, second.choices[0].message.content
    assert "Halvorsen Observatory" in second.choices[0].message.content
    # The last message alone finds other documents.
    alone = client.chat.completions.create(model="sample:bm25", messages=follow_up[-1:])
    assert "optics/meridian_founding.md" not in {
        c["doc_id"] for c in alone.model_extra["citations"]
    }


def test_stop_ends_the_answer_and_its_citations(client) -> None:
    messages = [{"role": "user", "content": QUESTION}]
    whole = client.chat.completions.create(
        model="sample", messages=messages, extra_body={"sources": False}
    )
    text = whole.choices[0].message.content
    assert "Sources:" not in text
    first = re.search(r"\[\d+\]", text)
    assert first
    cut = client.chat.completions.create(
        model="sample", messages=messages, stop=[first.group(0)], extra_body={"sources": False}
    )
    assert cut.choices[0].message.content == text[: first.start()]
    assert cut.model_extra["citations"] == []
