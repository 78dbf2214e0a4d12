"""The ``openai`` backend: any OpenAI-compatible chat-completions server.

vLLM's ``serve``, Ollama, llama.cpp's server and hosted APIs all speak
``POST {base_url}/chat/completions``. A stage's whole batch is sent concurrently (bounded by
``max_concurrency``) from a private event loop that runs in its own thread, so ``complete``
is an ordinary blocking call that also works when the caller already runs an event loop
(the FastAPI server).

Failures: 429, 5xx, timeouts and connection errors are retried with exponential backoff and
full jitter (``Retry-After`` is honoured); after the last retry, or on any other HTTP error,
:class:`LLMError` is raised and the engine aborts the operation with nothing committed.

JSON stages ask for ``response_format: json_schema``; a server that rejects it with 400 is
asked with ``json_object``, then with the plain prompt (which already asks for JSON), and the
backend remembers what worked. Answers are repaired with ``json_repair`` and checked against
the schema's top-level keys; a bad answer is asked for once more, then handed to the engine
marked ``unusable`` (counted, and held to the index's yield floor).

Upstream numbers and sizes are not trusted (issue 51): a response body larger than
``max_response_bytes`` is refused as it streams in, before it is buffered whole, and is an
``LLMError`` (not retried, never cached: the same request would most likely get the same
answer); a ``usage`` count beyond :data:`MAX_USAGE_TOKENS` is treated as not reported.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import threading
import weakref
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import httpx

from graphstrata.bindings.http import (
    RetryPolicy,
    auth_headers,
    error_excerpt,
    is_retryable_status,
    normalize_base_url,
    parse_retry_after,
    resolve_api_key,
)
from graphstrata.bindings.llm.cache import AnswerCallback
from graphstrata.bindings.llm.repair import (
    JSONAnswerError,
    parse_json_answer,
    reask_prompt,
    unusable_meta,
)
from graphstrata.bindings.specs import (
    OPENAI_DEFAULT_URL,
    OptionTable,
    convert_options,
    optional_int,
    split_model_url,
)
from graphstrata.engine import ConfigError, LLMError, LLMRequest, LLMResponse, count_tokens

log = logging.getLogger(__name__)

#: The form of this backend's spec (registered as ``openai`` in ``registry.LLM_BACKENDS``).
SPEC = "openai:MODEL@URL[?opts]"
#: ``?key=value`` options of an ``openai:`` spec -> (keyword, converter).
OPTIONS: OptionTable = {
    "max_concurrency": ("max_concurrency", int),
    "concurrency": ("max_concurrency", int),
    "timeout": ("timeout", float),
    "max_retries": ("max_retries", int),
    "base_delay": ("base_delay", float),
    "max_delay": ("max_delay", float),
    "json_mode": ("json_mode", str),
    "seed": ("seed", optional_int),
    "system_prompt": ("system_prompt", str),
    "api_key": ("api_key", str),
    "max_response_bytes": ("max_response_bytes", int),
}
RETRY_OPTIONS = ("max_retries", "base_delay", "max_delay")

#: Ways to ask for JSON, strongest first; a server that rejects one gets the next.
JSON_MODES = ("json_schema", "json_object", "prompt")

#: The largest response body read from the server, by default: 8 MiB. A chat completion of
#: the engine's prompts (``max_tokens`` at most a few thousand) is tens of kilobytes; a larger
#: body is a misbehaving server, and reading it whole would cost memory, a response that size
#: to the client and a cache row that size (a 60 MB answer grew ``llm-cache.sqlite`` by 126 MB).
DEFAULT_MAX_RESPONSE_BYTES = 8 << 20

#: A ``usage`` token count above this is not believed (counted like a missing one): no model
#: has a context near 2**31 tokens, and SQLite and JSON consumers overflow on 10**30.
MAX_USAGE_TOKENS = 2**31 - 1


# --------------------------------------------------------------------------- shared HTTP bits
#: Words in a 400 answer that say the server refused the way JSON was asked for (and not,
#: say, a prompt longer than the context, which no JSON mode will fix).
_FORMAT_WORDS = ("response_format", "json", "schema", "format", "structured", "guided", "grammar")


def rejects_response_format(response: httpx.Response) -> bool:
    text = response.text.lower()
    return any(word in text for word in _FORMAT_WORDS)


def _stop_loop(loop: asyncio.AbstractEventLoop) -> None:
    if not loop.is_closed():
        loop.call_soon_threadsafe(loop.stop)


# --------------------------------------------------------------------------- the backend
@dataclass
class _Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    json_mode: str
    finish_reason: str | None


class OpenAICompatibleLLM:
    """Chat completions from an OpenAI-compatible server.

    Parameters
    ----------
    model:
        The model name the server knows (``--served-model-name`` for vLLM).
    base_url:
        E.g. ``http://127.0.0.1:8000/v1``; ``/chat/completions`` is appended.
    api_key:
        Bearer token; default from ``GRAPHSTRATA_API_KEY`` or ``OPENAI_API_KEY`` (none sent
        if neither is set, as local servers need none).
    max_concurrency:
        Requests in flight at once, over all batches of this backend (default 8).
    timeout:
        Seconds for one HTTP request as a whole (connect, send and every read of the
        answer together; default 120): a retried request gets as long again.
    retry:
        Backoff policy for 429/5xx/timeouts/connection errors.
    json_mode:
        ``"auto"`` (try ``json_schema``, then ``json_object``, then plain prompting),
        or one of :data:`JSON_MODES` to start lower on that ladder.
    system_prompt:
        Optional system message sent before every prompt.
    seed:
        Sent as ``seed`` when given (servers that support it sample reproducibly).
    max_response_bytes:
        The largest response body accepted (default :data:`DEFAULT_MAX_RESPONSE_BYTES`); a
        larger one is an ``LLMError``, refused while it streams in. An error rather than a
        truncated answer: a body cut short is not a chat completion, and a truncated text
        would be served and cached as if it were the whole answer.
    """

    #: ``complete`` takes ``on_answer`` and calls it as each answer arrives (for the cache).
    streams_answers = True
    backend = "openai"

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: str | None = None,
        max_concurrency: int = 8,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        json_mode: str = "auto",
        system_prompt: str | None = None,
        seed: int | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ):
        if not model:
            raise ConfigError("the openai backend needs a model name: openai:MODEL@URL")
        if max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if timeout <= 0:
            raise ConfigError(f"timeout must be > 0, got {timeout}")
        if max_response_bytes < 1:
            raise ConfigError(f"max_response_bytes must be >= 1, got {max_response_bytes}")
        if json_mode != "auto" and json_mode not in JSON_MODES:
            raise ConfigError(f"json_mode must be auto or one of {JSON_MODES}, got {json_mode!r}")
        self.model = model
        self.base_url = normalize_base_url(base_url)
        self.url = f"{self.base_url}/chat/completions"
        self.max_concurrency = int(max_concurrency)
        self.timeout = float(timeout)
        self.retry = retry or RetryPolicy()
        self.retry.validate()
        self.system_prompt = system_prompt
        self.seed = seed
        self.max_response_bytes = int(max_response_bytes)
        self._api_key = resolve_api_key(api_key)
        start = 0 if json_mode == "auto" else JSON_MODES.index(json_mode)
        self._json_modes = JSON_MODES[start:]
        self._json_level = 0
        self._rng = random.Random()
        #: What happened so far: http_requests, retries, reasks, repaired, json_downgrades.
        self.counters: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: httpx.AsyncClient | None = None
        self._semaphore: asyncio.Semaphore | None = None

    @property
    def name(self) -> str:
        """A spec that reopens this backend (the key is never part of it)."""
        return f"openai:{self.model}@{self.base_url}"

    @property
    def json_mode(self) -> str:
        """The JSON mode that currently works with this server."""
        return self._json_modes[self._json_level]

    # ------------------------------------------------------------------ public call
    def complete(
        self, requests: Sequence[LLMRequest], on_answer: AnswerCallback | None = None
    ) -> list[LLMResponse]:
        """Answer every request, in order; ``on_answer(i, response)`` runs as each arrives.

        Raises
        ------
        LLMError
            When a request still fails after the last retry, or its JSON answer is unusable.
        """
        requests = list(requests)
        if not requests:
            return []
        future = asyncio.run_coroutine_threadsafe(
            self._complete_all(requests, on_answer), self._event_loop()
        )
        try:
            return future.result()
        except BaseException:
            future.cancel()  # e.g. Ctrl-C in the caller: stop the requests still in flight
            raise

    def close(self) -> None:
        """Close the HTTP client and stop the event-loop thread (a later call restarts them)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None or not thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._aclose(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()

    # ------------------------------------------------------------------ event loop
    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                # First use, or after a fork (threads do not survive it): a fresh loop, client
                # and semaphore, all bound to the new thread.
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="graphstrata-openai", daemon=True
                )
                thread.start()
                # A backend dropped without close() stops its loop thread when collected.
                weakref.finalize(self, _stop_loop, loop)
                self._loop, self._thread = loop, thread
                self._client = None
                self._semaphore = None
            assert self._loop is not None
            return self._loop

    def _http(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        """The client and the concurrency bound (created on the loop thread)."""
        if self._client is None or self._semaphore is None:
            limits = httpx.Limits(
                max_connections=self.max_concurrency,
                max_keepalive_connections=self.max_concurrency,
            )
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout),
                limits=limits,
                headers=auth_headers(self._api_key),
            )
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
        return self._client, self._semaphore

    async def _aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # ------------------------------------------------------------------ batch
    async def _complete_all(
        self, requests: list[LLMRequest], on_answer: AnswerCallback | None
    ) -> list[LLMResponse]:
        results: list[LLMResponse | None] = [None] * len(requests)

        async def answer(i: int, request: LLMRequest) -> None:
            response = await self._complete_one(request)
            results[i] = response
            if on_answer is not None:
                on_answer(i, response)

        tasks = [asyncio.create_task(answer(i, r)) for i, r in enumerate(requests)]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            # Read every finished task's exception (not only the first), so that none is
            # left "never retrieved" when several requests failed together.
            failures = [e for t in done if not t.cancelled() and (e := t.exception())]
            if failures:
                raise failures[0]
        finally:
            # Fail fast: one request that cannot be answered aborts the operation, so the
            # rest are not paid for (answers that already arrived are in the cache).
            pending = [t for t in tasks if not t.done()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        return [r for r in results if r is not None]

    async def _complete_one(self, request: LLMRequest) -> LLMResponse:
        first = await self._chat(request.prompt, request)
        if request.schema is None:
            return self._response(first.text, [first], json_stage=False)
        try:
            parsed = parse_json_answer(first.text, request.schema)
            calls = [first]
        except JSONAnswerError as exc:
            self.counters["reasks"] += 1
            log.info(
                "%s: unusable JSON for a %s prompt (%s); asking again", self.name, request.task, exc
            )
            retry_prompt = reask_prompt(request.prompt, first.text, str(exc), request.schema)
            second = await self._chat(retry_prompt, request)
            calls = [first, second]
            try:
                parsed = parse_json_answer(second.text, request.schema)
            except JSONAnswerError as exc2:
                # Counted by the engine and held to the index's yield floor, not fatal alone.
                self.counters["unusable"] += 1
                response = self._response(second.text, calls, json_stage=True)
                meta = {**response.meta, **unusable_meta(str(exc2), second.text)}
                return replace(response, meta=meta)
        if parsed.repaired:
            self.counters["repaired"] += 1
        response = self._response(parsed.text, calls, json_stage=True, repaired=parsed.repaired)
        return replace(response, meta={**response.meta, "think": parsed.think})

    def _response(
        self, text: str, calls: list[_Completion], json_stage: bool, repaired: bool = False
    ) -> LLMResponse:
        meta: dict[str, Any] = {"json_mode": calls[-1].json_mode} if json_stage else {}
        if calls[-1].finish_reason:
            meta["finish_reason"] = calls[-1].finish_reason
        if repaired:
            meta["repaired"] = True
        if len(calls) > 1:
            meta["reasked"] = True
        return LLMResponse(
            text=text,
            prompt_tokens=sum(c.prompt_tokens for c in calls),
            completion_tokens=sum(c.completion_tokens for c in calls),
            meta=meta,
        )

    # ------------------------------------------------------------------ one HTTP exchange
    def _body(self, prompt: str, request: LLMRequest, mode: str) -> dict[str, Any]:
        messages: list[dict[str, str]] = []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.append({"role": "user", "content": prompt})
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": int(request.max_tokens),
            "temperature": float(request.temperature),
        }
        if self.seed is not None:
            body["seed"] = int(self.seed)
        if mode == "json_schema" and request.schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.task, "schema": dict(request.schema)},
            }
        elif mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def _downgrade_json_mode(self, rejected: str) -> bool:
        """The server refused ``rejected``: step down the ladder once (remembered)."""
        if self.json_mode != rejected:
            return True  # another request already stepped down; retry with the current mode
        if self._json_level + 1 >= len(self._json_modes):
            return False
        self._json_level += 1
        self.counters["json_downgrades"] += 1
        log.warning(
            "%s: server rejected response_format %s; using %s from now on",
            self.name,
            rejected,
            self.json_mode,
        )
        return True

    async def _chat(self, prompt: str, request: LLMRequest) -> _Completion:
        client, semaphore = self._http()
        retry = 0
        while True:
            retry_after: float | None = None
            try:
                async with semaphore:
                    # Read the JSON mode only now: a request that waited for its slot uses
                    # what the requests before it learned about the server.
                    mode = self.json_mode if request.schema is not None else "prompt"
                    self.counters["http_requests"] += 1
                    # ``timeout`` bounds the whole exchange, not each read: an upstream
                    # that trickles one byte every few seconds never times out a read
                    # (issue 51 #3), so the attempt is cut when its total time is spent.
                    response = await asyncio.wait_for(
                        self._post(client, self._body(prompt, request, mode)), self.timeout
                    )
            except httpx.RequestError as exc:  # timeouts, refused and dropped connections
                problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            except TimeoutError:
                problem = f"RequestTimeout: no whole answer within {self.timeout:g} s"
            else:
                status = response.status_code
                if status == 200:
                    completion = self._parse(response, prompt, mode)
                    if completion is not None:
                        return completion
                    problem = f"unreadable 200 response: {error_excerpt(response)}"
                elif (
                    status == 400
                    and mode != "prompt"
                    and rejects_response_format(response)
                    and self._downgrade_json_mode(mode)
                ):
                    continue
                elif is_retryable_status(status):
                    problem = f"HTTP {status}: {error_excerpt(response)}"
                    retry_after = parse_retry_after(response.headers.get("retry-after"))
                else:
                    hint = ""
                    if status == 400 and mode != "prompt":
                        hint = " (use ?json_mode=prompt if it rejects response_format)"
                    raise LLMError(
                        f"{self.name}: HTTP {status} from {self.url}: "
                        f"{error_excerpt(response)}{hint}"
                    )
            if retry >= self.retry.max_retries:
                raise LLMError(
                    f"{self.name}: no answer after {retry + 1} attempts "
                    f"({request.task} prompt); last error: {problem}"
                )
            self.counters["retries"] += 1
            await asyncio.sleep(self.retry.delay(retry, retry_after, self._rng))
            retry += 1

    async def _post(self, client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
        """POST ``body``; the response read whole only if it is at most ``max_response_bytes``.

        Raises
        ------
        LLMError
            When the body (as its ``Content-Length`` announces, or as it arrives) is larger.
        """
        async with client.stream("POST", self.url, json=body) as streamed:
            announced = streamed.headers.get("content-length", "")
            if announced.isdigit() and int(announced) > self.max_response_bytes:
                raise self._too_large(f"{int(announced):,} bytes announced")
            chunks: list[bytes] = []
            size = 0
            async for chunk in streamed.aiter_bytes():
                size += len(chunk)
                if size > self.max_response_bytes:
                    raise self._too_large("more")
                chunks.append(chunk)
        # The bytes are decoded already: the copy carries no transfer or content encoding.
        headers = [
            (k, v)
            for k, v in streamed.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        return httpx.Response(
            streamed.status_code,
            headers=headers,
            content=b"".join(chunks),
            request=streamed.request,
        )

    def _too_large(self, size: str) -> LLMError:
        self.counters["too_large"] += 1
        return LLMError(
            f"{self.name}: the response from {self.url} is larger than max_response_bytes="
            f"{self.max_response_bytes:,} ({size}); refused, not cached (raise the bound with "
            "?max_response_bytes=N if the server's answers are legitimately that large)"
        )

    def _parse(self, response: httpx.Response, prompt: str, mode: str) -> _Completion | None:
        """The completion in a 200 response, or None when its shape is not a chat completion.

        Every field is checked for its type: servers that claim compatibility answer with
        ``usage`` as a string, ``content`` as a list or a number, and so on. None makes the
        caller retry and then raise ``LLMError``; nothing else may escape.
        """
        try:
            data = response.json()
        except ValueError:
            return None
        choices = data.get("choices") if isinstance(data, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            return None
        text = message.get("content")
        if text is None:
            text = ""
        if not isinstance(text, str):
            return None
        raw_usage = data.get("usage")
        usage: Mapping[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        prompt_tokens = _plausible_count(usage.get("prompt_tokens"))
        completion_tokens = _plausible_count(usage.get("completion_tokens"))
        finish_reason = choice.get("finish_reason") if isinstance(choice, dict) else None
        if prompt_tokens is None:
            # The server does not report usage: count like the engine does (cl100k_base).
            prompt_tokens = count_tokens(prompt) + (
                count_tokens(self.system_prompt) if self.system_prompt else 0
            )
        if completion_tokens is None:
            completion_tokens = count_tokens(text)
        return _Completion(
            text=text,
            prompt_tokens=max(prompt_tokens, 0),
            completion_tokens=max(completion_tokens, 0),
            json_mode=mode,
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        )


def from_spec(body: str, options: Mapping[str, Any]) -> OpenAICompatibleLLM:
    """The backend of spec ``openai:MODEL[@URL]`` with its ``options`` (see ``registry``);
    without ``@URL``, ``OPENAI_BASE_URL``, else the OpenAI API.

    Raises
    ------
    ConfigError
        For a missing model, a bad URL, or an unknown or bad option.
    """
    default_url = os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_URL
    model, url = split_model_url(body, "openai", default_url)
    opts = convert_options("openai", options, OPTIONS)
    retry_opts = {k: opts.pop(k) for k in RETRY_OPTIONS if k in opts}
    return OpenAICompatibleLLM(model, url, retry=RetryPolicy(**retry_opts), **opts)


def _plausible_count(value: Any) -> int | None:
    """A ``usage`` field as a token count to believe: an int (not a bool) of at most
    ``MAX_USAGE_TOKENS`` (a negative one reads as 0); None for any other value, which the
    engine counts instead."""
    if isinstance(value, int) and not isinstance(value, bool) and value <= MAX_USAGE_TOKENS:
        return int(value)
    return None
