"""Retrieval evaluation: how well each search mode retrieves, on the user's own QA data.

No LLM is needed: every measure compares the retrieved nodes with gold documents, gold
evidence sentences and gold answers at a fixed retrieved-token budget, so a mode that
retrieves more text cannot win by volume.

API (stable; the benchmarks import it)
--------------------------------------
``load_qa(path) -> list[QAItem]``
    Read a QA JSONL file (``id``, ``question``, ``answers``, ``type``, ``gold_doc_ids``,
    ``gold_facts``; see ``../shared/data/README.md``). ``as_qa_items`` does the same for
    dicts already in memory.
``ChunkMap.from_snapshot(snapshot)`` / ``ChunkMap(doc_chunks)``
    The chunk -> document information of one index version: each ``doc_id``'s chunks
    (T node id, text) in document order.
``score_hits(hits, item, chunk_map) -> dict``
    The measures of one question for one retrieved list (any objects with ``id``, ``kind``,
    ``text``, ``tokens`` and ``docs``, e.g. ``engine.component.Hit``). Keys: see
    ``QUESTION_KEYS``. A measure that does not apply to the question is ``None``.
``aggregate(scores) -> dict``
    Means over a list of ``score_hits`` dicts (``None`` values excluded, with counts).
``evaluate(index_or_engine, qa_items, modes, budget, limit=None, top_k=None) -> EvalResult``
    Run every question through every mode of an ``Engine`` (or anything with ``.engine``,
    e.g. ``graphstrata.Index``); ``qa_items`` may be a path. ``EvalResult.to_dict()`` is the
    JSON form, ``EvalResult.table()`` a readable (Markdown) table.

Measures, and their tie rules
-----------------------------
*Normalization*: "whitespace-normalized" means every run of whitespace becomes one space and
the ends are stripped. A string is "in the retrieved text" when it occurs in the text of one
retrieved node (nodes are not concatenated, so no match is made up across two unrelated
nodes; a fact cut by a chunk boundary is credited by chunk recall instead).

*Document recall* (``doc_recall``): the share of the question's distinct gold documents
(duplicates in ``gold_doc_ids`` count once) that have at least one retrieved chunk (T) or
semantic unit (S) whose ``docs`` include them. Summaries (L, H, A, R, ...) cite many
documents without holding their text, so they count only in ``doc_recall_with_summaries``,
which credits a document cited by any retrieved node. ``None`` when there is no gold
document (e.g. MultiHop-RAG's ``null_query``).

*Fact recall*, two ways, over the question's distinct gold facts (``None`` without facts):

- ``fact_recall_text``: the fact, whitespace-normalized, occurs verbatim (case-sensitive)
  in the retrieved text. Any node kind may hold it (a chunk, a semantic unit, an extractive
  summary that kept the sentence).
- ``fact_recall_chunk``: one of the fact's *source chunks* was retrieved. The source chunks
  are found among the chunks of the question's gold documents: the chunks whose normalized
  text contains the whole fact; if none does, the fact was cut by a window boundary and its
  source chunks are the consecutive chunks that together hold it (found in the document
  rebuilt by merging each chunk's overlap with the next, comparing with all whitespace
  removed since a boundary may fall inside a word or inside whitespace), keeping those
  whose part is not strictly inside another chunk's part; retrieving any of them counts. A
  fact found in no gold document's chunks has no source chunk (counted as missed and
  reported in ``facts_unlocated``).

*Answer containment* (``answer_contained``): 1 when a gold answer occurs in the retrieved
text, case-insensitively, after whitespace normalization. Verdicts of yes/no questions
("yes", "no", and the verdict words MultiHop-RAG also uses: "true", "false", "consistent",
"inconsistent", "agree", "disagree", "similar", "same", "different") and "Insufficient
information." tell nothing by occurring in a text, so they are skipped (case and a final
period ignored; see ``SKIPPED_ANSWERS``); the measure is ``None`` when every gold answer is
skipped.

*Cost*: ``tokens`` (retrieved tokens actually used, at most the budget), ``nodes``,
``embed_ms`` (query embedding; the engine embeds a batch of questions at once and reports
the per-question share), ``search_ms`` (the mode's search alone) and ``llm_calls``. Each mode
first answers one untimed warm-up question, so one-off per-version work (a lazily built
index, JIT compilation) is not counted as per-question latency.

A mode that the index does not serve is reported as unavailable (no numbers), never as zero.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from graphstrata.engine.store import Snapshot
from graphstrata.engine.types import NodeKind

#: Kinds whose citation proves the document's own text was retrieved.
TEXT_KINDS = frozenset({"T", "S"})
#: Gold answers that say nothing by occurring in a text: verdicts of yes/no questions.
SKIPPED_ANSWERS = frozenset(
    {
        "yes",
        "no",
        "true",
        "false",
        "consistent",
        "inconsistent",
        "agree",
        "disagree",
        "similar",
        "same",
        "different",
        "insufficient information",
    }
)
#: Keys of one question's score (``score_hits``).
QUESTION_KEYS = (
    "doc_recall",
    "doc_recall_with_summaries",
    "fact_recall_text",
    "fact_recall_chunk",
    "answer_contained",
    "facts_unlocated",
    "tokens",
    "nodes",
)
#: Recall-like measures averaged by ``aggregate`` (``None`` values left out).
MEAN_KEYS = (
    "doc_recall",
    "doc_recall_with_summaries",
    "fact_recall_text",
    "fact_recall_chunk",
    "answer_contained",
)
#: Questions evaluated per ``query_batch`` call (one embedding batch each).
QUERY_BATCH = 64

ProgressFn = Callable[[str, int, int], None]


class QAError(ValueError):
    """A QA file or item is malformed."""


class HitLike(Protocol):
    id: int
    kind: str
    text: str
    tokens: int
    docs: list[str]


# ------------------------------------------------------------------------------ QA items
@dataclass(frozen=True)
class QAItem:
    """One evaluation question with its gold evidence."""

    id: str
    question: str
    answers: tuple[str, ...] = ()
    type: str = "untyped"
    gold_doc_ids: tuple[str, ...] = ()
    gold_facts: tuple[str, ...] = ()


def _string_list(row: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = row.get(key, [])
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise QAError(f"{where}: {key!r} must be a list of strings")
    return tuple(value)


def as_qa_item(row: Mapping[str, Any], where: str = "item") -> QAItem:
    """Validate one QA dict; ``question`` is required, the gold lists default to empty."""
    if isinstance(row, QAItem):
        return row
    if not isinstance(row, Mapping):
        raise QAError(f"{where}: expected a JSON object, got {type(row).__name__}")
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise QAError(f"{where}: 'question' must be a non-empty string")
    return QAItem(
        id=str(row.get("id", where)),
        question=question,
        answers=_string_list(row, "answers", where),
        type=str(row.get("type") or "untyped"),
        gold_doc_ids=tuple(str(d) for d in row.get("gold_doc_ids") or ()),
        gold_facts=_string_list(row, "gold_facts", where),
    )


def as_qa_items(rows: Iterable[Mapping[str, Any] | QAItem]) -> list[QAItem]:
    """QA items from dicts (or items), validated."""
    return [as_qa_item(row, f"item {i + 1}") for i, row in enumerate(rows)]


def load_qa(path: str | Path) -> list[QAItem]:
    """Read a QA JSONL file (one question a line; blank lines ignored).

    Raises
    ------
    QAError
        A line that is not a JSON object or lacks a question (the line number is given).
    """
    path = Path(path)
    if not path.is_file():
        raise QAError(f"QA file {path} not found")
    items = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise QAError(f"{path}:{n}: not valid JSON ({exc.msg})") from exc
            items.append(as_qa_item(row, f"{path}:{n}"))
    if not items:
        raise QAError(f"{path}: no questions")
    return items


# ------------------------------------------------------------------------------ text rules
def normalize(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return " ".join(text.split())


def _squeeze(text: str) -> str:
    """Remove all whitespace (to compare across a chunk seam whose spacing is unknown)."""
    return "".join(text.split())


def unique(values: Iterable[str]) -> list[str]:
    """Distinct values in first-seen order."""
    return list(dict.fromkeys(values))


def scored_answers(answers: Iterable[str]) -> list[str]:
    """The gold answers that answer containment checks (lower-cased, normalized)."""
    out = []
    for answer in answers:
        norm = normalize(answer).lower()
        if norm and norm.rstrip(".").strip() not in SKIPPED_ANSWERS:
            out.append(norm)
    return unique(out)


# ------------------------------------------------------------------------------ chunk map
def _overlap(left: str, right: str) -> int:
    """Length of the longest suffix of ``left`` that is a prefix of ``right``."""
    for k in range(min(len(left), len(right)), 0, -1):
        if left.endswith(right[:k]):
            return k
    return 0


def locate_fact(fact: str, chunks: Sequence[tuple[int, str]]) -> list[int]:
    """Source chunk ids of ``fact`` among one document's chunks (in document order).

    The chunks whose whitespace-normalized text contains the whole fact; else, when a window
    boundary cut the fact, the consecutive chunks that together hold it (keeping those whose
    part is not strictly inside another's); else ``[]``.
    """
    target = normalize(fact)
    if not target:
        return []
    whole = [cid for cid, text in chunks if target in normalize(text)]
    if whole:
        return whole
    squeezed = _squeeze(fact)
    rebuilt = ""
    spans: list[tuple[int, int]] = []
    for _, text in chunks:
        piece = _squeeze(text)
        prev = spans[-1] if spans else (0, 0)
        shared = _overlap(rebuilt[prev[0] :], piece)
        start = len(rebuilt) - shared
        rebuilt += piece[shared:]
        spans.append((start, start + len(piece)))
    found: set[int] = set()
    pos = rebuilt.find(squeezed)
    while pos >= 0:
        end = pos + len(squeezed)
        parts = {
            i: (max(s, pos), min(e, end)) for i, (s, e) in enumerate(spans) if s < end and e > pos
        }
        for i, (a, b) in parts.items():
            inside = any(
                j != i and c <= a and b <= d and (d - c) > (b - a) for j, (c, d) in parts.items()
            )
            if not inside:
                found.add(i)
        pos = rebuilt.find(squeezed, pos + 1)
    return [chunks[i][0] for i in sorted(found)]


class ChunkMap:
    """Each document's chunks (T node id, text) in document order, for one index version.

    Parameters
    ----------
    doc_chunks : mapping doc_id -> sequence of (chunk id, text)
        Chunks in document order (the engine allocates a document's chunk ids in order).
    """

    def __init__(self, doc_chunks: Mapping[str, Sequence[tuple[int, str]]]):
        self._chunks = {str(d): list(c) for d, c in doc_chunks.items()}
        self._located: dict[tuple[str, tuple[str, ...]], frozenset[int]] = {}

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot) -> ChunkMap:
        """The chunks of every live document of ``snapshot``."""
        nodes = snapshot.nodes
        chunk_ids = nodes.ids_of_kind(int(NodeKind.T))  # ascending = document order
        keys = snapshot.docs.column("key").to_pylist()
        names = dict(zip(keys, snapshot.docs.column("doc_id").to_pylist(), strict=True))
        grouped: dict[str, list[tuple[int, str]]] = {name: [] for name in names.values()}
        texts = nodes.text_of(chunk_ids)
        for cid, docs, text in zip(
            chunk_ids.tolist(), nodes.docs_of(chunk_ids), texts, strict=True
        ):
            for key in docs:
                if key in names:
                    grouped[names[key]].append((cid, text))
        return cls(grouped)

    def has_doc(self, doc_id: str) -> bool:
        return doc_id in self._chunks

    def chunks_of(self, doc_id: str) -> list[tuple[int, str]]:
        return self._chunks.get(doc_id, [])

    def source_chunks(self, fact: str, doc_ids: Sequence[str]) -> frozenset[int]:
        """Source chunk ids of ``fact`` in the given (gold) documents (cached)."""
        key = (fact, tuple(doc_ids))
        if key not in self._located:
            found: set[int] = set()
            for doc_id in doc_ids:
                found.update(locate_fact(fact, self.chunks_of(doc_id)))
            self._located[key] = frozenset(found)
        return self._located[key]


# ------------------------------------------------------------------------------ measures
def document_recall(
    hits: Sequence[HitLike], gold_docs: Sequence[str], kinds: Collection[str] | None
) -> float | None:
    """Share of distinct ``gold_docs`` cited by a hit of one of ``kinds`` (any kind if None).

    ``None`` when there is no gold document.
    """
    gold = unique(gold_docs)
    if not gold:
        return None
    cited = {d for h in hits if kinds is None or h.kind in kinds for d in h.docs}
    return sum(d in cited for d in gold) / len(gold)


def fact_recall_text(hits: Sequence[HitLike], facts: Sequence[str]) -> float | None:
    """Share of distinct facts found verbatim (whitespace-normalized) in one hit's text."""
    targets = unique(f for f in (normalize(x) for x in facts) if f)
    if not targets:
        return None
    texts = [normalize(h.text) for h in hits]
    return sum(any(f in t for t in texts) for f in targets) / len(targets)


def fact_recall_chunk(
    hits: Sequence[HitLike], facts: Sequence[str], gold_docs: Sequence[str], chunk_map: ChunkMap
) -> tuple[float | None, int]:
    """(share of distinct facts with a retrieved source chunk, facts with no source chunk)."""
    targets = unique(f for f in (normalize(x) for x in facts) if f)
    if not targets:
        return None, 0
    docs = unique(gold_docs)
    retrieved = {int(h.id) for h in hits if h.kind == "T"}
    sources = [chunk_map.source_chunks(f, docs) for f in targets]
    found = sum(bool(s & retrieved) for s in sources)
    return found / len(targets), sum(not s for s in sources)


def answer_containment(hits: Sequence[HitLike], answers: Sequence[str]) -> float | None:
    """1.0 if a scored gold answer occurs (case-insensitive) in one hit's text, else 0.0."""
    wanted = scored_answers(answers)
    if not wanted:
        return None
    texts = [normalize(h.text).lower() for h in hits]
    return float(any(a in t for a in wanted for t in texts))


def score_hits(hits: Sequence[HitLike], item: QAItem, chunk_map: ChunkMap) -> dict[str, Any]:
    """Every measure of one question for one retrieved list (see the module docstring).

    Returns
    -------
    dict
        ``QUESTION_KEYS``; recall values in [0, 1] or ``None`` when they do not apply.
    """
    chunk_recall, unlocated = fact_recall_chunk(hits, item.gold_facts, item.gold_doc_ids, chunk_map)
    return {
        "doc_recall": document_recall(hits, item.gold_doc_ids, TEXT_KINDS),
        "doc_recall_with_summaries": document_recall(hits, item.gold_doc_ids, None),
        "fact_recall_text": fact_recall_text(hits, item.gold_facts),
        "fact_recall_chunk": chunk_recall,
        "answer_contained": answer_containment(hits, item.answers),
        "facts_unlocated": unlocated,
        "tokens": int(sum(int(h.tokens) for h in hits)),
        "nodes": len(hits),
    }


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def aggregate(scores: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Means of a list of question scores.

    Each recall-like measure is averaged over the questions where it applies (its count is
    ``<key>_n``); cost keys (``tokens``, ``nodes``, ``embed_ms``, ``search_ms``,
    ``llm_calls``) over all questions, with the 95th percentile of ``search_ms``.
    """
    out: dict[str, Any] = {"questions": len(scores)}
    for key in MEAN_KEYS:
        values = [float(s[key]) for s in scores if s.get(key) is not None]
        out[key] = _mean(values)
        out[f"{key}_n"] = len(values)
    for key in ("tokens", "nodes", "embed_ms", "search_ms", "llm_calls"):
        values = [float(s[key]) for s in scores if s.get(key) is not None]
        out[key] = _mean(values)
    search = [float(s["search_ms"]) for s in scores if s.get("search_ms") is not None]
    out["search_ms_p95"] = float(np.percentile(search, 95)) if search else None
    out["facts_unlocated"] = int(sum(int(s.get("facts_unlocated") or 0) for s in scores))
    return out


# ------------------------------------------------------------------------------ runner
@dataclass
class ModeResult:
    """One mode's scores: overall, per question ``type``, and per question."""

    mode: str
    available: bool
    overall: dict[str, Any] = field(default_factory=dict)
    by_type: dict[str, dict[str, Any]] = field(default_factory=dict)
    questions: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self, include_questions: bool = False) -> dict[str, Any]:
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

    def to_dict(self, include_questions: bool = False) -> dict[str, Any]:
        return {
            "index": self.index,
            "version": self.version,
            "budget": self.budget,
            "top_k": self.top_k,
            "questions": self.questions,
            "available_modes": self.available_modes,
            "seconds": round(self.seconds, 3),
            "notes": self.notes,
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


def _engine(index_or_engine: Any) -> Any:
    """An ``Engine`` from an ``Engine`` or a facade holding one in ``.engine``."""
    engine = getattr(index_or_engine, "engine", index_or_engine)
    if not hasattr(engine, "query_batch") or not hasattr(engine, "state"):
        raise TypeError(
            f"evaluate needs a graphstrata Index or Engine, got {type(index_or_engine).__name__}"
        )
    return engine


def _as_items(qa_items: str | Path | Iterable[Any]) -> list[QAItem]:
    if isinstance(qa_items, str | Path):
        return load_qa(qa_items)
    return as_qa_items(qa_items)


def parse_modes(modes: str | Sequence[str] | None, available: Sequence[str]) -> list[str]:
    """Modes from a comma list or sequence; ``None`` or ``"all"`` means every available one."""
    if modes is None or modes == "all":
        return list(available)
    names = modes.split(",") if isinstance(modes, str) else list(modes)
    out = unique(m.strip() for m in names if m.strip())
    if not out:
        raise ValueError("no search mode given")
    return out


def _query_mode(
    engine: Any,
    items: Sequence[QAItem],
    mode: str,
    budget: int,
    top_k: int | None,
    chunk_map: ChunkMap,
    progress: ProgressFn | None,
) -> list[dict[str, Any]]:
    engine.query(items[0].question, mode=mode, budget_tokens=budget, top_k=top_k)  # warm-up
    scores: list[dict[str, Any]] = []
    for start in range(0, len(items), QUERY_BATCH):
        batch = items[start : start + QUERY_BATCH]
        results = engine.query_batch(
            [q.question for q in batch], mode=mode, budget_tokens=budget, top_k=top_k
        )
        for item, result in zip(batch, results, strict=True):
            score = score_hits(result.nodes, item, chunk_map)
            report = result.report
            score.update(
                id=item.id,
                type=item.type,
                embed_ms=1000.0 * float(report.get("embed_seconds", 0.0)),
                search_ms=1000.0 * float(report.get("search_seconds", 0.0)),
                llm_calls=int(report.get("llm_calls", 0)),
            )
            scores.append(score)
        if progress:
            progress(f"eval {mode}", len(scores), len(items))
    return scores


def evaluate(
    index_or_engine: Any,
    qa_items: str | Path | Iterable[Any],
    modes: str | Sequence[str] | None = None,
    budget: int = 2000,
    limit: int | None = None,
    top_k: int | None = None,
    progress: ProgressFn | None = None,
) -> EvalResult:
    """Evaluate search modes of an index over a QA set at one retrieved-token budget.

    Parameters
    ----------
    index_or_engine : Engine or Index
        The index, at its current version.
    qa_items : path or iterable of QAItem / dict
        The questions (``load_qa`` format).
    modes : comma list, sequence, ``"all"`` or None
        Modes to evaluate; default every mode the index serves. A mode the index does not
        serve is kept in the result as unavailable.
    budget : int
        Retrieved-token budget of every query (default 2000).
    limit : int, optional
        Evaluate only the first ``limit`` questions.
    top_k : int, optional
        Candidates per query (default: the index's ``search.top_k``).
    progress : callable(stage, done, total), optional
        Called after each batch of questions.

    Returns
    -------
    EvalResult
    """
    engine = _engine(index_or_engine)
    items = _as_items(qa_items)
    if limit is not None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        items = items[:limit]
    if not items:
        raise QAError("no questions to evaluate")
    if budget < 1:
        raise ValueError(f"budget must be >= 1 token, got {budget}")
    start = time.perf_counter()
    state = engine.state
    available = list(engine.modes)
    chunk_map = ChunkMap.from_snapshot(state.snapshot)
    result = EvalResult(
        index=str(engine.store.root),
        version=int(state.version),
        budget=int(budget),
        top_k=top_k,
        questions=len(items),
        modes={},
        available_modes=available,
    )
    result.notes.extend(_gold_notes(items, chunk_map))
    for mode in parse_modes(modes, available):
        if mode not in available:
            result.modes[mode] = ModeResult(mode, available=False)
            continue
        scores = _query_mode(engine, items, mode, int(budget), top_k, chunk_map, progress)
        types = unique(s["type"] for s in scores)
        result.modes[mode] = ModeResult(
            mode,
            available=True,
            overall=aggregate(scores),
            by_type={t: aggregate([s for s in scores if s["type"] == t]) for t in types},
            questions=scores,
        )
    if engine.version != result.version:
        result.notes.append(
            f"the index moved from version {result.version} to {engine.version} during the run"
        )
    result.seconds = time.perf_counter() - start
    return result


def _gold_notes(items: Sequence[QAItem], chunk_map: ChunkMap) -> list[str]:
    gold = unique(d for q in items for d in q.gold_doc_ids)
    missing = [d for d in gold if not chunk_map.has_doc(d)]
    if not missing:
        return []
    shown = ", ".join(repr(d) for d in missing[:3])
    return [
        f"{len(missing)} of {len(gold)} gold documents are not in the index (e.g. {shown}); "
        "they count as not retrieved"
    ]


# ------------------------------------------------------------------------------ rendering
TABLE_COLUMNS = (
    ("doc_recall", "doc R"),
    ("doc_recall_with_summaries", "doc R +sum"),
    ("fact_recall_text", "fact R text"),
    ("fact_recall_chunk", "fact R chunk"),
    ("answer_contained", "answer (n)"),
    ("tokens", "tokens"),
    ("embed_ms", "embed ms"),
    ("search_ms", "search ms"),
)


def _cell(key: str, agg: Mapping[str, Any]) -> str:
    value = agg.get(key)
    if value is None:
        return "–"
    if key == "answer_contained":  # applies to few questions of some types: show how many
        return f"{value:.3f} ({agg[key + '_n']})"
    if key in MEAN_KEYS:
        return f"{value:.3f}"
    if key == "tokens":
        return f"{value:.0f}"
    return f"{value:.1f}"


def format_rows(
    result: EvalResult, by_type: bool = True, label: str = "", unavailable: bool = True
) -> list[list[str]]:
    """Table rows (without header) of one result: one per mode, then per mode and type.

    A mode the index does not serve gets one "unavailable" row (none if ``unavailable`` is
    false); ``label`` fills an extra first column (e.g. the dataset or the budget).
    """
    rows: list[list[str]] = []
    width = len(TABLE_COLUMNS)
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
                    *[_cell(k, agg) for k, _ in TABLE_COLUMNS],
                ]
            )
    return rows


def table_header(label: str = "") -> list[str]:
    return [*([label] if label else []), "mode", "type", "n", *[t for _, t in TABLE_COLUMNS]]


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
    table = markdown_table(table_header(), format_rows(result, by_type))
    notes = "".join(f"\nnote: {n}" for n in result.notes)
    return f"{caption}\n\n{table}{notes}"
