"""Running a QA set through the search modes of an index (``evaluate``), and optionally its
answer path (``answers=True``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from graphstrata.engine.tokens import count_tokens
from graphstrata.evaluation.compare import compare_modes
from graphstrata.evaluation.results import EvalResult, ModeResult
from graphstrata.evaluation.scoring import (
    MEAN_KEYS,
    RANK_KEYS,
    ChunkMap,
    QAError,
    QAItem,
    aggregate,
    as_qa_items,
    load_qa,
    rank_scores,
    score_hits,
    scored_answers,
    text_containment,
    unique,
)

#: Questions evaluated per ``query_batch`` call (one embedding batch each).
QUERY_BATCH = 64

#: ``progress(stage, done, total)``, called after each batch of questions.
ProgressFn = Callable[[str, int, int], None]


def _engine(index_or_engine: Any) -> Any:
    """An ``Engine`` from an ``Engine`` or a facade holding one in ``.engine``."""
    engine = getattr(index_or_engine, "engine", index_or_engine)
    if not hasattr(engine, "query_batch") or not hasattr(engine, "state"):
        raise TypeError(
            f"evaluate needs a graphstrata Index or Engine, got {type(index_or_engine).__name__}"
        )
    return engine


def _as_items(qa_items: str | Path | Iterable[Mapping[str, Any] | QAItem]) -> list[QAItem]:
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
    if progress:  # the stage's start (the warm-up query included)
        progress(f"eval {mode}", 0, len(items))
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
            score.update(rank_scores(report.get("ranked"), item, chunk_map))
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


def _answer_mode(
    engine: Any,
    items: Sequence[QAItem],
    scores: list[dict[str, Any]],
    mode: str,
    budget: int,
    top_k: int | None,
    progress: ProgressFn | None,
) -> None:
    """Answer each question whose gold answers are scored, and add ``answer_generated``,
    ``answer_ms`` and ``answer_tokens`` to its score (``None`` for the others)."""
    answered = 0
    for item, score in zip(items, scores, strict=True):
        score.update(answer_generated=None, answer_ms=None, answer_tokens=None)
        if not scored_answers(item.answers):
            continue
        result = engine.answer(item.question, mode, budget, top_k=top_k)
        text = result.answer or ""
        score.update(
            answer_generated=text_containment([text], item.answers),
            answer_ms=1000.0 * float(result.report.get("answer_seconds", 0.0)),
            answer_tokens=count_tokens(text),
        )
        answered += 1
        if progress and answered % QUERY_BATCH == 0:
            progress(f"answer {mode}", answered, len(items))


def evaluate(
    index_or_engine: Any,
    qa_items: str | Path | Iterable[Any],
    modes: str | Sequence[str] | None = None,
    budget: int = 2000,
    limit: int | None = None,
    top_k: int | None = None,
    progress: ProgressFn | None = None,
    answers: bool = False,
    baseline: str | None = None,
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
    answers : bool
        Also answer every question whose gold answers are scored with the index's LLM
        backend (``Engine.answer``: the same retrieval, then one LLM call with the fixed
        answer prompt) and score the containment of the gold answer in the generated answer
        (``answer_generated``; see :mod:`graphstrata.evaluation.scoring`). The retrieval
        measures are the batched retrieval's, unchanged by this option; the answer path
        retrieves again per question.
    baseline : str, optional
        A mode evaluated with the others: every other mode gets paired bootstrap 95 %
        intervals of its difference to it, per measure (``EvalResult.comparisons``,
        :mod:`graphstrata.evaluation.compare`).

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
    wanted = parse_modes(modes, available)
    if baseline is not None and baseline not in wanted:
        raise ValueError(f"the baseline mode {baseline!r} is not among the modes evaluated")
    chunk_map = ChunkMap.from_snapshot(state.snapshot)
    result = EvalResult(
        index=str(engine.store.root),
        version=int(state.version),
        budget=int(budget),
        top_k=top_k,
        questions=len(items),
        modes={},
        available_modes=available,
        answer_llm=str(getattr(engine.llm, "name", type(engine.llm).__name__)) if answers else None,
    )
    result.notes.extend(_gold_notes(items, chunk_map))
    for mode in wanted:
        if mode not in available:
            result.modes[mode] = ModeResult(mode, available=False)
            continue
        scores = _query_mode(engine, items, mode, int(budget), top_k, chunk_map, progress)
        if answers:
            _answer_mode(engine, items, scores, mode, int(budget), top_k, progress)
        types = unique(s["type"] for s in scores)
        result.modes[mode] = ModeResult(
            mode,
            available=True,
            overall=aggregate(scores),
            by_type={t: aggregate([s for s in scores if s["type"] == t]) for t in types},
            questions=scores,
        )
    if baseline is not None and result.modes[baseline].available:
        served = {m: r.questions for m, r in result.modes.items() if r.available}
        result.baseline = baseline
        result.comparisons = compare_modes(served, baseline, (*MEAN_KEYS, *RANK_KEYS))
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
