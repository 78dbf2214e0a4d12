"""The query side of :class:`graphstrata.Index`: retrieve and answer.

A mixin of ``Index`` (``bindings/api.py``), kept apart so each module stays one concept:
``query``, ``query_batch`` and ``query_vectors`` retrieve a context with one search mode (with
an optional metadata filter), ``answer`` and ``answer_result`` answer from it with the index's
LLM through the engine's one answer path (``engine/answer.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from graphstrata.engine import Answer, QueryResult, answer_result, parse_filter

if TYPE_CHECKING:
    from graphstrata.engine import Engine


class QueryAPI:
    """``Index.query``, ``query_batch``, ``query_vectors``, ``answer``, ``answer_result`` and
    ``check_filter``."""

    _engine: Engine

    def query(
        self,
        text: str,
        mode: str = "naive",
        budget_tokens: int | None = None,
        top_k: int | None = None,
        *,
        filter: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> QueryResult:
        """Retrieve a context for ``text`` with one search mode.

        Parameters
        ----------
        text:
            The question.
        mode:
            A mode of :attr:`modes`.
        budget_tokens, top_k:
            Token budget of the context and vector candidates per kind (default: the config's).
        filter:
            A metadata filter (docs/guide/filters.md), e.g. ``{"year": {"$gte": 2020}}``:
            only nodes of matching documents are searched and returned.
        params:
            The mode's typed parameters (``Engine.mode_params[mode]``, e.g. ``bias_share``).

        Returns
        -------
        QueryResult
            The retrieved nodes (each with its ``documents``: doc_id, title, metadata) and
            the query's report (``report["filter"]``: matching documents and nodes).

        Raises
        ------
        QueryError
            On an unknown mode, unknown or ill-typed parameters, a bad filter, a bad budget or
            top-k, or an empty query.
        """
        return self._engine.query(text, mode, budget_tokens, top_k, filter=filter, **params)

    def query_batch(
        self,
        texts: Sequence[str],
        mode: str = "naive",
        budget_tokens: int | None = None,
        top_k: int | None = None,
        *,
        filter: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> list[QueryResult]:
        """:meth:`query` for many questions, embedded in one call (one result per question)."""
        return self._engine.query_batch(texts, mode, budget_tokens, top_k, filter=filter, **params)

    def query_vectors(
        self,
        texts: Sequence[str],
        vectors: np.ndarray,
        mode: str = "naive",
        budget_tokens: int | None = None,
        top_k: int | None = None,
        embed_seconds: float = 0.0,
        **params: Any,
    ) -> list[QueryResult]:
        """:meth:`query_batch` with the questions already embedded (one row of ``vectors``
        per text, by :attr:`embedder`): the server embeds concurrent requests together."""
        return self._engine.query_vectors(
            texts, vectors, mode, budget_tokens, top_k, embed_seconds=embed_seconds, **params
        )

    def answer(
        self,
        text: str,
        mode: str = "naive",
        budget_tokens: int | None = None,
        *,
        history: Sequence[tuple[str, str]] = (),
        max_tokens: int = 256,
        filter: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> QueryResult:
        """Retrieve as :meth:`query` (``top_k`` and ``filter`` as there), then answer with
        the LLM, citing the retrieved nodes as ``[1]``, ``[2]``, ... (one prompt for every
        mode, and the same answer as ``POST /v1/answer``, the chat API and
        ``graphstrata answer``).

        Parameters
        ----------
        history:
            A chat's earlier ``(role, content)`` turns, put into the prompt; their user turns
            complete the search query (``conversation_query``).
        max_tokens:
            The completion limit.

        Returns
        -------
        QueryResult
            With ``answer`` and ``citations`` (one per marker and document) set.

        Raises
        ------
        QueryError
            As for :meth:`query`.
        LLMError
            When the LLM backend fails.
        """
        return self._engine.answer(
            text,
            mode,
            budget_tokens,
            history=history,
            max_tokens=max_tokens,
            filter=filter,
            **params,
        )

    @staticmethod
    def check_filter(filter: Mapping[str, Any] | None) -> None:
        """Raise ``QueryError`` naming the problem when ``filter`` is not a valid metadata
        filter (docs/guide/filters.md); the server checks one before embedding a query."""
        parse_filter(filter)

    def answer_result(
        self,
        text: str,
        result: QueryResult,
        history: Sequence[tuple[str, str]] = (),
        max_tokens: int = 256,
        query: str | None = None,
    ) -> Answer:
        """:meth:`answer` for a retrieval already made (e.g. with :meth:`query_vectors`):
        sets ``result.answer`` and ``result.citations``; ``query`` is what the retrieval
        searched with when it is not ``text`` (a chat's ``conversation_query``).

        Returns
        -------
        Answer
            The text, the citations and the LLM's usage.
        """
        return answer_result(self._engine.llm, text, result, history, max_tokens, query)
