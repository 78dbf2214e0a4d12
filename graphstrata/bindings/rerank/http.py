"""One client for the rerank HTTP APIs: the TEI shape and the Jina/Cohere shape (vLLM,
Cohere, Jina), with the retry policy and timeouts of ``bindings/http.py``."""

from __future__ import annotations

import math
import os
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from graphstrata.bindings.http import (
    RetryPolicy,
    auth_headers,
    post_with_retries,
    resolve_api_key,
)
from graphstrata.bindings.specs import OptionTable, convert_options, split_model_url
from graphstrata.engine import ConfigError, RerankerError

if TYPE_CHECKING:
    import httpx

__all__ = ["SPECS", "HttpReranker", "RerankAPI", "from_spec"]

SPECS = "tei:URL, vllm:MODEL@URL, cohere:MODEL@URL or jina:MODEL@URL"


@dataclass(frozen=True)
class RerankAPI:
    """A rerank API: its default path, its default server and its wire shape."""

    path: str
    #: ``"tei"``: ``{query, texts}`` -> ``[{index, score}]``; ``"documents"``: ``{model,
    #: query, documents, top_n}`` -> ``{results: [{index, relevance_score}]}``.
    shape: str
    default_url: str | None = None


PROTOCOLS: dict[str, RerankAPI] = {
    "tei": RerankAPI("/rerank", "tei"),
    "vllm": RerankAPI("/v1/rerank", "documents"),
    "cohere": RerankAPI("/v2/rerank", "documents", "https://api.cohere.com"),
    "jina": RerankAPI("/v1/rerank", "documents", "https://api.jina.ai"),
}

_OPTIONS: OptionTable = {
    "timeout": ("timeout", float),
    "max_retries": ("max_retries", int),
    "batch_size": ("batch_size", int),
    "path": ("path", str),
    "api_key": ("api_key", str),
}


def from_spec(prefix: str, body: str, raw: Mapping[str, Any]) -> HttpReranker:
    """The reranker of spec ``prefix:body`` with options ``raw`` (``bindings.rerank``)."""
    protocol = PROTOCOLS[prefix]
    options = convert_options(f"the {prefix} reranker", raw, _OPTIONS)
    if protocol.shape == "tei":
        model, url = "", body
    elif "@" not in body and "://" in body:
        raise ConfigError(f"the {prefix} reranker needs a model name: {prefix}:MODEL@URL")
    else:
        model, url = split_model_url(body, prefix, protocol.default_url)
    return HttpReranker(prefix, url, model=model, **options)


class HttpReranker:
    """Scores from a rerank endpoint (``engine.interfaces.Reranker``).

    Parameters
    ----------
    api:
        ``"tei"``, ``"vllm"``, ``"cohere"`` or ``"jina"`` (:data:`PROTOCOLS`).
    url:
        The server, e.g. ``http://127.0.0.1:8080`` (the API's path is added).
    model:
        The model name the server expects (not sent to TEI, which serves one model).
    timeout:
        Seconds for one HTTP request (a query waits at most about ``(max_retries + 1)``
        times this for its reranker before it keeps its mode's order).
    max_retries:
        Retries of a request that timed out, could not connect, or got 408/429/5xx.
    batch_size:
        Texts per request.
    path:
        The endpoint's path (default: the API's).
    api_key:
        Bearer token; default ``GRAPHSTRATA_RERANK_API_KEY``, else ``GRAPHSTRATA_API_KEY`` /
        ``OPENAI_API_KEY``.
    """

    def __init__(
        self,
        api: str,
        url: str,
        *,
        model: str = "",
        timeout: float = 10.0,
        max_retries: int = 1,
        batch_size: int = 32,
        path: str | None = None,
        api_key: str | None = None,
    ):
        if api not in PROTOCOLS:
            raise ConfigError(f"unknown rerank API {api!r}; use {', '.join(PROTOCOLS)}")
        url = url.strip().rstrip("/")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"bad reranker URL {url!r}: expected http(s)://HOST[:PORT]")
        if timeout <= 0 or batch_size < 1:
            raise ConfigError("a reranker needs timeout > 0 and batch_size >= 1")
        self.api = api
        self.protocol = PROTOCOLS[api]
        self.model = model
        self.url = url + (path if path is not None else self.protocol.path)
        self.timeout = float(timeout)
        self.retry = RetryPolicy(max_retries=max_retries, base_delay=0.2, max_delay=2.0)
        self.retry.validate()
        self.batch_size = int(batch_size)
        self._api_key = resolve_api_key(api_key or os.environ.get("GRAPHSTRATA_RERANK_API_KEY"))
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()
        self._rng = random.Random()
        #: HTTP requests sent so far (retries included).
        self.requests = 0

    @property
    def name(self) -> str:
        return f"{self.api}:{self.model}" if self.model else f"{self.api}:{self.url}"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One score per text, in order (``Reranker.score``).

        Raises
        ------
        RerankerError
            After the last retry, on a refused request, or an unreadable answer (not JSON,
            missing or repeated indexes, a score that is not a finite number).
        """
        out: list[float] = []
        for i in range(0, len(texts), self.batch_size):
            out.extend(self._batch(query, list(texts[i : i + self.batch_size])))
        return out

    def _body(self, query: str, texts: list[str]) -> dict[str, Any]:
        if self.protocol.shape == "tei":
            return {"query": query, "texts": texts, "raw_scores": False, "truncate": True}
        body = {"query": query, "documents": texts, "top_n": len(texts)}
        return {"model": self.model, **body} if self.model else body

    def _http(self) -> httpx.Client:
        import httpx

        with self._lock:
            if self._client is None:
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self.timeout),
                    headers=auth_headers(self._api_key),
                    trust_env=False,
                )
            return self._client

    def _batch(self, query: str, texts: list[str]) -> list[float]:
        response = post_with_retries(
            self._http(),
            self.url,
            self._body(query, texts),
            self.retry,
            self._rng,
            RerankerError,
            self.name,
            "scores",
            on_request=self._count_request,
        )
        return self._parse(response, len(texts))

    def _count_request(self) -> None:
        self.requests += 1

    def _parse(self, response: httpx.Response, n: int) -> list[float]:
        """Scores by index from either shape; every index exactly once."""
        try:
            data = response.json()
            if self.protocol.shape == "tei":
                items, key = data, "score"
            else:
                items, key = data["results"], "relevance_score"
            pairs = [(item["index"], item[key]) for item in items]
        except (ValueError, KeyError, TypeError) as exc:
            raise RerankerError(f"{self.name}: unreadable rerank answer ({exc!r})") from exc
        scores: list[float | None] = [None] * n
        for index, value in pairs:
            if type(index) is not int or not 0 <= index < n or scores[index] is not None:
                raise RerankerError(f"{self.name}: bad or repeated index {index!r} for {n} texts")
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise RerankerError(f"{self.name}: score {value!r} is not a number")
            if not math.isfinite(value):
                raise RerankerError(f"{self.name}: score {value!r} is not finite")
            scores[index] = float(value)
        missing = [i for i, s in enumerate(scores) if s is None]
        if missing:
            raise RerankerError(f"{self.name}: {len(missing)} of {n} texts got no score")
        return [float(s) for s in scores if s is not None]

    def close(self) -> None:
        """Close the HTTP connections."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
