"""The comparison part of ``benchmarks.quality.retrieval``: each mode against the best flat
baseline with paired bootstrap intervals, and the acceptance criteria of issue 48.

The headline measure of a dataset is verbatim fact recall (``fact_recall_text``), except on
sets whose gold facts are paraphrased (GraphRAG-Bench's novels), where it is evidence-token
recall (``evidence_recall``, ``graphstrata/evaluation/scoring.py``). The best flat baseline
of a dataset and budget is whichever of ``naive`` and ``bm25`` scores higher on it there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: Datasets whose gold facts are paraphrased: scored by evidence-token recall.
PARAPHRASED = frozenset({"graphrag_bench_novel"})
#: The modes that fuse a dense and a BM25 list (the "no fused mode below its inputs" rule).
FUSED_MODES = ("hybrid", "collapsed", "detailed", "summarized")
FLAT_MODES = ("naive", "bm25")
#: Measures whose intervals the tables show, besides the headline.
CI_KEYS = ("doc_recall", "fact_recall_text", "evidence_recall", "mrr@10")


def headline(dataset: str) -> str:
    """The measure the criteria read on ``dataset``."""
    return "evidence_recall" if dataset in PARAPHRASED else "fact_recall_text"


def best_flat(results: dict[str, Any], key: str) -> str | None:
    """``naive`` or ``bm25``, whichever is higher on ``key`` (None when neither ran)."""
    ran = [m for m in FLAT_MODES if m in results and results[m]["overall"].get(key) is not None]
    return max(ran, key=lambda m: results[m]["overall"][key]) if ran else None


def comparisons(results: dict[str, Any], key: str) -> dict[str, Any]:
    """Each mode's paired bootstrap interval against the best flat baseline, per measure."""
    from graphstrata.evaluation import compare_modes

    base = best_flat(results, key)
    if base is None:
        return {}
    scores = {m: r["questions"] for m, r in results.items()}
    keys = tuple(dict.fromkeys((key, *CI_KEYS)))
    return {"baseline": base, "modes": compare_modes(scores, base, keys)}


def _value(results: dict[str, Any], mode: str, key: str) -> float | None:
    res = results.get(mode)
    return None if res is None else res["overall"].get(key)


def criteria(dataset: str, results_by_budget: dict[int, dict[str, Any]], head: int) -> list[str]:
    """The issue's criteria on one dataset, each as a line saying whether it holds."""
    key = headline(dataset)
    res = results_by_budget[head]
    base = best_flat(res, key)
    if base is None:
        return []
    flat = float(res[base]["overall"][key])
    lines = []
    for mode, margin in (("hybrid", 0.02), ("graph", 0.03), ("collapsed", 0.0)):
        got = _value(res, mode, key)
        if got is None:
            lines.append(f"- `{mode}` >= best flat + {100 * margin:.0f}: not run")
            continue
        ok = got >= flat + margin - 1e-9
        lines.append(
            f"- `{mode}` >= best flat ({base}) + {100 * margin:.0f} at {head}: "
            f"{'**holds**' if ok else '**fails**'} ({100 * (got - flat):+.1f} points)"
        )
    for mode in FUSED_MODES:
        gaps = []
        for budget, by_mode in results_by_budget.items():
            inputs = [_value(by_mode, m, key) for m in FLAT_MODES]
            got = _value(by_mode, mode, key)
            if got is not None and all(v is not None for v in inputs):
                gaps.append((got - max(float(v) for v in inputs if v is not None), budget))
        if gaps:
            gap, budget = min(gaps)
            ok = gap >= -0.005
            lines.append(
                f"- `{mode}` not below the better of naive/bm25 by more than 0.5 at any "
                f"budget: {'**holds**' if ok else '**fails**'} (worst at {budget}: "
                f"{100 * gap:+.1f} points)"
            )
    graph, naive = res.get("graph"), res.get("naive")
    if graph is not None and naive is not None:
        ratio = graph["overall"]["search_ms_p50"] / max(naive["overall"]["search_ms_p50"], 1e-9)
        lines.append(
            f"- `graph` search p50 <= 4x `naive`'s: {'**holds**' if ratio <= 4 else '**fails**'}"
            f" ({ratio:.1f}x)"
        )
    return lines


def ci_cell(ci: dict[str, Any] | None) -> str:
    """A difference in points with its interval: ``+2.1 [+0.4, +3.9]``."""
    if not ci:
        return "–"
    return f"{100 * ci['diff']:+.1f} [{100 * ci['lo']:+.1f}, {100 * ci['hi']:+.1f}]"


def ci_rows(dataset: str, results_by_budget: dict[int, dict[str, Any]]) -> list[list[str]]:
    """Rows (budget, mode, baseline, headline and other intervals) of every budget."""
    key = headline(dataset)
    rows = []
    for budget, res in results_by_budget.items():
        comp = comparisons(res, key)
        if not comp:
            continue
        for mode, cis in comp["modes"].items():
            rows.append(
                [
                    str(budget),
                    mode,
                    comp["baseline"],
                    ci_cell(cis.get(key)),
                    *(ci_cell(cis.get(k)) for k in CI_KEYS if k != key),
                ]
            )
    return rows


def ci_header(dataset: str) -> list[str]:
    """Column titles of ``ci_rows``."""
    key = headline(dataset)
    return ["budget", "mode", "vs", f"Δ {key}", *(f"Δ {k}" for k in CI_KEYS if k != key)]


#: A hit "holds evidence" when it has at least this share of one gold fact's content words.
EVIDENCE_SHARE = 0.5


def evidence_tokens(hits: Sequence[Any], facts: Sequence[str]) -> dict[str, float]:
    """Tokens of the hits that hold evidence (``EVIDENCE_SHARE`` of a gold fact's content
    words, BM25 terms), by node kind: where a mode's budget meets the gold."""
    from graphstrata.engine.sparse.analysis import analyze

    targets = [t for t in (set(analyze(f)) for f in facts) if t]
    out: dict[str, float] = {}
    for h in hits:
        words = set(analyze(h.text))
        if any(len(t & words) >= EVIDENCE_SHARE * len(t) for t in targets):
            out[h.kind] = out.get(h.kind, 0.0) + float(h.tokens)
    return out


def evidence_rows(dataset: str, results: dict[str, Any], modes: Sequence[str]) -> list[list[str]]:
    """Per mode and kind: tokens packed, tokens in hits holding evidence, and their share."""
    rows = []
    for mode in modes:
        res = results.get(mode)
        if res is None:
            continue
        packed = res["overall"]["tokens_by_kind"]
        useful = res["overall"].get("evidence_tokens_by_kind", {})
        for kind, tokens in packed.items():
            got = useful.get(kind, 0.0)
            share = f"{got / tokens:.2f}" if tokens else "–"
            rows.append([dataset, mode, kind, f"{tokens:.0f}", f"{got:.0f}", share])
    return rows


def weights_by_winner(
    results: dict[str, Any], fused: list[dict[str, Any]], key: str
) -> dict[str, tuple[float, int]]:
    """Mean per-query dense weight of the ``fused`` per-question scores, over the questions
    where ``naive`` beats ``bm25`` on ``key``, where ``bm25`` beats ``naive``, and where they
    tie: (mean, questions) per group present. Empty when the flat modes did not run."""
    if not all(m in results for m in FLAT_MODES):
        return {}
    naive = {q["id"]: q.get(key) for q in results["naive"]["questions"]}
    bm25 = {q["id"]: q.get(key) for q in results["bm25"]["questions"]}
    groups: dict[str, list[float]] = {"naive better": [], "bm25 better": [], "tied": []}
    for q in fused:
        a, b, w = naive.get(q["id"]), bm25.get(q["id"]), q.get("dense_weight")
        if a is None or b is None or w is None:
            continue
        group = "naive better" if a > b else "bm25 better" if b > a else "tied"
        groups[group].append(float(w))
    return {g: (sum(ws) / len(ws), len(ws)) for g, ws in groups.items() if ws}


def weights_cell(weights: dict[str, tuple[float, int]]) -> str:
    """``0.31 / 0.22``: mean dense weight where naive / bm25 did better."""
    if not weights:
        return "–"
    return " / ".join(
        f"{weights[g][0]:.2f}" if g in weights else "–" for g in ("naive better", "bm25 better")
    )


def weight_lines(dataset: str, results: dict[str, Any]) -> list[str]:
    """Whether the per-query dense weight of ``hybrid`` rises where the dense list is right
    (``weights_by_winner``), as a sentence."""
    if "hybrid" not in results:
        return []
    weights = weights_by_winner(results, results["hybrid"]["questions"], headline(dataset))
    if not weights:
        return []
    parts = "; ".join(f"{g}: {w:.3f} ({n} q)" for g, (w, n) in weights.items())
    return [f"`hybrid`'s dense weight per query, mean by which flat mode did better: {parts}."]
