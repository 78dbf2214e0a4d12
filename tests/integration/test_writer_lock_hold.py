"""The server's writer does not hold the index lock through a slow LLM (issue 51, leftover;
decision 0032): while an insert waits on its upstream LLM inside ``graphstrata serve``, the
CLI's ``insert`` and ``compact`` on the same index run and finish, and nothing is lost.

Real pieces: the service's uvicorn server, a loopback OpenAI-protocol LLM held at a gate
(every chat request waits until the test opens it), the ``graphstrata`` CLI in subprocesses,
real index files.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import pytest

from graphstrata.bindings.api import Index
from tests.helpers import REPO
from tests.helpers.cli import run
from tests.helpers.fake_openai_server import FakeOpenAIServer
from tests.helpers.servers import threaded_server

pytestmark = pytest.mark.integration

CITY = REPO / "examples" / "sample" / "city"


class GatedLLM(FakeOpenAIServer):
    """The loopback LLM; each chat request waits for :attr:`gate` (a slow upstream whose
    slowness the test ends)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.gate = threading.Event()

    def chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        self.entered.set()
        self.gate.wait(120)
        return super().chat(body)


def _operation(c: httpx.Client, op_id: str) -> dict[str, Any]:
    return c.get(f"/v1/operations/{op_id}").json()


def test_cli_insert_and_compact_finish_while_the_server_waits_on_its_llm(tmp_path, monkeypatch):
    index = tmp_path / "ix"
    run("index", str(CITY), "--out", str(index), "--no-heterograph")
    source = tmp_path / "cli.jsonl"
    cli_doc = {"doc_id": "from-cli", "text": "Brekkvik's quartzite ferry leaves at dawn."}
    source.write_text(json.dumps(cli_doc) + "\n")
    server_doc = {
        "doc_id": "from-server",
        "text": "The Ostmark lighthouse keeper logs every ship that passes the cape.",
    }
    with GatedLLM() as llm:
        monkeypatch.setenv("GRAPHSTRATA_EMBEDDER", "hashing:64")
        monkeypatch.setenv("GRAPHSTRATA_LLM", f"openai:fake@{llm.url}?max_retries=0&timeout=120")
        with threaded_server(index) as (url, _app, _server):
            monkeypatch.setenv("GRAPHSTRATA_LLM", "extractive")  # the CLI's own LLM
            with httpx.Client(base_url=url, timeout=60, trust_env=False) as c:
                resp = c.post("/v1/documents", json=[server_doc])
                assert resp.status_code == 202, resp.text
                op_id = resp.json()["id"]
                try:
                    assert llm.entered.wait(60), "the server's insert never reached its LLM"
                    # Without --wait: each fails at once if the server holds the lock.
                    inserted = run("insert", str(index), str(source), check=False)
                    assert inserted.returncode == 0, inserted.stderr
                    compacted = run("compact", str(index), check=False)
                    assert compacted.returncode == 0, compacted.stderr
                    assert _operation(c, op_id)["status"] == "running"
                finally:
                    llm.gate.set()
                deadline = time.monotonic() + 120
                while (op := _operation(c, op_id))["status"] in ("queued", "running"):
                    assert time.monotonic() < deadline, op
                    time.sleep(0.05)
                assert op["status"] == "succeeded", op
                assert any("prepared again" in note for note in op["report"]["notes"]), op
                for doc_id in ("from-cli", "from-server"):
                    assert c.get(f"/v1/documents/{doc_id}").status_code == 200, doc_id
    reopened = Index.open(index, embedder="hashing:64", llm="extractive")
    doc_ids = {doc_id for doc_id, _ in reopened.pinned().documents()}
    assert {"from-cli", "from-server"} <= doc_ids
