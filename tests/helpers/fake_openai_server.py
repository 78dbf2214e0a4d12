"""A small OpenAI-compatible HTTP server on 127.0.0.1 for tests (not a mock: real HTTP).

It speaks the wire format of ``POST /v1/chat/completions`` and ``POST /v1/embeddings``,
answers the engine's prompts plausibly (by recombining sentences of the prompt, with valid
JSON for the JSON stages), and can be told to misbehave: a script of forced outcomes
(``"429"``, ``"500"``, ``"malformed"``, ``"garbage"``, ``"wrong_keys"``, ``"slow"``,
``"drop"``, ``"too_long"``, and the answers of weak or reasoning models: ``"empty"``,
``"truncated"``, ``"think"``, ``"nothing"``), the same forced for every request of a task
(``task_outcomes``), a fixed delay, persistent failure after N answers, rejecting
``response_format`` with 400, omitting ``usage``. It records every request so tests can count calls, see the
largest number of requests in flight at once, and sum the token usage it reported.

Run it by hand with ``python -m tests.helpers.fake_openai_server`` to point the CLI at it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from graphstrata.engine import prompts

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_NAME = re.compile(r"\b[A-Z][a-zA-Z'’\-]+(?:\s+(?:of\s+|the\s+)?[A-Z][a-zA-Z'’\-]+)*|\b\d{4}\b")
_NOT_NAMES = {"The", "A", "An", "In", "On", "At", "It", "Its", "This", "That", "He", "She",
              "They", "When", "Where", "Which", "Who", "What", "How", "After", "Before", "Since",
              "Write", "Answer", "Text", "Texts", "Facts", "Relationships", "Question", "Context",
              "List", "Identify", "Use", "For", "Each", "JSON", "If", "Be"}  # fmt: skip

#: Head of each engine prompt -> its task (the fake recognizes the engine's own prompts).
_TASK_HEADS = (
    (prompts.SUMMARY_PROMPT.split("{", 1)[0], "summarize"),
    (prompts.DECOMPOSE_PROMPT.split("\n", 1)[0], "decompose"),
    (prompts.ATTRIBUTE_PROMPT.split('"', 1)[0], "attribute"),
    (prompts.COMMUNITY_PROMPT.split("\n", 1)[0], "community"),
    (prompts.QUERY_ENTITIES_PROMPT.split("\n", 1)[0], "query_entities"),
    (prompts.ANSWER_PROMPT.split("\n", 1)[0], "answer"),
)


#: Scripted outcomes that end in a 200 answer.
def _with_message(reply: dict[str, Any], **fields: Any) -> dict[str, Any]:
    reply["choices"][0]["message"].update(fields)
    return reply


#: 200 answers whose shape is not a chat completion, as servers that claim compatibility
#: send them: each must become a retried ``LLMError``, never a crash of the client.
BAD_SHAPES: dict[str, Any] = {
    "usage_string": lambda r: {**r, "usage": "12 tokens"},
    "usage_list": lambda r: {**r, "usage": [1, 2]},
    "usage_bool": lambda r: {**r, "usage": {"prompt_tokens": True, "completion_tokens": "3"}},
    "content_list": lambda r: _with_message(r, content=[{"type": "text", "text": "x"}]),
    "content_number": lambda r: _with_message(r, content=42),
    "message_string": lambda r: {**r, "choices": [{"index": 0, "message": "hello"}]},
    "choices_empty": lambda r: {**r, "choices": []},
    "choices_dict": lambda r: {**r, "choices": {"0": r["choices"][0]}},
    "body_list": lambda r: [r],
    "body_string": lambda r: "ok",
}

#: Well-formed 200 answers with hostile numbers or sizes (issue 51): usage counts of 10**30,
#: and a content of ``huge_bytes`` bytes.
ODD_ANSWERS: dict[str, Any] = {
    "usage_huge": lambda r, _: {
        **r,
        "usage": {"prompt_tokens": 10**30, "completion_tokens": 10**30, "total_tokens": 10**31},
    },
    "huge": lambda r, size: _with_message(r, content="x" * size),
}

#: Answers of weak or reasoning models: nothing at all, JSON cut off at ``max_tokens``, the
#: answer after a ``<think>`` block (holding a decoy object), and valid JSON holding nothing.
MODEL_ANSWERS = ("empty", "truncated", "think", "nothing")
_EMPTY_JSON = {"decompose": '{"semantic_units": []}', "community": '{"high_level_elements": []}'}

_ANSWERING = frozenset(
    {"ok", "malformed", "garbage", "wrong_keys", "slow", *BAD_SHAPES, *ODD_ANSWERS, *MODEL_ANSWERS}
)


def model_answer(outcome: str, task: str, text: str) -> str:
    """``text`` as a weak or reasoning model would have answered it (:data:`MODEL_ANSWERS`)."""
    if outcome == "empty":
        return ""
    if outcome == "truncated":
        return text[: max(1, len(text) * 2 // 3)]
    if outcome == "think":
        decoy = _EMPTY_JSON.get(task, "nothing yet")
        return f"<think>The user wants JSON. Maybe {decoy}? No, list them all.</think>\n{text}"
    return _EMPTY_JSON.get(task, "")


def detect_task(prompt: str) -> str:
    for head, task in _TASK_HEADS:
        if prompt.startswith(head):
            return task
    return "unknown"


def sentences(text: str) -> list[str]:
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip().lstrip("-#* ").strip()
        if line:
            out.extend(s.strip() for s in _SENTENCE.split(line) if s.strip())
    return out


def names(text: str) -> list[str]:
    found = []
    for match in _NAME.finditer(text):
        words = match.group(0).split()
        while words and words[0] in _NOT_NAMES:
            words = words[1:]
        if words:
            found.append(" ".join(words))
    return list(dict.fromkeys(found))


def _section(prompt: str, marker: str) -> str:
    _, _, rest = prompt.partition(marker)
    # A re-ask repeats the prompt, then adds the complaint: keep only the original part.
    return rest.split("\n\nYour previous answer could not be used", 1)[0]


def plausible_answer(prompt: str) -> tuple[str, Any]:
    """(task, answer) for one engine prompt: a string, or a dict for the JSON stages."""
    task = detect_task(prompt)
    if task == "summarize":
        body = _section(prompt, _TASK_HEADS[0][0])
        return task, " ".join(sentences(body)[:3]) or "Nothing to summarize."
    if task == "decompose":
        body = _section(prompt, "Text:\n")
        units = []
        for sent in sentences(body)[:12]:
            ents = names(sent)[:6]
            rels = [[a, "appears with", b] for a, b in itertools.pairwise(ents)]
            units.append({"text": sent, "entities": ents, "relationships": rels})
        return task, {"semantic_units": units}
    if task == "attribute":
        entity = prompt.split('"', 2)[1] if prompt.count('"') >= 2 else "entity"
        facts_part = _section(prompt, "Facts:\n").split("\n\nRelationships:", 1)[0]
        facts = sentences(facts_part)[:3]
        return task, f"{entity}: " + " ".join(facts)
    if task == "community":
        texts = sentences(_section(prompt, "Texts:\n"))
        common = Counter(n for t in texts for n in names(t)).most_common(3)
        title = ", ".join(n for n, _ in common) or " ".join(texts[0].split()[:6])
        return task, {"high_level_elements": [{"title": title, "description": " ".join(texts[:3])}]}
    if task == "query_entities":
        question = _section(prompt, "Question: ")
        return task, {"entities": names(question)}
    if task == "answer":
        # The numbered context, then a chat's earlier turns, then "user: QUESTION".
        body = _section(prompt, "Context:\n")
        context_part = re.split(r"\n\n(?:user|assistant): ", body, maxsplit=1)[0]
        asked = body.rpartition("user: ")[2].split("\nassistant:", 1)[0]
        question = set(asked.lower().split())
        context = sentences(context_part)
        best = max(context, key=lambda s: len(question & set(s.lower().split())), default="")
        return task, best or "Insufficient information."
    return task, " ".join(sentences(prompt)[:1])


def fake_embedding(text: str, dim: int) -> list[float]:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [((digest[i % 32] + i) % 17) / 17.0 - 0.5 for i in range(dim)]


@dataclass
class Recorded:
    """What the server saw."""

    requests: int = 0
    chat_requests: int = 0
    embedding_requests: int = 0
    answered: int = 0
    admitted: int = 0
    statuses: Counter = field(default_factory=Counter)
    tasks: Counter = field(default_factory=Counter)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class FakeOpenAIServer:
    """The server; use as a context manager or call ``start``/``stop``.

    Parameters
    ----------
    delay:
        Seconds every chat request takes (to make concurrency observable).
    reject_formats:
        ``response_format`` types answered with 400 (e.g. ``{"json_schema"}``).
    report_usage:
        Whether answers carry ``usage`` (off: the client must count tokens itself).
    fail_after:
        After this many answered chat requests, every further one gets ``fail_status``.
    max_requests:
        Safety bound: beyond it every request gets 503 and ``overflowed`` is set.
    api_key:
        When set, requests without ``Authorization: Bearer <api_key>`` get 401.
    """

    def __init__(
        self,
        *,
        delay: float = 0.0,
        reject_formats: set[str] | frozenset[str] = frozenset(),
        report_usage: bool = True,
        fail_after: int | None = None,
        fail_status: int = 500,
        max_requests: int = 5000,
        api_key: str | None = None,
        slow_seconds: float = 2.0,
        retry_after: str | None = None,
        embedding_dim: int = 32,
        huge_bytes: int = 60 << 20,
    ):
        self.delay = delay
        self.reject_formats = set(reject_formats)
        self.report_usage = report_usage
        self.fail_after = fail_after
        self.fail_status = fail_status
        self.max_requests = max_requests
        self.api_key = api_key
        self.slow_seconds = slow_seconds
        self.retry_after = retry_after
        self.embedding_dim = embedding_dim
        self.huge_bytes = huge_bytes
        self.script: deque[str] = deque()
        #: Task -> the outcome of every request of that task that the script leaves ``ok``.
        self.task_outcomes: dict[str, str] = {}
        self.seen = Recorded()
        self.overflowed = False
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FakeOpenAIServer:
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "start the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def reset(self) -> None:
        with self._lock:
            self.seen = Recorded()
            self.script.clear()

    def push(self, *outcomes: str) -> None:
        """Force the outcomes of the next chat requests, in arrival order."""
        with self._lock:
            self.script.extend(outcomes)

    # ------------------------------------------------------------------ behaviour
    def _next_outcome(self, body: dict[str, Any]) -> str:
        with self._lock:
            seen = self.seen
            if seen.requests > self.max_requests:
                self.overflowed = True
                return "overflow"
            if self.fail_after is not None and seen.admitted >= self.fail_after:
                return "fail"
            fmt = (body.get("response_format") or {}).get("type")
            if fmt in self.reject_formats:
                return "reject_format"
            outcome = self.script.popleft() if self.script else "ok"
            if outcome in _ANSWERING:
                # Counted here, under the lock, so ``fail_after`` is exact under concurrency.
                seen.admitted += 1
            return outcome

    def chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        """(status, JSON body, extra headers) for one chat-completions request."""
        outcome = self._next_outcome(body)
        if self.delay:
            time.sleep(self.delay)
        if outcome == "overflow":
            return 503, {"error": {"message": "fake server: request bound exceeded"}}, {}
        if outcome == "fail":
            return self.fail_status, {"error": {"message": "fake server: failing now"}}, {}
        if outcome == "reject_format":
            fmt = body["response_format"]["type"]
            return 400, {"error": {"message": f"response_format {fmt} is not supported"}}, {}
        if outcome == "429":
            headers = {"Retry-After": self.retry_after} if self.retry_after is not None else {}
            return 429, {"error": {"message": "rate limited"}}, headers
        if outcome == "too_long":
            message = "This model's maximum context length is 4096 tokens; reduce the length."
            return 400, {"error": {"message": message}}, {}
        if outcome in ("500", "502", "503"):
            return int(outcome), {"error": {"message": "server error"}}, {}
        if outcome == "slow":
            time.sleep(self.slow_seconds)
        prompt = "\n".join(m.get("content") or "" for m in body.get("messages", []))
        task, answer = plausible_answer(prompt)
        text = answer if isinstance(answer, str) else json.dumps(answer)
        if outcome == "ok":
            outcome = self.task_outcomes.get(task, "ok")
        if outcome in MODEL_ANSWERS:
            text = model_answer(outcome, task, text)
        elif outcome == "malformed":
            # Prose, a code fence, a trailing comma and a lost closing brace: repairable.
            text = "Here is the JSON:\n```json\n" + text[:-1].rstrip() + ",\n```"
        elif outcome == "garbage":
            text = "Sorry, I cannot help with that."
        elif outcome == "wrong_keys":
            text = json.dumps({"unexpected": True})
        ptok, ctok = len(prompt.split()), len(text.split())
        reply: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
        }
        if self.report_usage:
            reply["usage"] = {
                "prompt_tokens": ptok,
                "completion_tokens": ctok,
                "total_tokens": ptok + ctok,
            }
        if outcome in BAD_SHAPES:
            reply = BAD_SHAPES[outcome](reply)
        if outcome in ODD_ANSWERS:
            reply = ODD_ANSWERS[outcome](reply, self.huge_bytes)
        with self._lock:
            self.seen.answered += 1
            self.seen.tasks[task] += 1
            if self.report_usage:
                self.seen.prompt_tokens += ptok
                self.seen.completion_tokens += ctok
        return 200, reply, {}

    def embeddings(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs:
            return 400, {"error": {"message": "input must be a non-empty list"}}, {}
        data = [
            {"object": "embedding", "index": i, "embedding": fake_embedding(t, self.embedding_dim)}
            for i, t in enumerate(inputs)
        ]
        data.reverse()  # the wire format carries indices; clients must not trust the order
        return 200, {"object": "list", "data": data, "model": body.get("model")}, {}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        fake = self.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        with fake._lock:
            seen = fake.seen
            seen.requests += 1
            seen.in_flight += 1
            seen.max_in_flight = max(seen.max_in_flight, seen.in_flight)
            seen.arrivals.append(time.monotonic())
            seen.headers.append({k.lower(): v for k, v in self.headers.items()})
        try:
            self._answer(fake, raw)
        finally:
            with fake._lock:
                fake.seen.in_flight -= 1

    def _answer(self, fake: FakeOpenAIServer, raw: bytes) -> None:
        if fake.api_key and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
            self._send(401, {"error": {"message": "bad API key"}}, {})
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "body is not JSON"}}, {})
            return
        if self.path.endswith("/chat/completions"):
            with fake._lock:
                fake.seen.chat_requests += 1
                fake.seen.bodies.append(body)
                drop = bool(fake.script) and fake.script[0] == "drop"
                if drop:
                    fake.script.popleft()
            if drop:
                self.close_connection = True  # hang up without an answer
                return
            status, payload, headers = fake.chat(body)
        elif self.path.endswith("/embeddings"):
            with fake._lock:
                fake.seen.embedding_requests += 1
            status, payload, headers = fake.embeddings(body)
        else:
            status, payload, headers = 404, {"error": {"message": f"no route {self.path}"}}, {}
        self._send(status, payload, headers)

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
        with self.fake._lock:
            self.fake.seen.statuses[status] += 1
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


if __name__ == "__main__":  # pragma: no cover - manual use
    with FakeOpenAIServer() as srv:
        print(f"fake OpenAI-compatible server at {srv.url} (Ctrl-C to stop)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
