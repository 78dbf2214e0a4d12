"""Scoring retrieved nodes against a QA set: QA items, measures, aggregates.

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

*Evidence-token recall* (``evidence_recall``), for gold facts that are paraphrased rather
than quoted (GraphRAG-Bench): per distinct fact, the share of its content words present
anywhere in the retrieved text, averaged over the facts. Content words are BM25's terms
(``engine.sparse.analysis.analyze``: lower-cased words of two or more word characters,
Lucene's 33 English stop words removed, Snowball stems), so "carpenters" in the text
counts for "carpenter" in the fact; a fact with no content word is left out, and the
measure is ``None`` without facts. Unlike fact recall it credits words spread over several
nodes: it says how much of the evidence's wording the context holds, not that one node
states it.

*Answer containment* (``answer_contained``): 1 when a gold answer occurs in the retrieved
text, case-insensitively, after whitespace normalization. Verdicts of yes/no questions
("yes", "no", and the verdict words MultiHop-RAG also uses: "true", "false", "consistent",
"inconsistent", "agree", "disagree", "similar", "same", "different") and "Insufficient
information." tell nothing by occurring in a text, so they are skipped (case and a final
period ignored; see ``SKIPPED_ANSWERS``); the measure is ``None`` when every gold answer is
skipped.

*Generated-answer containment* (``answer_generated``, only with ``evaluate(...,
answers=True)``): the same rule applied to the answer the index's LLM backend wrote from
the retrieved context (``Engine.answer``), instead of to the context itself; questions whose
gold answers are all skipped are not answered. ``answer_ms`` is the LLM call's time and
``answer_tokens`` the answer's length (cl100k tokens).

*Rank measures*, over the mode's ranked candidates before packing (the query report's
``ranked``: its first ``engine.modes.packing.RANKED_DEPTH`` ids; the ``graph`` mode lists
passages, a semantic unit standing for its chunk), counting only chunks (T), so summaries
take places but hold no passage: ``passage_recall@k`` = share of the distinct gold facts
whose source chunk is known that have one among the first ``k`` candidates (a fact's
source chunks are its passages, as for ``fact_recall_chunk``; ``None`` when no fact has
one, e.g. paraphrased gold); ``hits@k`` = 1 when any gold fact's source chunk is among them; ``doc_recall@k`` =
share of gold documents that a chunk among the first ``k`` belongs to; ``mrr@10`` = 1 /
the place of the first candidate that is a source chunk of a gold fact, 0 when none is
among the first 10. ``k`` runs over ``RANK_KS``; on HotpotQA, one chunk per passage, these
are the passage Recall@2/5 and MRR of published tables.

*Cost*: ``tokens`` (retrieved tokens actually used, at most the budget), ``nodes``,
``embed_ms`` (query embedding; the engine embeds a batch of questions at once and reports
the per-question share), ``search_ms`` (the mode's search alone) and ``llm_calls``. Each mode
first answers one untimed warm-up question, so one-off per-version work (a lazily built
index, JIT compilation) is not counted as per-question latency.

A mode that the index does not serve is reported as unavailable (no numbers), never as zero.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from graphstrata.engine.sparse.analysis import analyze
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
    "evidence_recall",
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
    "evidence_recall",
    "answer_contained",
)
#: Cut-offs of the rank measures (``rank_scores``).
RANK_KS = (2, 5, 10)
#: Rank measures of one question, averaged by ``aggregate`` like ``MEAN_KEYS``.
RANK_KEYS = (
    *(f"passage_recall@{k}" for k in RANK_KS),
    *(f"hits@{k}" for k in RANK_KS),
    *(f"doc_recall@{k}" for k in RANK_KS),
    "mrr@10",
)
#: Measures of the generated answer (``evaluate(..., answers=True)``): averaged like
#: ``MEAN_KEYS``, reported only when answers were evaluated.
ANSWER_KEYS = ("answer_generated",)
#: Cost keys of the generated answer, averaged over the questions answered.
ANSWER_COST_KEYS = ("answer_ms", "answer_tokens")


class QAError(ValueError):
    """A QA file or item is malformed."""


class HitLike(Protocol):
    """What the measures read of a retrieved node (``engine.component.Hit`` has it)."""

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


def as_qa_item(row: Mapping[str, Any] | QAItem, where: str = "item") -> QAItem:
    """Validate one QA dict (an item passes as is); ``question`` is required, the gold lists
    default to empty."""
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
        self._docs_of: dict[int, list[str]] = {}
        for doc_id, chunks in self._chunks.items():
            for cid, _ in chunks:
                self._docs_of.setdefault(int(cid), []).append(doc_id)
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
        """Whether ``doc_id`` is a live document of the version."""
        return doc_id in self._chunks

    def chunks_of(self, doc_id: str) -> list[tuple[int, str]]:
        """The (chunk id, text) of a document, in order; empty when unknown."""
        return self._chunks.get(doc_id, [])

    def docs_of(self, chunk_id: int) -> list[str]:
        """The documents a chunk belongs to; empty for any other id."""
        return self._docs_of.get(int(chunk_id), [])

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


def evidence_token_recall(hits: Sequence[HitLike], facts: Sequence[str]) -> float | None:
    """Mean over distinct facts of the share of a fact's content words (BM25 terms:
    ``analyze``) found anywhere in the hits' text; ``None`` without a fact that has one."""
    targets = [set(analyze(f)) for f in unique(normalize(x) for x in facts if normalize(x))]
    targets = [t for t in targets if t]
    if not targets:
        return None
    context: set[str] = set()
    for h in hits:
        context.update(analyze(h.text))
    return float(np.mean([len(t & context) / len(t) for t in targets]))


def answer_containment(hits: Sequence[HitLike], answers: Sequence[str]) -> float | None:
    """1.0 if a scored gold answer occurs (case-insensitive) in one hit's text, else 0.0."""
    return text_containment([h.text for h in hits], answers)


def text_containment(texts: Sequence[str], answers: Sequence[str]) -> float | None:
    """1.0 if a scored gold answer occurs (case-insensitive, whitespace-normalized) in one
    of ``texts``, else 0.0; ``None`` when every gold answer is skipped (``SKIPPED_ANSWERS``).

    The one containment rule: of the retrieved text (``answer_containment``) and of a
    generated answer (``answer_generated``).
    """
    wanted = scored_answers(answers)
    if not wanted:
        return None
    lowered = [normalize(t).lower() for t in texts]
    return float(any(a in t for a in wanted for t in lowered))


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
        "evidence_recall": evidence_token_recall(hits, item.gold_facts),
        "answer_contained": answer_containment(hits, item.answers),
        "facts_unlocated": unlocated,
        "tokens": int(sum(int(h.tokens) for h in hits)),
        "nodes": len(hits),
    }


def rank_scores(
    ranked: Sequence[int] | None, item: QAItem, chunk_map: ChunkMap
) -> dict[str, float | None]:
    """The rank measures (``RANK_KEYS``, module docstring) of one ranked candidate list.

    Parameters
    ----------
    ranked:
        Node ids, best first (a query report's ``ranked``); ``None`` when the mode did not
        report one: every measure is then ``None``.
    item:
        The question and its gold.
    chunk_map:
        The version's chunks (ids that are not chunks of a live document are passed over).
    """
    out: dict[str, float | None] = dict.fromkeys(RANK_KEYS)
    if ranked is None:
        return out
    chunks = [int(i) for i in ranked if chunk_map.docs_of(int(i))]
    facts = unique(f for f in (normalize(x) for x in item.gold_facts) if f)
    docs = unique(item.gold_doc_ids)
    sources = [s for s in (chunk_map.source_chunks(f, docs) for f in facts) if s]
    gold_chunks = frozenset().union(*sources) if sources else frozenset()
    for k in RANK_KS:
        top = set(chunks[:k])
        if sources:
            out[f"passage_recall@{k}"] = sum(bool(s & top) for s in sources) / len(sources)
            out[f"hits@{k}"] = float(bool(gold_chunks & top))
        if docs:
            cited = {d for c in chunks[:k] for d in chunk_map.docs_of(c)}
            out[f"doc_recall@{k}"] = sum(d in cited for d in docs) / len(docs)
    if sources:
        place = next((i for i, c in enumerate(chunks[:10]) if c in gold_chunks), None)
        out["mrr@10"] = 0.0 if place is None else 1.0 / (place + 1)
    return out


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def aggregate(scores: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Means of a list of question scores.

    Each recall-like measure is averaged over the questions where it applies (its count is
    ``<key>_n``); cost keys (``tokens``, ``nodes``, ``embed_ms``, ``search_ms``,
    ``llm_calls``) over all questions, with the 95th percentile of ``search_ms``. When the
    scores hold generated answers, ``ANSWER_KEYS`` (with counts) and ``ANSWER_COST_KEYS``
    too.
    """
    out: dict[str, Any] = {"questions": len(scores)}
    for key in (*MEAN_KEYS, *RANK_KEYS):
        if key in RANK_KEYS and not any(key in s for s in scores):
            continue  # scored without a ranked list
        values = [float(s[key]) for s in scores if s.get(key) is not None]
        out[key] = _mean(values)
        out[f"{key}_n"] = len(values)
    for key in ("tokens", "nodes", "embed_ms", "search_ms", "llm_calls"):
        values = [float(s[key]) for s in scores if s.get(key) is not None]
        out[key] = _mean(values)
    if any(key in s for s in scores for key in ANSWER_KEYS):  # answers were evaluated
        for key in ANSWER_KEYS:
            values = [float(s[key]) for s in scores if s.get(key) is not None]
            out[key] = _mean(values)
            out[f"{key}_n"] = len(values)
        for key in ANSWER_COST_KEYS:
            out[key] = _mean([float(s[key]) for s in scores if s.get(key) is not None])
    search = [float(s["search_ms"]) for s in scores if s.get("search_ms") is not None]
    out["search_ms_p95"] = float(np.percentile(search, 95)) if search else None
    out["facts_unlocated"] = int(sum(int(s.get("facts_unlocated") or 0) for s in scores))
    return out
