"""Heterograph (NodeRAG) benchmark: build, shape, latency, retrieval quality, insert cost.

For each dataset of ``../shared/data`` (MultiHop-RAG, HotpotQA) with the CPU defaults
(packaged all-MiniLM-L6-v2, extractive LLM; the hierarchy is switched off so every LLM token
counted here is the heterograph's):

1. build the heterograph on every document but one, in one insert (report: LLM calls and
   tokens per stage, seconds per stage);
2. insert the held-out document (the "one-document insert into the full heterograph");
   target: its LLM tokens <= 1/20 of the build's;
3. count nodes and edges per kind (NodeRAG's Table 4 gives, for MultiHop-RAG, 171,410
   non-semantic and 203,199 HNSW edges; the node counts of that table are not in the text
   we have);
4. evaluate ``graph`` against ``naive`` and ``bm25`` at a 2,000-token budget with
   ``graphstrata.evaluation`` (document recall, fact recall, answer containment;
   search latency p50/p99 without the query embedding, which is reported apart);
5. delete the held-out document again (cost of a one-document delete);
6. time Leiden with igraph and with leidenalg on the built G2 graph (same seed, from
   scratch) and compare modularity.

Usage::

    python -m benchmarks.quality.heterograph               # both datasets, MiniLM
    python -m benchmarks.quality.heterograph --dataset hotpotqa --embedder hashing  # quick

Results: ``benchmarks/results/heterograph.{md,json}`` (MiniLM runs; other embedders write
``heterograph-<embedder>.*``). Skips cleanly (exit 0) when ``../shared/data`` is absent.
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import DATA, RESULTS, command_line, read_jsonl, write_report

DATASETS = {"multihop": "multihop_rag", "hotpotqa": "hotpotqa"}
KINDS = "TSNRAHO"
EDGE_NAMES = {
    1: "T-S",
    2: "S-N",
    3: "N-R",
    4: "N-A",
    5: "H-member",
    6: "H-O",
    7: "semantic",
    9: "S-R",
}


def component_stats(report: dict[str, Any]) -> dict[str, Any]:
    """The heterograph's own counters (importance, communities, clusters) from a report."""
    for note in report.get("notes", []):
        if note.startswith("heterograph: {"):
            return ast.literal_eval(note[len("heterograph: ") :])
    return {}


def llm_tokens(report: dict[str, Any]) -> int:
    return int(report["prompt_tokens"]) + int(report["completion_tokens"])


def build(
    name: str, docs: list[dict[str, Any]], embedder: str, work: Path, reuse: bool
) -> dict[str, Any]:
    """Build on all docs but the last, then insert the last; return both reports.

    With ``reuse``, an index this function built before (same dataset, embedder and
    document count) is opened instead, with the reports saved beside it.
    """
    from graphstrata import Index
    from graphstrata.engine.config import IndexConfig

    path = work / f"heterograph-{name}-{embedder.replace(':', '_')}"
    saved = path.parent / f"{path.name}.reports.json"
    if reuse and saved.exists():
        reports = json.loads(saved.read_text())
        if reports["documents"] == len(docs):
            reports["index"] = Index.open(path, embedder=embedder, use_cache=False)
            print(f"  [{name}] reusing {path}", file=sys.stderr)
            return reports
    shutil.rmtree(path, ignore_errors=True)
    cfg = IndexConfig()
    cfg.hierarchy.enabled = False
    index = Index.create(path, cfg, embedder=embedder, llm="extractive", use_cache=False)

    def progress(stage: str, done: int, total: int) -> None:
        print(f"  [{name}] {stage}: {done}/{total}", file=sys.stderr, flush=True)

    start = time.perf_counter()
    build_report = index.insert(docs[:-1], progress=progress)
    print(f"  [{name}] build {time.perf_counter() - start:.1f}s", file=sys.stderr)
    insert_report = index.insert(docs[-1:])
    reports = {
        "documents": len(docs),
        "build": build_report.to_dict(),
        "insert": insert_report.to_dict(),
        "held_out": docs[-1]["doc_id"],
    }
    saved.write_text(json.dumps(reports))
    return {**reports, "index": index}


def shape(index: Any) -> dict[str, Any]:
    snap = index.engine.state.snapshot
    kinds, counts = np.unique(snap.nodes.kind, return_counts=True)
    from graphstrata.engine.types import NodeKind

    nodes = {NodeKind(int(k)).letter: int(c) for k, c in zip(kinds, counts, strict=True)}
    ekind = snap.edges.column("kind").to_numpy()
    ek, ec = np.unique(ekind, return_counts=True)
    edges = {EDGE_NAMES.get(int(k), str(int(k))): int(c) for k, c in zip(ek, ec, strict=True)}
    semantic = edges.get("semantic", 0)
    structural = sum(c for k, c in edges.items() if k != "semantic")
    return {
        "nodes": nodes,
        "edges": edges,
        "edge_rows": int(ekind.size),
        "semantic_to_structural": round(semantic / max(structural, 1), 3),
        "noderag_multihop_semantic_to_structural": round(203_199 / 171_410, 3),
    }


def leiden_comparison(index: Any, seed: int) -> dict[str, Any]:
    """igraph vs leidenalg on the index's G2 graph (S, N, R, A and their edges)."""
    import igraph as ig

    from graphstrata.core.communities import leiden
    from graphstrata.engine.heterograph.schema import G2_EDGES
    from graphstrata.engine.types import NodeKind

    snap = index.engine.state.snapshot
    kinds = [int(NodeKind.S), int(NodeKind.N), int(NodeKind.R), int(NodeKind.A)]
    ids = snap.nodes.ids_of_kind(*kinds)
    ekind = snap.edges.column("kind").to_numpy()
    sel = np.isin(ekind, np.asarray(G2_EDGES, dtype=np.uint8))
    src = np.searchsorted(ids, snap.edges.column("src").to_numpy()[sel])
    dst = np.searchsorted(ids, snap.edges.column("dst").to_numpy()[sel])
    weight = np.ones(src.size)
    graph = ig.Graph(n=int(ids.size), edges=np.column_stack([src, dst]).tolist())
    out: dict[str, Any] = {"nodes": int(ids.size), "edges": int(src.size)}
    for backend in ("igraph", "leidenalg"):
        start = time.perf_counter()
        membership = leiden(int(ids.size), src, dst, weight, seed=seed, backend=backend)
        seconds = time.perf_counter() - start
        out[backend] = {
            "seconds": round(seconds, 3),
            "modularity": round(float(graph.modularity(membership.tolist())), 4),
            "communities": int(np.unique(membership).size),
        }
    return out


def evaluate_modes(index: Any, qa_path: Path, limit: int | None) -> dict[str, Any]:
    from graphstrata.evaluation import evaluate

    result = evaluate(index, qa_path, modes=["naive", "bm25", "graph"], budget=2000, limit=limit)
    out: dict[str, Any] = {"questions": result.questions, "notes": result.notes, "modes": {}}
    for mode, res in result.modes.items():
        if not res.available:
            out["modes"][mode] = {"available": False}
            continue
        search = np.asarray([q["search_ms"] for q in res.questions], dtype=np.float64)
        embed = np.asarray([q["embed_ms"] for q in res.questions], dtype=np.float64)
        out["modes"][mode] = {
            "available": True,
            "overall": res.overall,
            "by_type": res.by_type,
            "search_ms_p50": round(float(np.percentile(search, 50)), 3),
            "search_ms_p99": round(float(np.percentile(search, 99)), 3),
            "embed_ms_mean": round(float(embed.mean()), 3),
        }
    return out


#: Sensitivity of graph search to its parameters (NodeRAG's defaults are the main row).
VARIANTS: tuple[dict[str, Any], ...] = (
    {"entry_top_k": 20},
    {"exact_match_weight": 0.0},
    {"rank": "entries_first"},
)


def evaluate_variants(index: Any, qa_path: Path, limit: int | None) -> list[dict[str, Any]]:
    """``graph`` with other query parameters, scored like ``evaluate`` does."""
    from graphstrata.evaluation import ChunkMap, aggregate, load_qa, score_hits

    items = load_qa(qa_path)[:limit]
    chunk_map = ChunkMap.from_snapshot(index.engine.state.snapshot)
    out = []
    for params in VARIANTS:
        results = index.query_batch(
            [q.question for q in items], mode="graph", budget_tokens=2000, **params
        )
        scores = [score_hits(r.nodes, q, chunk_map) for r, q in zip(results, items, strict=True)]
        out.append({"params": params, "overall": aggregate(scores)})
    return out


def run_dataset(name: str, args: argparse.Namespace) -> dict[str, Any]:
    folder = DATA / DATASETS[name]
    docs = read_jsonl(folder / "corpus.jsonl")
    if args.limit_docs:
        docs = docs[: args.limit_docs]
    print(f"[{name}] {len(docs)} documents", file=sys.stderr)
    built = build(name, docs, args.embedder, Path(args.work), args.reuse)
    index = built["index"]
    out: dict[str, Any] = {
        "dataset": name,
        "documents": len(docs),
        "embedder": args.embedder,
        "build": built["build"],
        "insert_one": built["insert"],
        "held_out": built["held_out"],
    }
    out["insert_vs_build_tokens"] = round(
        llm_tokens(built["insert"]) / max(llm_tokens(built["build"]), 1), 5
    )
    out["shape"] = shape(index)
    print(f"[{name}] shape {out['shape']}", file=sys.stderr)
    out["eval"] = evaluate_modes(index, folder / "qa.jsonl", args.limit_questions)
    out["variants"] = evaluate_variants(index, folder / "qa.jsonl", args.limit_questions)
    out["leiden"] = leiden_comparison(index, index.engine.config.heterograph.seed)
    delete = index.delete([built["held_out"]])
    out["delete_one"] = delete.to_dict()
    index.insert([d for d in docs if d["doc_id"] == built["held_out"]])  # back to full (--reuse)
    return out


# ------------------------------------------------------------------------------ reporting
def _f(x: Any, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def markdown(results: list[dict[str, Any]], command: str) -> str:
    lines = [
        "# Heterograph (NodeRAG) benchmark",
        "",
        f"Command: `{command}`",
        "",
        "CPU defaults: extractive LLM (rule-based decomposition; token counts as a real LLM's "
        "usage), hierarchy disabled so every LLM token is the heterograph's. The build covers "
        "all documents but one; that one is then inserted (one-document insert into the full "
        "heterograph) and, after the evaluation, deleted again.",
        "",
    ]
    for r in results:
        b, ins, dele = r["build"], r["insert_one"], r["delete_one"]
        lines += [f"## {r['dataset']} ({r['documents']} documents, embedder {r['embedder']})", ""]
        lines += ["### Shape", "", "| kind | " + " | ".join(KINDS) + " |", "|---" * 8 + "|"]
        nodes = r["shape"]["nodes"]
        total = sum(nodes.get(k, 0) for k in KINDS)
        lines.append("| nodes | " + " | ".join(str(nodes.get(k, 0)) for k in KINDS) + " |")
        lines.append(
            "| share | "
            + " | ".join(f"{nodes.get(k, 0) / max(total, 1):.1%}" for k in KINDS)
            + " |"
        )
        edges = r["shape"]["edges"]
        lines += [
            "",
            "| edges | " + " | ".join(edges) + " |",
            "|---" * (len(edges) + 1) + "|",
            "| rows | " + " | ".join(str(v) for v in edges.values()) + " |",
            "",
            f"Semantic / structural edge rows: {r['shape']['semantic_to_structural']} "
            f"(NodeRAG Table 4, MultiHop-RAG: 203,199 HNSW / 171,410 other = "
            f"{r['shape']['noderag_multihop_semantic_to_structural']}).",
            "",
            "### Build, insert, delete",
            "",
            "| operation | seconds | LLM calls | prompt tok | completion tok | embedded | bytes written |",
            "|---|---|---|---|---|---|---|",
        ]
        for label, rep in (("build", b), ("insert 1 doc", ins), ("delete 1 doc", dele)):
            lines.append(
                f"| {label} | {rep['seconds']:.1f} | {rep['llm_calls']} | {rep['prompt_tokens']} | "
                f"{rep['completion_tokens']} | {rep['embedded']} | {rep['bytes_written']} |"
            )
        stats = component_stats(b)
        att, com, clu = (
            stats.get("attributes", {}),
            stats.get("communities", {}),
            stats.get("clusters", {}),
        )
        lines += [
            "",
            f"Build: important entities {att.get('important')} (k-core k = {att.get('k_core')}: "
            f"{att.get('by_core')} entities; betweenness: {att.get('by_betweenness')}); "
            f"communities {com.get('communities')} ({com.get('eligible')} with >= 3 units or "
            f"attributes get elements); K-means K = {clu.get('k')}, "
            f"{clu.get('member_edges')} element-member edges.",
        ]
        lines += [
            "",
            f"One-document insert / build LLM tokens: **{r['insert_vs_build_tokens']:.4f}** "
            f"(target <= 0.05).",
            "",
            "Build seconds per stage: "
            + ", ".join(f"{k} {v:.1f}" for k, v in b["stages"].items() if v >= 0.05),
            "",
            "LLM per stage (build): "
            + ", ".join(
                f"{k}: {v['calls']} calls, {v['prompt_tokens'] + v['completion_tokens']} tok"
                for k, v in b["llm_by_stage"].items()
            ),
            "",
            "LLM per stage (insert 1 doc): "
            + ", ".join(
                f"{k}: {v['calls']} calls, {v['prompt_tokens'] + v['completion_tokens']} tok"
                for k, v in ins["llm_by_stage"].items()
            ),
            "",
            "### Retrieval at 2,000 tokens",
            "",
            f"{r['eval']['questions']} questions. Latency: search only (p50/p99, ms); the query "
            "embedding is reported apart (mean, ms).",
            "",
            "| mode | doc recall | doc recall (+summaries) | fact recall (text) | fact recall (chunk) "
            "| answer contained | tokens | search p50 | search p99 | embed |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for mode, m in r["eval"]["modes"].items():
            if not m.get("available"):
                lines.append(f"| {mode} | unavailable |")
                continue
            o = m["overall"]
            lines.append(
                f"| {mode} | {_f(o.get('doc_recall'))} | {_f(o.get('doc_recall_with_summaries'))} "
                f"| {_f(o.get('fact_recall_text'))} | {_f(o.get('fact_recall_chunk'))} "
                f"| {_f(o.get('answer_contained'))} | {_f(o.get('tokens'), 0)} "
                f"| {m['search_ms_p50']:.2f} | {m['search_ms_p99']:.2f} | {m['embed_ms_mean']:.2f} |"
            )
        lines += [
            "",
            "Sensitivity of `graph` to its query parameters (same questions and budget):",
            "",
            "| graph with | doc recall | doc recall (+summaries) | fact recall (text) "
            "| fact recall (chunk) | answer contained |",
            "|---|---|---|---|---|---|",
        ]
        for v in r.get("variants", []):
            o = v["overall"]
            label = ", ".join(f"{k}={val}" for k, val in v["params"].items())
            lines.append(
                f"| {label} | {_f(o.get('doc_recall'))} | {_f(o.get('doc_recall_with_summaries'))} "
                f"| {_f(o.get('fact_recall_text'))} | {_f(o.get('fact_recall_chunk'))} "
                f"| {_f(o.get('answer_contained'))} |"
            )
        lv = r["leiden"]
        lines += [
            "",
            f"### Leiden on G2 ({lv['nodes']} nodes, {lv['edges']} edge rows), from scratch, same seed",
            "",
            "| backend | seconds | modularity | communities |",
            "|---|---|---|---|",
        ]
        for backend in ("igraph", "leidenalg"):
            x = lv[backend]
            lines.append(
                f"| {backend} | {x['seconds']:.3f} | {x['modularity']:.4f} | {x['communities']} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", choices=[*DATASETS, "all"], default="all")
    parser.add_argument("--embedder", default="all-MiniLM-L6-v2", help="or hashing[:DIM]")
    parser.add_argument("--limit-docs", type=int, default=None)
    parser.add_argument("--limit-questions", type=int, default=None)
    parser.add_argument("--work", default="/tmp/graphstrata-bench")
    parser.add_argument(
        "--reuse", action="store_true", help="open the index a previous run built (same docs)"
    )
    parser.add_argument("--out", default=None, help="results path prefix (default by embedder)")
    args = parser.parse_args(argv)
    if not DATA.exists():
        print(f"skipped: {DATA} not found (evaluation data lives outside the repo)")
        return 0
    names = list(DATASETS) if args.dataset == "all" else [args.dataset]
    results = [run_dataset(name, args) for name in names]
    if args.out:
        prefix = Path(args.out)
    elif args.embedder == "all-MiniLM-L6-v2":
        prefix = RESULTS / "heterograph"
    else:
        prefix = RESULTS / f"heterograph-{args.embedder.replace(':', '_')}"
    text = markdown(results, command_line(__spec__.name, argv))
    write_report(prefix.name, results, text, out_dir=prefix.parent)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
