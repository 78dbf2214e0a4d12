"""The model interfaces the engine depends on: an embedder, an LLM, an optional reranker.

The engine never imports a backend: it receives objects that satisfy these protocols.
Concrete backends (sentence-transformers, extractive, vLLM, OpenAI-compatible HTTP, rerank
servers) live in ``graphstrata.bindings``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: the config sections import this module, cheaply
    import numpy as np


#: The name of the built-in extractive backend (``bindings/llm/extractive.py``). It selects
#: sentences of its inputs and writes no new text, so a stage whose nodes would only repeat
#: sentences the index holds already is left out under it (``HeterographConfig.attributes``).
EXTRACTIVE_LLM = "extractive"


class BackendError(RuntimeError):
    """A model backend failed (timeout, HTTP error after the last retry, bad output).

    The operation that called it aborts and nothing is committed.
    """


class LLMError(BackendError):
    """An LLM backend failed for a whole batch or could not produce usable output."""


class EmbedderError(BackendError):
    """An embedder failed."""


class RerankerError(BackendError):
    """A reranker failed (a query then keeps its mode's order, ``engine.rerank``)."""


@dataclass(frozen=True)
class LLMRequest:
    """One prompt of a batch.

    Attributes
    ----------
    task:
        What the engine wants: ``"summarize"``, ``"decompose"``, ``"attribute"``,
        ``"community"``, ``"query_entities"`` or ``"answer"``. Generative backends only read
        ``prompt``; the extractive backend works from ``task`` and ``inputs``.
    prompt:
        The full prompt text, built by ``graphstrata.engine.prompts``.
    max_tokens:
        Upper bound on completion tokens.
    schema:
        JSON schema of the answer for structured stages, else ``None`` (free text).
    inputs:
        The raw material the prompt was built from (chunk texts, unit texts, ...), so a
        non-generative backend can do the same work without parsing the prompt.
    fields:
        The values the task's template was filled with, so an index's own templates
        (``engine.prompts.PromptConfig``) can render the same request again.
    """

    task: str
    prompt: str
    max_tokens: int
    schema: Mapping[str, Any] | None = None
    inputs: tuple[str, ...] = ()
    temperature: float = 0.0
    fields: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LLMResponse:
    """One completion with its token accounting (as a real LLM's ``usage`` reports it)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool = False
    meta: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class LLM(Protocol):
    """Batch text generation. Every stage hands over its whole batch in one call."""

    @property
    def name(self) -> str:
        """Backend and model, e.g. ``"extractive"`` or ``"openai:qwen2.5-7b"``."""
        ...

    def complete(self, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
        """Answer every request, in order. Raise :class:`LLMError` on failure."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Text -> L2-normalized float32 vectors."""

    @property
    def name(self) -> str:
        """A stable identifier of the model; recorded in the index config."""
        ...

    @property
    def dim(self) -> int:
        """Length of every vector."""
        ...

    @property
    def max_input_tokens(self) -> int:
        """How many word pieces the model reads before truncating (sets the chunk size)."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return ``float32[len(texts), dim]``, rows L2-normalized."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """Scores of texts against a query (a cross-encoder behind a rerank API)."""

    @property
    def name(self) -> str:
        """Backend and model, e.g. ``"tei:http://127.0.0.1:8080"``."""
        ...

    def score(self, query: str, texts: Sequence[str]) -> Sequence[float]:
        """One score per text, in order; higher is more relevant. Raise
        :class:`RerankerError` on failure."""
        ...
