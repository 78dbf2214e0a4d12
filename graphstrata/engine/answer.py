"""Answers grounded in the retrieved nodes, with numbered citations: the one answer path of
``Index.answer``, ``POST /v1/answer``, the chat API and ``graphstrata answer``.

The retrieved nodes are numbered ``[1]``, ``[2]``, ... in the order the search ranked them;
the numbered context goes into the one answer prompt (``prompts.answer_request``), the
LLM answers and cites the numbers, and the citations (``{marker, doc_id, node_id, kind,
score}``, one per node and document) let a reader resolve each marker. An answer is
streamed as pieces whose concatenation is exactly the whole answer (:func:`stream_pieces`),
so a streamed and a non-streamed answer to the same request read the same.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from graphstrata.engine.component import Hit, MeteredLLM
from graphstrata.engine.interfaces import LLM
from graphstrata.engine.prompts import ANSWER_MAX_TOKENS, answer_request
from graphstrata.engine.report import OperationReport

_PIECE = re.compile(r"\S+\s*|\s+")


def numbered_context(hits: Sequence[Hit]) -> str:
    """The retrieved nodes as ``[n] text`` entries, one per node, in rank order.

    Parameters
    ----------
    hits:
        The retrieved nodes.

    Returns
    -------
    str
        The context (empty when nothing was retrieved).
    """
    return "\n\n".join(f"[{i}] {h.text.strip()}" for i, h in enumerate(hits, start=1))


def citations(hits: Sequence[Hit]) -> list[dict[str, Any]]:
    """One citation per retrieved node and document, with the node's marker number.

    Parameters
    ----------
    hits:
        The retrieved nodes, in the order they were numbered.

    Returns
    -------
    list of dict
        ``{"marker": n, "doc_id", "node_id", "kind", "score"}`` (a node of several documents
        gives one per document; one without documents gives ``doc_id`` None).
    """
    out: list[dict[str, Any]] = []
    for i, h in enumerate(hits, start=1):
        docs: list[str | None] = list(h.docs) or [None]
        for doc in docs:
            out.append(
                {
                    "marker": i,
                    "doc_id": doc,
                    "node_id": int(h.id),
                    "kind": h.kind,
                    "score": round(float(h.score), 6),
                }
            )
    return out


@dataclass
class Answer:
    """An answer, its citations and its token usage.

    Attributes
    ----------
    text:
        The answer, with ``[n]`` markers.
    citations:
        See :func:`citations`.
    prompt_tokens, completion_tokens:
        The LLM's usage (a cached answer reports what it cost when it was paid for).
    """

    text: str
    citations: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def usage(self) -> dict[str, int]:
        """OpenAI-style usage."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


class Answered(Protocol):
    """What :func:`answer_result` reads and sets of a retrieval (``QueryResult``)."""

    nodes: list[Hit]
    report: dict[str, Any]
    answer: str | None
    citations: list[dict[str, Any]] | None


def answer_result(
    llm: LLM,
    question: str,
    result: Answered,
    history: Sequence[tuple[str, str]] = (),
    max_tokens: int = ANSWER_MAX_TOKENS,
) -> Answer:
    """Answer ``question`` from a retrieval with one LLM call (blocking).

    Sets ``result.answer`` and ``result.citations`` and adds the call (seconds, calls,
    tokens) to ``result.report``.

    Parameters
    ----------
    llm:
        The index's LLM.
    question:
        The question (a chat's last user message).
    result:
        The retrieval; its nodes are numbered in their order.
    history:
        Earlier ``(role, content)`` turns of a chat, put into the prompt before the question.
    max_tokens:
        The completion limit.

    Returns
    -------
    Answer
        The answer text, the citations of the numbered nodes and the usage.
    """
    report = OperationReport("answer")
    request = answer_request(question, numbered_context(result.nodes), max_tokens, history)
    start = time.perf_counter()
    (response,) = MeteredLLM(llm, report).complete("answer", [request])
    answer = Answer(
        text=response.text.strip(),
        citations=citations(result.nodes),
        prompt_tokens=response.prompt_tokens,
        completion_tokens=response.completion_tokens,
    )
    result.answer = answer.text
    result.citations = answer.citations
    result.report["answer_seconds"] = round(time.perf_counter() - start, 6)
    result.report["llm_calls"] += report.llm_calls
    result.report["prompt_tokens"] += report.prompt_tokens
    result.report["completion_tokens"] += report.completion_tokens
    return answer


def stream_pieces(text: str) -> Iterator[str]:
    """``text`` as word pieces (each with its trailing space) whose concatenation is ``text``.

    Parameters
    ----------
    text:
        The whole answer.

    Yields
    ------
    str
        The pieces, in order.
    """
    for match in _PIECE.finditer(text):
        yield match.group(0)
