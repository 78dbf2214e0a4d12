"""Reranking: one stage before packing, shared by every mode (decision 0031).

With ``rerank_candidates`` = N > 0 (``SearchConfig``, or the query's parameter of that name)
and a :class:`~graphstrata.engine.interfaces.Reranker`, a query is searched twice over:

1. the mode's own search with the budget lifted to :data:`POOL_BUDGET`: its fused, cited,
   de-duplicated candidates, best first in the mode's order (each mode's ranking, fusion and
   near-duplicate skipping stay its own);
2. the reranker scores the first N of them against the query text in one call;
3. those N in the reranker's order (their ``score`` is the reranker's), then the rest in the
   mode's order, are greedily packed under the query's budget (``core.budget.pack``).

A reranker that fails, times out or answers with the wrong number of scores is not an error
of the query: the mode's own result is returned (searched again under the real budget, so it
is exactly the un-reranked answer) and the failure is a ``warning`` in the report's
``rerank`` entry and in the log. The report's ``rerank`` entry carries the cost: ``calls``,
``candidates``, ``seconds``, ``reranker``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from typing import Any

import numpy as np

from graphstrata.core.budget import pack
from graphstrata.engine.component import ComponentView, Hit, Query
from graphstrata.engine.config import SearchConfig
from graphstrata.engine.interfaces import Reranker
from graphstrata.engine.params import ModeParams, params_from

__all__ = ["POOL_BUDGET", "rerank_candidates", "reranked_search", "with_rerank"]

log = logging.getLogger("graphstrata.rerank")

#: The budget of the candidate search: every candidate the mode ranks (the kernels count in
#: 32-bit integers, the largest budget a query may ask for).
POOL_BUDGET = 2**31 - 1

_WITH_RERANK: dict[type[ModeParams], type[ModeParams]] = {}


def with_rerank(params: type[ModeParams]) -> type[ModeParams]:
    """``params`` (a mode's parameters class) with ``rerank_candidates`` added, made once per
    class and named in this module (so it pickles); every served mode takes it."""
    found = _WITH_RERANK.get(params)
    if found is None:
        doc = params.__doc__ or ""
        found = params_from(params.__name__, params, SearchConfig, doc=doc, module=__name__)
        _WITH_RERANK[params] = found
        globals()[params.__name__] = found
    return found


def rerank_candidates(params: ModeParams, search: SearchConfig) -> int:
    """N of the query: its ``rerank_candidates`` if given, else the index's."""
    given = getattr(params, "rerank_candidates", None)
    return int(search.rerank_candidates if given is None else given)


def reranked_search(
    view: ComponentView, mode: str, query: Query, reranker: Reranker, candidates: int
) -> tuple[list[Hit], dict[str, Any]]:
    """The hits of ``query`` packed in the reranker's order (module docstring).

    Parameters
    ----------
    view, mode:
        The mode's view of one version, and the mode.
    query:
        The query (its budget is what the hits are packed under).
    reranker:
        Scores texts against the query text.
    candidates:
        N, the number of the mode's top candidates rescored (>= 1).

    Returns
    -------
    tuple
        The packed hits, and the report's ``rerank`` entry.
    """
    pool = view.search(mode, dataclasses.replace(query, budget_tokens=POOL_BUDGET))
    top = pool[:candidates]
    entry: dict[str, Any] = {"reranker": reranker.name, "candidates": len(top), "calls": 0}
    start = time.perf_counter()
    try:
        scores = _scores(reranker, query.text, [h.text for h in top]) if top else []
        entry["calls"] = 1 if top else 0
    except Exception as exc:  # any failure of the backend keeps the mode's own order
        entry["calls"] = 1
        entry["seconds"] = round(time.perf_counter() - start, 6)
        entry["warning"] = f"reranker {reranker.name} failed, mode order kept: {exc}"
        log.warning("query %r (%s): %s", query.text[:80], mode, entry["warning"])
        return view.search(mode, query), entry
    entry["seconds"] = round(time.perf_counter() - start, 6)
    order = sorted(range(len(top)), key=lambda i: -scores[i])  # stable: ties keep mode order
    ranked = [dataclasses.replace(top[i], score=scores[i]) for i in order] + pool[len(top) :]
    tokens = np.asarray([h.tokens for h in ranked], dtype=np.int64)
    chosen = pack(-np.arange(len(ranked), dtype=np.float64), tokens, int(query.budget_tokens))
    return [ranked[i] for i in chosen.tolist()], entry


def _scores(reranker: Reranker, text: str, texts: list[str]) -> list[float]:
    """The reranker's scores, checked: one finite number per text."""
    raw = list(reranker.score(text, texts))
    if len(raw) != len(texts):
        raise ValueError(f"{len(raw)} scores for {len(texts)} texts")
    scores = [float(s) for s in raw]
    if not all(math.isfinite(s) for s in scores):
        raise ValueError("a score is not a finite number")
    return scores
