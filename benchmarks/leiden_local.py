"""Local against whole-graph Leiden on incrementally built indexes (issue 17): retrieval
recall of ``graph`` and the partition's modularity, on the shared sets.

Each dataset is built twice the same way, once with ``HeterographConfig.local_leiden`` on
(the default: each write re-optimises only the nodes it touched and their neighbours) and
once off (the
whole graph on every write): a ``--first`` share of the documents in one insert, then the
rest in ``--steps`` equal inserts (default: 90%, then 10 inserts of 1%; a 5% insert of these
small sets opens over half of the graph, which then runs Leiden whole). Then, on each final
index: ``graph`` (and ``naive`` as a reference) at ``--budget`` tokens through
``graphstrata.evaluation``, the modularity of the stored partition on the final G2, and the
seconds the ``heterograph:communities`` stage took over the inserts.

CPU backends as ``benchmarks/graph_tuning.py`` (extractive LLM, ``minilm-onnx`` through the
benchmarks' embedding cache, hierarchy off). Results: ``benchmarks/results/leiden_local.{md,json}``.

Usage::

    python benchmarks/leiden_local.py --dataset hotpotqa multihop_rag
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from graph_tuning import (  # noqa: E402
    DATA,
    ROOT,
    components,
    load_dataset,
    make_config,
    make_llm,
)
from retrieval import CachedEmbedder, log  # noqa: E402
from scale import leiden_quality  # noqa: E402

RESULTS = HERE / "results"


def build_incrementally(
    path: Path, docs: list[dict], local: bool, first: float, steps: int, embedder: Any
) -> tuple[Any, dict[str, Any]]:
    """A ``first`` share of the documents in one insert, the rest in ``steps`` inserts."""
    from graphstrata.bindings.api import Index
    from graphstrata.engine.index import Engine

    if path.exists():
        shutil.rmtree(path)
    cfg = make_config()
    cfg.heterograph.local_leiden = local
    index = Index(Engine.create(path, cfg, embedder, make_llm("standard"), components=components()))
    order = list(docs)
    random.Random(20250625).shuffle(order)
    head = round(len(order) * first)
    built = index.insert(order[:head])
    rest = order[head:]
    size = -(-len(rest) // steps)
    communities_s, insert_s, regions, whole = 0.0, 0.0, [], 0
    for i in range(0, len(rest), size):
        rep = index.insert(rest[i : i + size])
        insert_s += rep.seconds
        communities_s += rep.stages.get("heterograph:communities", 0.0)
        meta = index.engine.state.snapshot.component_meta("heterograph")
        stats = meta.get("last_update", {}).get("communities", {})
        regions.append(stats.get("leiden_region_nodes"))
        whole += int(bool(stats.get("leiden_full")))
    info = {
        "build_first_s": round(built.seconds, 1),
        "inserts": len(regions),
        "insert_s": round(insert_s, 1),
        "communities_s": round(communities_s, 2),
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
    for local in (True, False):
        name = "local" if local else "full"
        log(f"{dataset}: building incrementally, Leiden {name}")
        index, info = build_incrementally(
            ROOT / f"leiden-{dataset}-{name}", docs, local, first, steps, embedder
        )
        result = evaluate(index, qa, ["naive", "graph"], budget)
        info["recall"] = {
            mode: {m: result.modes[mode].overall.get(m) for m in ("doc_recall", "fact_recall_text")}
            for mode in ("naive", "graph")
        }
        info["leiden"] = leiden_quality(index)
        out[name] = info
        log(
            f"{dataset} {name}: {json.dumps(info['recall'])} modularity {info['leiden']['modularity_local']}"
        )
    return out


def markdown(runs: list[dict[str, Any]], command: str, load: str) -> str:
    lines = [
        "# Local against whole-graph Leiden, on incrementally built indexes",
        "",
        f"Command: `{command}`. Load average (1/5/15 min) at the end: {load}; "
        f"{platform.platform()}, {os.cpu_count()} CPUs.",
        "",
        "Each index: a share of the documents in one insert (a whole-graph Leiden either way;"
        " `first` below), then the rest in equal inserts (`steps`), each running Leiden locally"
        " (`local_leiden=True`, the default) or over the whole graph (`False`). Recall at"
        " 2,000 tokens by `graphstrata.evaluation` (fact recall over the answer text, document"
        " recall); modularity of the stored partition on the final G2 graph (stored = what the"
        " writes left), and of a fresh whole-graph run on it for reference (`scale.py`'s"
        " `leiden_quality`). `region_nodes_per_insert` in the JSON: the nodes each insert's"
        " Leiden re-optimised one by one (the touched nodes and their neighbours; all of G2"
        " when they were over half of it, and then Leiden ran whole; `whole_graph_runs`"
        " counts those where recorded).",
        "",
        "| set (first, steps) | Leiden on writes | graph fact R | graph doc R | naive fact R | modularity (communities)"
        " | fresh run on the final graph | communities stage s over the inserts | inserts s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        for name in ("local", "full"):
            x = r[name]
            g, n, q = x["recall"]["graph"], x["recall"]["naive"], x["leiden"]
            lines.append(
                f"| {r['dataset']} ({r['first']}, {r['steps']}) | {name} | {g['fact_recall_text']:.3f} | {g['doc_recall']:.3f} |"
                f" {n['fact_recall_text']:.3f} | {q['modularity_local']} ({q['communities_local']}) |"
                f" {q['modularity_full_from_scratch']} ({q['communities_full_from_scratch']}) |"
                f" {x['communities_s']} | {x['insert_s']} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from graphstrata.bindings.backends import make_embedder

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
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    command = "python benchmarks/leiden_local.py --dataset " + " ".join(args.dataset)
    RESULTS.mkdir(exist_ok=True)
    payload = {"runs": runs, "seconds": round(time.perf_counter() - t, 1), "load": load}
    (RESULTS / "leiden_local.json").write_text(json.dumps(payload, indent=1) + "\n")
    (RESULTS / "leiden_local.md").write_text(markdown(runs, command, load))
    print((RESULTS / "leiden_local.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
