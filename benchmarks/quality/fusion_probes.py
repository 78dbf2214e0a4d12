"""Two probes of issue 48: sparse pseudo-relevance feedback for ``hybrid`` as a second whole
search, and ``hybrid``'s chunks packed ahead of ``graph``'s ranking. Neither was adopted as
it stands; ``hybrid``'s sparse feedback (``FusionConfig.feedback_terms``, decision 0037) is the
feedback probe with fewer, lighter terms inside the one feedback round. So that the table
stays the probe's, every ``hybrid`` here runs without that feedback (``feedback_terms`` 0).

    python -m benchmarks.quality.fusion_probes [--datasets ...]

Both at 2,000 tokens on the indexes of ``benchmarks.quality.retrieval`` (built or reused under
``build/bench-indexes/``), every question, headline measure of each set (fact recall text;
evidence-token recall on the novels):

* **Sparse feedback** (RM3-like, Abdul-Jaleel et al. 2004): the ``m`` content words of the
  ``fb`` best packed ``hybrid`` chunks with the most weight (sum over those chunks of
  ``tf / length * idf / rank``, idf over the index's chunks, query words left out) are added
  once each to the question, which is repeated ``q`` times (so each original word weighs
  ``q`` against 1), and ``hybrid`` runs again with the same question vector. ``q`` large
  approaches the plain question.
* **Hybrid first**: ``hybrid``'s packed chunks fill ``1 - r`` of the budget, then ``graph``'s
  packed nodes (a unit whose text is inside a packed chunk skipped) the rest, then
  ``hybrid``'s remaining chunks.

Writes ``benchmarks/results/fusion-probes.md`` and ``.json``. Skips cleanly when
``../shared/data`` is absent.
"""

from __future__ import annotations

import argparse
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.common import command_line, load_text, log, machine, markdown_table, write_report
from benchmarks.quality import retrieval as R
from benchmarks.quality import retrieval_compare

BUDGET = 2000
#: (fb, m, q) of the feedback probe.
FEEDBACK = ((1, 10, 2), (3, 20, 2), (3, 10, 3), (1, 10, 4), (3, 10, 6))
#: Shares ``r`` of the budget left to ``graph`` after ``hybrid``'s chunks.
GRAPH_SHARES = (0.2, 0.35, 0.5, 0.7)


def _run(engine: Any, texts: Sequence[str], vectors: np.ndarray, mode: str) -> list[Any]:
    out: list[Any] = []
    params = {"feedback_terms": 0} if mode == "hybrid" else {}
    for s in range(0, len(texts), 64):
        out += engine.query_vectors(texts[s : s + 64], vectors[s : s + 64], mode, BUDGET, **params)
    return out


def expanded(
    question: str, hits: Sequence[Any], df: Counter, n: int, fb: int, m: int, q: int
) -> str:
    """The question repeated ``q`` times plus the ``m`` heaviest words of the ``fb`` best hits."""
    from graphstrata.engine.sparse.analysis import analyze, query_words

    asked = set(analyze(question))
    weight: Counter = Counter()
    surface: dict[str, str] = {}
    for rank, hit in enumerate(hits[:fb]):
        stems = analyze(hit.text)
        for word in query_words(hit.text):
            stem = analyze(word)
            if stem:
                surface.setdefault(stem[0], word)
        for stem, tf in Counter(stems).items():
            if stem not in asked:
                idf = math.log((n - df[stem] + 0.5) / (df[stem] + 0.5) + 1)
                weight[stem] += tf / max(len(stems), 1) * idf / (rank + 1)
    words = [surface[s] for s, _ in weight.most_common(m) if s in surface]
    return " ".join([question] * q + words)


def mixed(first: Sequence[Any], then: Sequence[Any], r: float) -> list[Any]:
    """``first``'s hits into ``1 - r`` of the budget, then ``then``'s, then ``first``'s rest."""
    out: list[Any] = []
    used = 0
    for hits, cap in ((first, math.floor(BUDGET * (1 - r))), (then, BUDGET), (first, BUDGET)):
        for h in hits:
            if used + h.tokens > cap or any(h.text in o.text for o in out):
                continue
            out.append(h)
            used += h.tokens
    return out


def probe(dataset: str) -> dict[str, Any]:
    from graphstrata.engine.sparse.analysis import analyze
    from graphstrata.engine.types import NodeKind
    from graphstrata.evaluation import ChunkMap, load_qa, score_hits

    engines = {}
    for group in (["hierarchy", "sparse", "hybrid"], ["heterograph"]):
        comps = R.components_for(group)
        R._CODE_AT_START.setdefault(tuple(c.name for c in comps), R.code_sha256(comps))
        engines[group[0]] = R.build_or_reuse(dataset, comps, "minilm-onnx")[0]
    flat, graph = engines["hierarchy"], engines["heterograph"]
    items = load_qa(R.DATA / dataset / "qa.jsonl")
    questions = R.embed_questions(flat, items)
    key = retrieval_compare.headline(dataset)
    chunk_map = ChunkMap.from_snapshot(graph.state.snapshot)

    def mean(lists: Sequence[Sequence[Any]]) -> float:
        values = [score_hits(h, it, chunk_map)[key] for h, it in zip(lists, items, strict=True)]
        return float(np.mean([v for v in values if v is not None]))

    texts = [q.question for q in items]
    nodes = flat.state.snapshot.nodes
    df: Counter = Counter()
    chunks = nodes.text_of(nodes.ids_of_kind(int(NodeKind.T)))
    for text in chunks:
        df.update(set(analyze(text)))
    rows: dict[str, float] = {}
    for mode in ("bm25", "hybrid"):
        rows[mode] = mean([r.nodes for r in _run(flat, texts, questions.vectors, mode)])
    first = _run(flat, texts, questions.vectors, "hybrid")
    walked = _run(graph, texts, questions.vectors, "graph")
    rows["graph"] = mean([r.nodes for r in walked])
    for fb, m, q in FEEDBACK:
        log(f"{dataset}: sparse feedback fb={fb} m={m} q={q}")
        again = [expanded(t, r.nodes, df, len(chunks), fb, m, q) for t, r in zip(texts, first)]
        rows[f"hybrid, sparse feedback fb={fb} m={m} q={q}"] = mean(
            [r.nodes for r in _run(flat, again, questions.vectors, "hybrid")]
        )
    for r in GRAPH_SHARES:
        rows[f"hybrid first, graph r={r}"] = mean(
            [mixed(a.nodes, b.nodes, r) for a, b in zip(first, walked, strict=True)]
        )
    return {"key": key, "questions": len(items), "rows": rows, "load": load_text(1, ", ")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=",".join(R.DATASETS))
    args = parser.parse_args(argv)
    if not R.DATA.is_dir():
        print(f"skipped: {R.DATA} not found (the shared evaluation data is absent)")
        return 0
    results = {d: probe(d) for d in args.datasets.split(",") if d}
    command = command_line(__spec__.name, argv or None)
    names = list(next(iter(results.values()))["rows"])
    header = ["variant"] + [f"{d} {r['key']}" for d, r in results.items()]
    table = [[n] + [f"{r['rows'][n]:.4f}" for r in results.values()] for n in names]
    loads = "; ".join(f"{d} {r['load']}" for d, r in results.items())
    lines = [
        "# Fusion probes (issue 48)",
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine()}; load average after each dataset: {loads}.",
        "",
        "At 2,000 tokens; the variants are defined in `benchmarks/quality/fusion_probes.py`.",
        "",
        *markdown_table(header, table),
    ]
    payload = {"command": command, "results": results}
    path = write_report("fusion-probes", payload, "\n".join(lines) + "\n")
    print(path.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
