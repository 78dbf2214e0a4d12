"""Evaluation results: per-mode scores, their JSON form and their Markdown tables."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphstrata.evaluation.scoring import ANSWER_KEYS, MEAN_KEYS, RANK_KEYS


@dataclass
class ModeResult:
    """One mode's scores: overall, per question ``type``, and per question."""

    mode: str
    available: bool
    overall: dict[str, Any] = field(default_factory=dict)
    by_type: dict[str, dict[str, Any]] = field(default_factory=dict)
    questions: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self, include_questions: bool = False) -> dict[str, Any]:
        """The JSON form (floats rounded to 4 decimals); per-question scores on request."""
        out: dict[str, Any] = {"mode": self.mode, "available": self.available}
        if self.available:
            out["overall"] = _rounded(self.overall)
            out["by_type"] = {t: _rounded(a) for t, a in self.by_type.items()}
            if include_questions:
                out["questions"] = [_rounded(q) for q in self.questions]
        return out


@dataclass
class EvalResult:
    """Scores of several modes over one QA set at one budget."""

    index: str
    version: int
    budget: int
    top_k: int | None
    questions: int
    modes: dict[str, ModeResult]
    available_modes: list[str]
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    #: The LLM backend that answered (``evaluate(..., answers=True)``), else None.
    answer_llm: str | None = None
    #: The mode the others are compared with (``evaluate(..., baseline=)``), else None.
    baseline: str | None = None
    #: ``{mode: {measure: {diff, lo, hi, n} or None}}``: paired bootstrap intervals of each
    #: mode's difference to ``baseline`` (``evaluation.compare.compare_modes``).
    comparisons: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self, include_questions: bool = False) -> dict[str, Any]:
        """The JSON form (floats rounded to 4 decimals); per-question scores on request."""
        return {
            "index": self.index,
            "version": self.version,
            "budget": self.budget,
            "top_k": self.top_k,
            "questions": self.questions,
            "available_modes": self.available_modes,
            "seconds": round(self.seconds, 3),
            "notes": self.notes,
            "answer_llm": self.answer_llm,
            "baseline": self.baseline,
            "comparisons": {
                m: {k: _rounded(ci) if ci else None for k, ci in c.items()}
                for m, c in self.comparisons.items()
            },
            "modes": {m: r.to_dict(include_questions) for m, r in self.modes.items()},
        }

    def table(self, by_type: bool = True) -> str:
        """A Markdown table: one row per mode (and per mode and type)."""
        return format_table(self, by_type=by_type)


def _rounded(values: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: round(v, 4) if isinstance(v, float) and math.isfinite(v) else v
        for k, v in values.items()
    }


TABLE_COLUMNS = (
    ("doc_recall", "doc R"),
    ("doc_recall_with_summaries", "doc R +sum"),
    ("fact_recall_text", "fact R text"),
    ("fact_recall_chunk", "fact R chunk"),
    ("evidence_recall", "evidence R"),
    ("answer_contained", "answer (n)"),
    ("passage_recall@5", "R@5"),
    ("mrr@10", "MRR@10"),
    ("tokens", "tokens"),
    ("embed_ms", "embed ms"),
    ("search_ms", "search ms"),
)
#: Columns added when the generated answers were evaluated (``EvalResult.answer_llm``).
ANSWER_COLUMNS = (
    ("answer_generated", "gen. answer (n)"),
    ("answer_tokens", "answer tokens"),
    ("answer_ms", "answer ms"),
)


def columns(answers: bool = False) -> tuple[tuple[str, str], ...]:
    """The table's (key, title) columns, with the generated-answer ones when ``answers``."""
    return TABLE_COLUMNS + ANSWER_COLUMNS if answers else TABLE_COLUMNS


def _cell(key: str, agg: Mapping[str, Any]) -> str:
    value = agg.get(key)
    if value is None:
        return "–"
    if key in ("answer_contained", *ANSWER_KEYS):  # few questions of some types: how many
        return f"{value:.3f} ({agg[key + '_n']})"
    if key in MEAN_KEYS or key in RANK_KEYS:
        return f"{value:.3f}"
    if key in ("tokens", "answer_tokens"):
        return f"{value:.0f}"
    return f"{value:.1f}"


def format_rows(
    result: EvalResult, by_type: bool = True, label: str = "", unavailable: bool = True
) -> list[list[str]]:
    """Table rows (without header) of one result: one per mode, then per mode and type.

    A mode the index does not serve gets one "unavailable" row (none if ``unavailable`` is
    false); ``label`` fills an extra first column (e.g. the dataset or the budget). With
    generated answers (``answer_llm`` set) the ``ANSWER_COLUMNS`` follow.
    """
    rows: list[list[str]] = []
    cols = columns(result.answer_llm is not None)
    width = len(cols)
    prefix = [label] if label else []
    for mode, res in result.modes.items():
        if not res.available:
            if unavailable:
                rows.append([*prefix, mode, "all", "–", "unavailable", *[""] * (width - 1)])
            continue
        groups = [("all", res.overall)]
        if by_type and len(res.by_type) > 1:
            groups += list(res.by_type.items())
        for qtype, agg in groups:
            rows.append(
                [
                    *prefix,
                    mode,
                    qtype,
                    str(agg["questions"]),
                    *[_cell(k, agg) for k, _ in cols],
                ]
            )
    return rows


def table_header(label: str = "", answers: bool = False) -> list[str]:
    """Column titles of ``format_rows``' rows (``label`` adds a first column; ``answers``
    the generated-answer columns)."""
    titles = [t for _, t in columns(answers)]
    return [*([label] if label else []), "mode", "type", "n", *titles]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub Markdown table, columns padded so it also reads well in a terminal."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


def format_table(result: EvalResult, by_type: bool = True) -> str:
    """The result as a Markdown table with a one-line caption."""
    caption = (
        f"{result.questions} questions, budget {result.budget} tokens, "
        f"index version {result.version}"
    )
    if result.answer_llm is not None:
        caption += f", answers by {result.answer_llm}"
    header = table_header(answers=result.answer_llm is not None)
    table = markdown_table(header, format_rows(result, by_type))
    notes = "".join(f"\nnote: {n}" for n in result.notes)
    return f"{caption}\n\n{table}{comparison_table(result)}{notes}"


#: Measures whose intervals ``comparison_table`` shows.
COMPARED_COLUMNS = (
    ("doc_recall", "doc R"),
    ("fact_recall_text", "fact R text"),
    ("fact_recall_chunk", "fact R chunk"),
    ("evidence_recall", "evidence R"),
    ("mrr@10", "MRR@10"),
)


def ci_cell(ci: Mapping[str, Any] | None) -> str:
    """``+0.012 [-0.004, +0.029]``: a paired difference and its interval, or "–"."""
    if not ci:
        return "–"
    return f"{ci['diff']:+.3f} [{ci['lo']:+.3f}, {ci['hi']:+.3f}]"


def comparison_table(result: EvalResult) -> str:
    """The paired bootstrap intervals against the baseline, as a Markdown table ("" when
    no baseline was given)."""
    if result.baseline is None or not result.comparisons:
        return ""
    header = ["mode", *(t for _, t in COMPARED_COLUMNS)]
    rows = [
        [mode, *(ci_cell(cis.get(k)) for k, _ in COMPARED_COLUMNS)]
        for mode, cis in result.comparisons.items()
    ]
    return (
        f"\n\nDifference to {result.baseline} (mean over paired questions, 95 % paired "
        f"bootstrap interval)\n\n{markdown_table(header, rows)}"
    )
