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

import dataclasses
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
#: A citation: ``[n]`` or ``[n, m, ...]``.
_MARKERS = re.compile(r"\[(\d{1,6}(?:\s*,\s*\d{1,6})*)\]")


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


def cited_markers(text: str, count: int) -> list[int]:
    """The marker numbers ``text`` cites, in order of first appearance.

    ``[2]``, ``[1, 3]`` and ``[1][3]`` are read; a number outside ``1..count`` (no such
    node) is not a citation.

    Parameters
    ----------
    text:
        The answer.
    count:
        How many nodes were numbered.

    Returns
    -------
    list of int
        Distinct marker numbers.
    """
    out: list[int] = []
    for group in _MARKERS.finditer(text):
        for number in group.group(1).split(","):
            n = int(number)
            if 1 <= n <= count and n not in out:
                out.append(n)
    return out


def citations(hits: Sequence[Hit], text: str) -> list[dict[str, Any]]:
    """One citation per node the answer cites and per document of that node.

    Parameters
    ----------
    hits:
        The retrieved nodes, in the order they were numbered.
    text:
        The answer, whose ``[n]`` markers select the nodes (:func:`cited_markers`).

    Returns
    -------
    list of dict
        ``{"marker": n, "doc_id", "node_id", "kind", "score", "title", "metadata", "spans",
        "text"}`` in marker order of first citation; ``title`` and ``metadata`` come from the
        hit's entry for that document, ``spans`` are the hit's spans in that document, ``text``
        is the node's text. A node of several documents gives one per document; one without
        documents gives ``doc_id`` None.
    """
    out: list[dict[str, Any]] = []
    for n in cited_markers(text, len(hits)):
        h = hits[n - 1]
        # Hit.documents is aligned with docs; a hit built without them (a hand-made one)
        # cites no title or metadata.
        about = dict(zip(h.docs, h.documents, strict=False))
        spans: list[dict[str, Any]] = h.spans
        docs: list[str | None] = list(h.docs) or [None]
        for doc in docs:
            info = about.get(doc) if doc is not None else None
            out.append(
                {
                    "marker": n,
                    "doc_id": doc,
                    "node_id": int(h.id),
                    "kind": h.kind,
                    "score": round(float(h.score), 6),
                    "title": (info or {}).get("title") or None,
                    "metadata": (info or {}).get("metadata") or {},
                    "spans": [s for s in spans if s.get("doc_id") == doc],
                    "text": h.text,
                }
            )
    return out


def sources_footer(cited: Sequence[dict[str, Any]]) -> str:
    """The citations as numbered references: ``Sources:`` then ``[n] title (page p)`` lines.

    Parameters
    ----------
    cited:
        :func:`citations` of an answer.

    Returns
    -------
    str
        ``"\n\nSources:\n[1] Title (page 3)\n..."`` (one line per marker and document, the
        title else the document id, the pages of its spans when they have any); empty when
        nothing is cited.
    """
    lines: list[str] = []
    for c in cited:
        name = c["title"] or c["doc_id"] or f"node {c['node_id']}"
        pages = sorted({s["page"] for s in c["spans"] if s.get("page") is not None})
        where = f" (page{'s' if len(pages) > 1 else ''} {', '.join(map(str, pages))})"
        line = f"[{c['marker']}] {name}{where if pages else ''}"
        if line not in lines:
            lines.append(line)
    return "\n\nSources:\n" + "\n".join(lines) if lines else ""


@dataclass
class Answer:
    """An answer, its citations and its token usage.

    Attributes
    ----------
    text:
        The answer, with ``[n]`` markers.
    citations:
        See :func:`citations` (the cited nodes only).
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
    query: str | None = None,
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
    query:
        What the retrieval searched with when it is not ``question`` (a chat's
        ``conversation_query``): the prompt keeps the user's words and the earlier turns,
        and the request's ``inputs`` carry this query, so a backend that reads only the
        inputs (the extractive one) answers the follow-up's subject.

    Returns
    -------
    Answer
        The answer text, the citations of the nodes it cites and the usage.
    """
    report = OperationReport("answer")
    context = numbered_context(result.nodes)
    request = answer_request(question, context, max_tokens, history)
    if query is not None and query != question:
        request = dataclasses.replace(request, inputs=(query, context))
    start = time.perf_counter()
    (response,) = MeteredLLM(llm, report).complete("answer", [request])
    text = response.text.strip()
    answer = Answer(
        text=text,
        citations=citations(result.nodes, text),
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
