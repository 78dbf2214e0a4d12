"""Grounded answers with numbered citations, shared by the chat API, ``/v1/answer?stream=true``
and ``graphstrata answer``.

The retrieved nodes are numbered ``[1]``, ``[2]``, ... in the order the search ranked them;
the numbered context goes into the system prompt, the index's LLM answers and cites the
numbers, and the citations (``{marker, doc_id, node_id, kind, score}``, one per node and
document) let a client resolve each marker. An answer is streamed as pieces whose
concatenation is exactly the whole answer (:func:`stream_pieces`), so a streamed and a
non-streamed answer to the same request read the same.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphstrata.engine.component import Hit
from graphstrata.engine.interfaces import LLM, LLMRequest

#: The system prompt of a grounded answer; ``{context}`` is the numbered context.
SYSTEM_PROMPT = """You answer questions using only the numbered context below. Cite the \
context items you use with their numbers in square brackets, like [1] or [2]. If the context \
does not hold the answer, say "Insufficient information." Be brief.

Context:
{context}"""

#: Default completion limit of a grounded answer.
ANSWER_MAX_TOKENS = 256

_PIECE = re.compile(r"\S+\s*|\s+")

#: OpenAPI (before 3.2) description of a server-sent event stream: the ``schema`` of a
#: ``text/event-stream`` response describes each event, with its ``data`` line(s).
SSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"data": {"type": "string"}, "event": {"type": "string"}},
    "required": ["data"],
}


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
class GroundedAnswer:
    """An answer, its citations and its token usage.

    Attributes
    ----------
    text:
        The answer, with ``[n]`` markers.
    citations:
        See :func:`citations`.
    prompt_tokens, completion_tokens:
        The LLM's usage.
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


def grounded_request(
    question: str,
    hits: Sequence[Hit],
    history: Sequence[tuple[str, str]] = (),
    max_tokens: int = ANSWER_MAX_TOKENS,
) -> LLMRequest:
    """The LLM request of a grounded answer.

    Parameters
    ----------
    question:
        The question (the last user message).
    hits:
        The retrieved nodes (numbered in this order).
    history:
        Earlier ``(role, content)`` turns of a chat, put into the prompt before the question.
    max_tokens:
        The completion limit.

    Returns
    -------
    LLMRequest
        Task ``answer``; ``inputs`` are the question and the numbered context.
    """
    context = numbered_context(hits)
    turns = "".join(f"{role}: {content}\n" for role, content in history)
    prompt = f"{SYSTEM_PROMPT.format(context=context)}\n\n{turns}user: {question}\nassistant:"
    return LLMRequest(
        task="answer", prompt=prompt, max_tokens=max_tokens, inputs=(question, context)
    )


def grounded_answer(
    llm: LLM,
    question: str,
    hits: Sequence[Hit],
    history: Sequence[tuple[str, str]] = (),
    max_tokens: int = ANSWER_MAX_TOKENS,
) -> GroundedAnswer:
    """Answer ``question`` from ``hits`` with one LLM call (blocking).

    Parameters
    ----------
    llm:
        The index's LLM backend.
    question, hits, history, max_tokens:
        As for :func:`grounded_request`.

    Returns
    -------
    GroundedAnswer
        The answer text, the citations of the numbered nodes and the usage.
    """
    (response,) = llm.complete([grounded_request(question, hits, history, max_tokens)])
    return GroundedAnswer(
        text=response.text.strip(),
        citations=citations(hits),
        prompt_tokens=response.prompt_tokens,
        completion_tokens=response.completion_tokens,
    )


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


def sse(data: dict[str, Any] | str) -> bytes:
    """One server-sent event: ``data: <json>`` (or the literal string) and a blank line."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {payload}\n\n".encode()
