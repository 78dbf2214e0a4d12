"""Retrieval evaluation: how well each search mode retrieves, on the user's own QA data.

No LLM is needed: every measure compares the retrieved nodes with gold documents, gold
evidence sentences and gold answers at a fixed retrieved-token budget, so a mode that
retrieves more text cannot win by volume. With ``answers=True`` the index's LLM backend also
answers each question, and the containment of the gold answer in that answer is measured.

API (stable; the benchmarks and ``graphstrata eval`` import it)
---------------------------------------------------------------
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
``evaluate(index_or_engine, qa_items, modes, budget, limit=None, top_k=None,
answers=False, baseline=None) -> EvalResult``
    Run every question through every mode of an ``Engine`` (or anything with ``.engine``,
    e.g. ``graphstrata.Index``); ``qa_items`` may be a path. ``answers=True`` adds
    ``answer_generated`` (containment of the gold answer in the generated answer). ``EvalResult.to_dict()`` is the
    JSON form, ``EvalResult.table()`` a readable (Markdown) table.

``rank_scores(ranked, item, chunk_map) -> dict``
    Recall@k, Hits@k, document Recall@k and MRR@10 of a mode's ranked candidates before
    packing (a query report's ``ranked``).
``paired_bootstrap(values, baseline)`` / ``compare_modes(scores, baseline, keys)``
    Paired bootstrap 95 % intervals of a mode's difference to a baseline (seeded);
    ``evaluate(..., baseline=MODE)`` fills ``EvalResult.comparisons``.

Modules: ``scoring`` (QA items, measures and their tie rules, aggregates), ``compare``
(paired bootstrap intervals), ``results`` (result classes and tables), ``runner``
(``evaluate``). This package sits beside the engine:
it imports the engine, never the reverse (docs/architecture.md, "Layers").
"""

from graphstrata.evaluation.compare import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    compare_modes,
    paired_bootstrap,
)
from graphstrata.evaluation.results import (
    ANSWER_COLUMNS,
    COMPARED_COLUMNS,
    TABLE_COLUMNS,
    EvalResult,
    ModeResult,
    ci_cell,
    columns,
    comparison_table,
    format_rows,
    format_table,
    markdown_table,
    table_header,
)
from graphstrata.evaluation.runner import QUERY_BATCH, ProgressFn, evaluate, parse_modes
from graphstrata.evaluation.scoring import (
    ANSWER_COST_KEYS,
    ANSWER_KEYS,
    MEAN_KEYS,
    QUESTION_KEYS,
    RANK_KEYS,
    RANK_KS,
    SKIPPED_ANSWERS,
    TEXT_KINDS,
    ChunkMap,
    HitLike,
    QAError,
    QAItem,
    aggregate,
    answer_containment,
    as_qa_item,
    as_qa_items,
    document_recall,
    evidence_token_recall,
    fact_recall_chunk,
    fact_recall_text,
    load_qa,
    locate_fact,
    normalize,
    rank_scores,
    score_hits,
    scored_answers,
    text_containment,
    unique,
)

__all__ = [
    "ANSWER_COLUMNS",
    "ANSWER_COST_KEYS",
    "ANSWER_KEYS",
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "COMPARED_COLUMNS",
    "MEAN_KEYS",
    "QUERY_BATCH",
    "QUESTION_KEYS",
    "RANK_KEYS",
    "RANK_KS",
    "SKIPPED_ANSWERS",
    "TABLE_COLUMNS",
    "TEXT_KINDS",
    "ChunkMap",
    "EvalResult",
    "HitLike",
    "ModeResult",
    "ProgressFn",
    "QAError",
    "QAItem",
    "aggregate",
    "answer_containment",
    "as_qa_item",
    "as_qa_items",
    "ci_cell",
    "columns",
    "compare_modes",
    "comparison_table",
    "document_recall",
    "evaluate",
    "evidence_token_recall",
    "fact_recall_chunk",
    "fact_recall_text",
    "format_rows",
    "format_table",
    "load_qa",
    "locate_fact",
    "markdown_table",
    "normalize",
    "paired_bootstrap",
    "parse_modes",
    "rank_scores",
    "score_hits",
    "scored_answers",
    "table_header",
    "text_containment",
    "unique",
]
