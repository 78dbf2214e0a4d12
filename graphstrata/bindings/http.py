"""What the OpenAI-compatible clients share (the LLM in ``llm/openai.py``, the embedder in
``embed/models.py``): retries with exponential backoff and ``Retry-After``, the API key from
the environment, base URLs, bearer headers and error excerpts.
"""

from __future__ import annotations

import email.utils
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from graphstrata.engine import ConfigError

if TYPE_CHECKING:
    import httpx

#: Environment variables read for the API key, first match wins.
API_KEY_ENV = ("GRAPHSTRATA_API_KEY", "OPENAI_API_KEY")


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter (AWS architecture blog, "Exponential Backoff And
    Jitter"): the n-th retry waits ``uniform(0, min(max_delay, base_delay * 2**n))`` seconds,
    or what the server's ``Retry-After`` asks (capped at ``max_retry_after``)."""

    max_retries: int = 5
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def validate(self) -> None:
        if self.max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ConfigError("retry delays must be >= 0")

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        return rng.uniform(0.0, min(self.max_delay, self.base_delay * 2.0**retry))


def is_retryable_status(status: int) -> bool:
    """429 (rate limit), 408 (request timeout) and every 5xx are worth another try."""
    return status in (408, 429) or status >= 500


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def resolve_api_key(explicit: str | None = None) -> str | None:
    """The API key: given explicitly, else ``GRAPHSTRATA_API_KEY``, else ``OPENAI_API_KEY``."""
    if explicit:
        return explicit
    for name in API_KEY_ENV:
        if os.environ.get(name):
            return os.environ[name]
    return None


def normalize_base_url(url: str) -> str:
    """Validate an OpenAI-compatible base URL; a bare ``http://host:port`` gets ``/v1``."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"bad server URL {url!r}: expected http(s)://HOST[:PORT][/PATH], e.g. "
            "http://127.0.0.1:8000/v1"
        )
    path = parts.path.rstrip("/") or "/v1"
    return f"{parts.scheme}://{parts.netloc}{path}"


def auth_headers(api_key: str | None) -> dict[str, str]:
    """The bearer ``Authorization`` header of ``api_key`` (none without a key)."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def error_excerpt(response: httpx.Response, limit: int = 300) -> str:
    """The start of a failed answer's body, on one line (for error messages)."""
    text = " ".join(response.text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def post_with_retries(
    client: httpx.Client,
    url: str,
    body: Any,
    retry: RetryPolicy,
    rng: random.Random,
    error: Callable[[str], Exception],
    name: str,
    what: str,
    on_request: Callable[[], None] | None = None,
) -> httpx.Response:
    """POST ``body`` as JSON until a 200 answers, retrying transport errors and retryable
    statuses by ``retry`` (``Retry-After`` honoured).

    Parameters
    ----------
    client, url, body:
        The request.
    retry, rng:
        The backoff policy and its jitter's generator.
    error:
        The exception raised (``error(message)``): a status no retry mends, or retries spent.
    name, what:
        The backend's name and what the answer carries, for the messages ("no embeddings
        after 6 attempts").
    on_request:
        Called before each attempt (a request counter).

    Returns
    -------
    httpx.Response
        The 200 answer.
    """
    import httpx

    attempt = 0
    while True:
        retry_after = None
        try:
            if on_request is not None:
                on_request()
            response = client.post(url, json=body)
        except httpx.RequestError as exc:
            problem = f"{type(exc).__name__}: {exc}"
        else:
            if response.status_code == 200:
                return response
            problem = f"HTTP {response.status_code}: {error_excerpt(response)}"
            if not is_retryable_status(response.status_code):
                raise error(f"{name}: {problem} from {url}")
            retry_after = parse_retry_after(response.headers.get("retry-after"))
        if attempt >= retry.max_retries:
            raise error(f"{name}: no {what} after {attempt + 1} attempts; last error: {problem}")
        time.sleep(retry.delay(attempt, retry_after, rng))
        attempt += 1
