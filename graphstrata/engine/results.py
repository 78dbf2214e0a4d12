"""What a query returns: :class:`QueryResult` (the hits and the report) and the two ways the
hits are read back: :func:`format_context` (the text handed to an LLM) and
:func:`tokens_by_kind` (how a mode spent its budget)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphstrata.engine.component import Hit

__all__ = ["KIND_TITLES", "QueryResult", "format_context", "tokens_by_kind"]


@dataclass
class QueryResult:
    """Retrieved nodes and the query's report."""

    nodes: list[Hit]
    report: dict[str, Any]
    answer: str | None = None
    citations: list[dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the hits, the report, and the answer with its citations if any."""
        out: dict[str, Any] = {"nodes": [h.to_dict() for h in self.nodes], "report": self.report}
        if self.answer is not None:
            out["answer"] = self.answer
            out["citations"] = self.citations or []
        return out

    @property
    def context(self) -> str:
        """The retrieved text grouped by kind, as handed to an LLM."""
        return format_context(self.nodes)


KIND_TITLES = {
    "T": "Text chunks",
    "L": "Summaries",
    "S": "Semantic units",
    "R": "Relationships",
    "A": "Entity attributes",
    "H": "High-level elements",
}


def format_context(hits: Sequence[Hit]) -> str:
    """Hits grouped by kind under Markdown headings, each line with its citations."""
    groups: dict[str, list[Hit]] = {}
    for h in hits:
        groups.setdefault(h.kind, []).append(h)
    parts = []
    for kind in ("H", "A", "L", "S", "R", "T"):
        if kind in groups:
            lines = [
                f"- {h.text}" + (f" [{', '.join(h.docs)}]" if h.docs else "") for h in groups[kind]
            ]
            parts.append(f"## {KIND_TITLES[kind]}\n" + "\n".join(lines))
    return "\n\n".join(parts)


def tokens_by_kind(hits: Sequence[Hit]) -> dict[str, int]:
    """Retrieved tokens per node kind letter (``{"T": 1650, "L": 310}``), kinds in first-hit
    order: how a mode spent its budget."""
    out: dict[str, int] = {}
    for h in hits:
        out[h.kind] = out.get(h.kind, 0) + int(h.tokens)
    return out
