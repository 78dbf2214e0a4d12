"""SQLite response cache that wraps any LLM backend (DESIGN §4: it lives beside the index).

Keyed by backend, model, prompt, schema, ``max_tokens`` and ``temperature``: the same request
to the same model is paid for once. Answers are written one by one as they arrive (backends
that set ``streams_answers`` call back per answer), so a build interrupted half-way through a
stage resumes paying only for the prompts that were not answered.

One database file in WAL mode; one connection guarded by a lock, so the cache is safe to use
from several threads (the HTTP backend writes from its event-loop thread while queries run in
server threads), and other processes may read and write the same file.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from graphstrata.engine import LLM, LLMError, LLMRequest, LLMResponse

#: Bump when the key recipe or the table layout changes; older files are rejected clearly.
CACHE_FORMAT = 1

AnswerCallback = Callable[[int, LLMResponse], None]

#: SQLite's INTEGER is 64-bit signed: a larger count would raise ``OverflowError`` on write.
_MAX_STORED = 2**63 - 1

_CREATE = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    task TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    meta TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def request_key(backend: str, model: str, request: LLMRequest) -> str:
    """The cache key of one request: a SHA-256 over everything that shapes the answer."""
    schema = json.dumps(request.schema, sort_keys=True) if request.schema is not None else None
    material = json.dumps(
        [
            CACHE_FORMAT,
            backend,
            model,
            request.prompt,
            schema,
            int(request.max_tokens),
            float(request.temperature),
        ],
        ensure_ascii=False,
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


class LLMCache:
    """A response table in one SQLite file, opened on first use.

    Parameters
    ----------
    path:
        The database file (``INDEX/llm-cache.sqlite`` when the API opens an index). Its folder
        is created on first write if needed.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, CACHE_FORMAT):
                conn.close()
                raise LLMError(
                    f"LLM cache {self.path} has format {version}, this graphstrata writes "
                    f"{CACHE_FORMAT}; delete the file or run with --no-cache"
                )
            conn.execute(_CREATE)
            conn.execute(f"PRAGMA user_version={CACHE_FORMAT}")
        except sqlite3.Error as exc:
            raise LLMError(
                f"cannot open the LLM cache {self.path} ({exc}); delete it or run with --no-cache"
            ) from exc
        self._conn = conn
        return conn

    def get_many(self, keys: Sequence[str]) -> dict[str, LLMResponse]:
        """Cached responses of those ``keys`` that are present, marked ``cached=True``."""
        found: dict[str, LLMResponse] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            conn = self._connect()
            for start in range(0, len(unique), 500):  # stay under SQLite's variable limit
                part = unique[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = conn.execute(
                    "SELECT key, text, prompt_tokens, completion_tokens, meta FROM responses "
                    f"WHERE key IN ({marks})",
                    part,
                ).fetchall()
                for key, text, ptok, ctok, meta in rows:
                    found[key] = LLMResponse(
                        text=text,
                        prompt_tokens=int(ptok),
                        completion_tokens=int(ctok),
                        cached=True,
                        meta=json.loads(meta),
                    )
        return found

    def put(self, key: str, backend: str, model: str, task: str, response: LLMResponse) -> None:
        """Store one answer now (committed on return)."""
        meta = json.dumps(dict(response.meta), default=str, sort_keys=True)
        with self._lock:
            self._connect().execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    backend,
                    model,
                    task,
                    response.text,
                    _stored_count(response.prompt_tokens),
                    _stored_count(response.completion_tokens),
                    meta,
                    time.time(),
                ),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._connect().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class CachedLLM:
    """Wraps an LLM: answers found in the cache are returned with ``cached=True``.

    Only the misses reach the wrapped backend, each distinct request once per batch. When the
    backend declares ``streams_answers = True`` its ``complete`` accepts an ``on_answer``
    callback and each answer is stored the moment it arrives; otherwise the answers are stored
    when the batch returns.
    """

    def __init__(self, llm: LLM, cache: LLMCache | str | Path):
        self.llm = llm
        self.cache = cache if isinstance(cache, LLMCache) else LLMCache(cache)
        self.backend = str(getattr(llm, "backend", llm.name.split(":", 1)[0]))
        self.model = str(getattr(llm, "model", llm.name))

    @property
    def name(self) -> str:
        return self.llm.name

    def complete(self, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
        requests = list(requests)
        keys = [request_key(self.backend, self.model, r) for r in requests]
        answers: dict[str, LLMResponse] = self.cache.get_many(keys)
        todo_keys = [k for k in dict.fromkeys(keys) if k not in answers]
        if todo_keys:
            first = {k: i for i, k in reversed(list(enumerate(keys)))}
            todo = [requests[first[k]] for k in todo_keys]
            fresh = self._ask(todo, todo_keys)
            answers.update(zip(todo_keys, fresh, strict=True))
        # A request repeated inside one batch is paid once; its copies count as cache hits.
        out: list[LLMResponse] = []
        paid: set[str] = set()
        for key in keys:
            resp = answers[key]
            if not resp.cached and key in paid:
                resp = _as_cached(resp)
            paid.add(key)
            out.append(resp)
        return out

    def _ask(self, todo: list[LLMRequest], todo_keys: list[str]) -> list[LLMResponse]:
        # An unusable answer is kept only from a backend that would give it again (greedy
        # local decoding); from a server, the next attempt (a resumed build, a server that
        # recovered) asks again instead of reading the failure back.
        repeats = bool(getattr(self.llm, "deterministic", False))

        def store(j: int, response: LLMResponse) -> None:
            if (repeats and todo[j].temperature == 0) or not response.meta.get("unusable"):
                self.cache.put(todo_keys[j], self.backend, self.model, todo[j].task, response)

        if getattr(self.llm, "streams_answers", False):
            fresh = self.llm.complete(todo, on_answer=store)  # type: ignore[call-arg]
        else:
            fresh = self.llm.complete(todo)
            for j, response in enumerate(fresh):
                store(j, response)
        if len(fresh) != len(todo):
            raise LLMError(f"{self.name}: {len(todo)} prompts but {len(fresh)} answers")
        return list(fresh)

    def close(self) -> None:
        close = getattr(self.llm, "close", None)
        if callable(close):
            close()
        self.cache.close()


def _as_cached(response: LLMResponse) -> LLMResponse:
    return LLMResponse(
        text=response.text,
        prompt_tokens=response.prompt_tokens,
        completion_tokens=response.completion_tokens,
        cached=True,
        meta=response.meta,
    )


def _stored_count(value: int) -> int:
    """A token count as SQLite can store it: clamped to ``[0, 2**63 - 1]``. Backends vet the
    counts servers report (``openai.MAX_USAGE_TOKENS``); this keeps any backend's number
    from failing the write of an answer already paid for (issue 51: ``10**30``)."""
    return min(max(int(value), 0), _MAX_STORED)
