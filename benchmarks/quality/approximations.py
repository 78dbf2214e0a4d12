"""The write path's approximations against exact runs, on incrementally built indexes
(issue 17): retrieval recall of ``graph`` on the shared sets, and the partition's modularity.

Two approximations make a one-document write cost work in proportion to the change:
local Leiden (``HeterographConfig.local_leiden``: each write re-optimises only the nodes it
touched and the neighbours of those that moved) and approximate semantic edges (above
``semantic_exact_below`` embedded nodes: a build's k-NN graph by NN-descent, a write's new
nodes searched in the committed usearch HNSW index). The shared sets are far below the
50,000-node threshold, so their indexes use exact semantic edges unless forced; here each
set is built four ways, every combination of Leiden local / whole-graph and semantic edges
approximate (``semantic_exact_below=0``) / exact (all pairs), the same way: a ``--first``
share of the documents in one insert, then the rest in ``--steps`` equal inserts (default:
90%, then 10 inserts of 1%; a 5% insert of these small sets opens over half of the graph,
which then runs Leiden whole). Then, on each final index: ``graph`` (and ``naive`` as a
reference) at ``--budget`` tokens through ``graphstrata.evaluation``, the modularity of the
stored partition on the final G2, and the seconds of the communities and semantic-edge
stages over the inserts. The issue's criterion: recall within 0.5 point of the exact run
(whole-graph Leiden, exact semantic edges).

CPU backends as ``benchmarks/quality/graph_tuning.py`` (extractive LLM, ``minilm-onnx`` through the
benchmarks' embedding cache, hierarchy off). Results: ``benchmarks/results/approximations.{md,json}``.

Usage::

    python -m benchmarks.quality.approximations --dataset hotpotqa multihop_rag
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import DATA, command_line, load_text, log, write_report
from benchmarks.quality.graph_tuning import ROOT, components, load_dataset, make_config, make_llm
from benchmarks.quality.retrieval import CachedEmbedder
from benchmarks.scale.scale import leiden_quality
from graphstrata.core import sets
from graphstrata.engine.types import EdgeKind

#: ``semantic_exact_below`` that keeps every set exact (all pairs) / forces approximate.
EXACT, APPROXIMATE = 2**62, 0
#: Name -> (local_leiden, semantic_exact_below); the last is the reference.
VARIANTS: dict[str, tuple[bool, int]] = {
    "local, approximate": (True, APPROXIMATE),
    "local, exact": (True, EXACT),
    "whole, approximate": (False, APPROXIMATE),
    "whole, exact": (False, EXACT),
}
REFERENCE = "whole, exact"
#: The issue's tolerance: recall within this many points (of 100) of the reference.
TOLERANCE_POINTS = 0.5


def build_incrementally(
    path: Path,
    docs: list[dict],
    local: bool,
    exact_below: int,
    first: float,
    steps: int,
    embedder: Any,
) -> tuple[Any, dict[str, Any]]:
    """A ``first`` share of the documents in one insert, the rest in ``steps`` inserts."""
    from graphstrata.bindings.api import Index
    from graphstrata.engine.index import Engine

    if path.exists():
        shutil.rmtree(path)
    cfg = make_config()
    cfg.heterograph.local_leiden = local
    cfg.heterograph.semantic_exact_below = exact_below
    index = Index(Engine.create(path, cfg, embedder, make_llm("standard"), components=components()))
    order = list(docs)
    random.Random(20250625).shuffle(order)
    head = round(len(order) * first)
    built = index.insert(order[:head])
    rest = order[head:]
    size = -(-len(rest) // steps)
    communities_s, semantic_s, insert_s, regions, whole = 0.0, 0.0, 0.0, [], 0
    for i in range(0, len(rest), size):
        rep = index.insert(rest[i : i + size])
        insert_s += rep.seconds
        communities_s += rep.stages.get("heterograph:communities", 0.0)
        semantic_s += rep.stages.get("heterograph:semantic_edges", 0.0)
        meta = index.engine.state.snapshot.component_meta("heterograph")
        stats = meta.get("last_update", {}).get("communities", {})
        regions.append(stats.get("leiden_region_nodes"))
        whole += int(bool(stats.get("leiden_full")))
    info = {
        "build_first_s": round(built.seconds, 1),
        "inserts": len(regions),
        "insert_s": round(insert_s, 1),
        "communities_s": round(communities_s, 2),
        "semantic_edges_s": round(semantic_s, 2),
        "region_nodes_per_insert": regions,
        "whole_graph_runs": whole,
    }
    return index, info


def run(dataset: str, first: float, steps: int, budget: int, embedder: Any) -> dict[str, Any]:
    from graphstrata.evaluation import evaluate

    docs, qa, _info = load_dataset(dataset, None)
    out: dict[str, Any] = {
        "dataset": dataset,
        "docs": len(docs),
        "questions": len(qa),
        "first": first,
        "steps": steps,
    }
    edges: dict[str, np.ndarray] = {}
    for name, (local, exact_below) in VARIANTS.items():
        log(f"{dataset}: building incrementally, {name}")
        slug = name.replace(", ", "-")
        index, info = build_incrementally(
            ROOT / f"approx-{dataset}-{slug}", docs, local, exact_below, first, steps, embedder
        )
        result = evaluate(index, qa, ["naive", "graph"], budget)
        info["recall"] = {
            mode: {m: result.modes[mode].overall.get(m) for m in ("doc_recall", "fact_recall_text")}
            for mode in ("naive", "graph")
        }
        info["leiden"] = leiden_quality(index)
        edges[name] = semantic_pairs(index)
        out[name] = info
        log(
            f"{dataset} {name}: {json.dumps(info['recall'])} modularity {info['leiden']['modularity_local']}"
        )
    for name in VARIANTS:
        exact_name = name.replace("approximate", "exact")
        if exact_name != name:
            out[name]["semantic_edge_recall"] = _shared_share(edges[name], edges[exact_name])
    return out


def semantic_pairs(index: Any) -> np.ndarray:
    """The semantic edges of ``index``'s last version as sorted (low, high) id pairs, one
    int64 key each (an edge and its reverse are one pair)."""
    src, dst = index.engine.state.snapshot.edge_table.kind_edges(int(EdgeKind.SEMANTIC))
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    if hi.size and int(hi.max()) >= 2**31:
        raise ValueError("node ids beyond 2^31: widen the pair key")
    return sets.unique((lo << 32) | hi)


def _shared_share(approximate: np.ndarray, exact: np.ndarray) -> float:
    """Share of the exact run's semantic pairs the approximate run also has."""
    shared = sets.intersection(exact, approximate).size
    return round(shared / exact.size, 4) if exact.size else 1.0


def _points(x: dict[str, Any], ref: dict[str, Any], measure: str) -> float:
    """Difference in points (of 100) of ``graph``'s ``measure`` against the reference."""
    return 100.0 * (x["recall"]["graph"][measure] - ref["recall"]["graph"][measure])


def markdown(runs: list[dict[str, Any]], command: str, load: str) -> str:
    lines = [
        "# The write path's approximations against exact runs, on incrementally built indexes",
        "",
        f"Command: `{command}`. Load average (1/5/15 min) at the end: {load}; "
        f"{platform.platform()}, {os.cpu_count()} CPUs.",
        "",
        "Each index: a share of the documents in one insert (a whole-graph Leiden either way;"
        " `first` below), then the rest in equal inserts (`steps`). Leiden on each insert runs"
        " locally (`local_leiden=True`, the default) or over the whole graph; semantic edges"
        " are approximate (`semantic_exact_below=0`: the build's k-NN graph by NN-descent, each"
        " insert's new nodes searched in the committed HNSW index, as above 50,000 embedded"
        " nodes) or exact (all pairs, as these small sets get by default). Recall at"
        " 2,000 tokens by `graphstrata.evaluation` (fact recall over the answer text, document"
        " recall); Δ: points (of 100) against the `whole, exact` run of the set, the issue's"
        f" criterion being within {TOLERANCE_POINTS}. Modularity of the stored partition on the"
        " final G2 graph (stored = what the writes left), and of a fresh whole-graph run on it"
        " for reference (`scale.py`'s `leiden_quality`). Semantic edges shared: the share of"
        " the exact run's semantic edges (same Leiden setting) the approximate run also has."
        " Stage seconds summed over the inserts after the first; `inserts s` includes"
        " embedding, which the first variant of a set pays in full when the benchmarks'"
        " embedding cache (`build/graph-tuning/embed-cache`) is cold.",
        "",
        "| set (first, steps) | Leiden, semantic edges | graph fact R (Δ) | graph doc R (Δ) |"
        " naive fact R | modularity (communities) | fresh run on the final graph |"
        " semantic edges shared with the exact run | communities s | semantic edges s |"
        " inserts s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for r in runs:
        ref = r[REFERENCE]
        for name in VARIANTS:
            x = r[name]
            g, n, q = x["recall"]["graph"], x["recall"]["naive"], x["leiden"]
            df, dd = _points(x, ref, "fact_recall_text"), _points(x, ref, "doc_recall")
            lines.append(
                f"| {r['dataset']} ({r['first']}, {r['steps']}) | {name} |"
                f" {g['fact_recall_text']:.3f} ({df:+.1f}) | {g['doc_recall']:.3f} ({dd:+.1f}) |"
                f" {n['fact_recall_text']:.3f} | {q['modularity_local']} ({q['communities_local']}) |"
                f" {q['modularity_full_from_scratch']} ({q['communities_full_from_scratch']}) |"
                f" {x.get('semantic_edge_recall', '–')} |"
                f" {x['communities_s']} | {x['semantic_edges_s']} | {x['insert_s']} |"
            )
            if name != REFERENCE:
                worst = min(df, dd)
                verdicts.append(
                    f"{r['dataset']} {name}: worst {worst:+.1f} points"
                    f" ({'within' if worst >= -TOLERANCE_POINTS else 'outside'} the tolerance)"
                )
    lines += ["", "Against the reference: " + "; ".join(verdicts) + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from graphstrata.bindings.registry import make_embedder

    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--dataset", nargs="+", default=["hotpotqa", "multihop_rag"])
    p.add_argument("--first", type=float, default=0.9, help="share built in one insert")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--budget", type=int, default=2000)
    p.add_argument("--embedder", default="minilm-onnx")
    args = p.parse_args(argv)
    if not DATA.exists():
        print(f"{DATA} is absent: nothing to measure")
        return 0
    embedder = CachedEmbedder(make_embedder(args.embedder), ROOT / "embed-cache")
    t = time.perf_counter()
    runs = [run(d, args.first, args.steps, args.budget, embedder) for d in args.dataset]
    load = load_text(sep=" / ")
    command = command_line(__spec__.name, ["--dataset", *args.dataset])
    payload = {"runs": runs, "seconds": round(time.perf_counter() - t, 1), "load": load}
    print(write_report("approximations", payload, markdown(runs, command, load)).read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
