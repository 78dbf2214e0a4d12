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
    assert citations and set(citations[0]) == {"marker", "doc_id", "node_id", "kind", "score"}
    cited = {c["marker"] for c in citations}
    assert markers <= cited
    assert any(c["doc_id"].startswith("optics/") for c in citations if c["marker"] in markers)
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
