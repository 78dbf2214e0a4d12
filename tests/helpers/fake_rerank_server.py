"""A rerank server on 127.0.0.1 for tests (real HTTP), speaking the APIs servers expose.

* ``POST /rerank`` with ``{query, texts}`` (text-embeddings-inference) -> ``[{index, score}]``;
* ``POST /rerank``, ``/v1/rerank``, ``/v2/rerank`` with ``{model?, query, documents, top_n?}``
  (vLLM, Jina, Cohere) -> ``{results: [{index, relevance_score}]}``.

Results come sorted best first, as the servers send them. A text's score is the share of the
query's words it contains (a real, if crude, relevance function: the tests can predict the
order). A script of forced outcomes makes it misbehave: ``"500"``, ``"400"``, ``"slow"``
(answers after ``slow_seconds``), ``"malformed"`` (not JSON), ``"short"`` (one result
missing), ``"repeat"`` (an index twice), ``"nan"`` (a NaN score), ``"string"`` (a score as a
string). Every request is recorded (path and body).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_WORD = re.compile(r"[a-z0-9]+")
ROUTES = ("/rerank", "/v1/rerank", "/v2/rerank")


def overlap(query: str, text: str) -> float:
    """The share of the query's distinct words that occur in ``text``."""
    q = set(_WORD.findall(query.lower()))
    return len(q & set(_WORD.findall(text.lower()))) / max(len(q), 1)


class FakeRerankServer:
    """The server; use as a context manager.

    Parameters
    ----------
    slow_seconds:
        How long a ``"slow"`` answer takes.
    """

    def __init__(self, slow_seconds: float = 3.0):
        self.slow_seconds = slow_seconds
        self.script: deque[str] = deque()
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    def __enter__(self) -> FakeRerankServer:
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def push(self, *outcomes: str) -> None:
        """Force the next answers' outcomes, in order."""
        with self._lock:
            self.script.extend(outcomes)

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        """``(status, payload)`` for one request (a payload of type ``bytes`` is sent as is)."""
        with self._lock:
            self.requests.append((path, body))
            outcome = self.script.popleft() if self.script else "ok"
        if outcome in ("500", "400"):
            return int(outcome), {"error": f"forced {outcome}"}
        if outcome == "slow":
            time.sleep(self.slow_seconds)
        if outcome == "malformed":
            return 200, b"<html>not json"
        tei = "texts" in body
        texts = body["texts"] if tei else body["documents"]
        scored = sorted(
            ((i, overlap(body["query"], t)) for i, t in enumerate(texts)), key=lambda p: -p[1]
        )
        if not tei and body.get("top_n") is not None:
            scored = scored[: int(body["top_n"])]
        if outcome == "short":
            scored = scored[:-1]
        items: list[dict[str, Any]] = [
            {"index": i, ("score" if tei else "relevance_score"): s} for i, s in scored
        ]
        key = "score" if tei else "relevance_score"
        if outcome == "repeat" and len(items) > 1:
            items[-1]["index"] = items[0]["index"]
        if outcome == "nan" and items:
            items[0][key] = float("nan")
        if outcome == "string" and items:
            items[0][key] = "0.5"
        return 200, items if tei else {"id": "rerank-1", "results": items}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeRerankServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path not in ROUTES:
            return self._send(404, {"error": f"no route {self.path}"})
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            return self._send(400, {"error": "body is not JSON"})
        if not isinstance(body, dict) or not ("texts" in body or "documents" in body):
            return self._send(422, {"error": "expected texts or documents"})
        status, payload = self.fake.answer(self.path, body)
        self._send(status, payload)

    def _send(self, status: int, payload: Any) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
            pass
