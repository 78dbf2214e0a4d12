"""``graph`` with and without attribute nodes under the extractive LLM, on the shared sets.

    python -m benchmarks.quality.graph_attributes [--datasets ...] [--budgets 1000,2000,4000]

``HeterographConfig.attributes`` (decision 0034): ``auto`` resolves to ``off`` under the
extractive backend. For each dataset of ``../shared/data`` this builds (or reuses, as
``benchmarks.quality.retrieval`` does, under ``build/bench-indexes/``) the heterograph index
with the default config and again with ``attributes="on"`` (what every build made before),
then runs ``graph`` over every question at each budget on both: the headline measure
(fact recall text; evidence-token recall on the novels), its paired bootstrap interval
(on minus default), search p50, the nodes of each index and the build stages the
attributes cost (``heterograph:attributes``, ``llm:attribute``, ``embed_A``; seconds from
each build's record: with the embedding cache warm, ``embed_A`` is what a fresh build pays
only when the cache was cold). Writes ``benchmarks/results/graph-attributes.md`` and
``.json``, with the load average. Skips cleanly when ``../shared/data`` is absent.
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks.common import command_line, load_text, log, machine, markdown_table, write_report
from benchmarks.quality import retrieval as R
from benchmarks.quality import retrieval_compare

VARIANTS = ("auto", "on")
STAGES = ("heterograph:attributes", "llm:attribute", "embed_A", "heterograph")


def evaluate(dataset: str, budgets: list[int]) -> dict[str, Any]:
    """Both variants of one dataset: per budget the graph scores, and each build's record."""
    from graphstrata.engine.config import IndexConfig
    from graphstrata.evaluation import ChunkMap, load_qa
    from graphstrata.evaluation.compare import paired_bootstrap

    comps = R.components_for(["heterograph"])
    R._CODE_AT_START.setdefault(tuple(c.name for c in comps), R.code_sha256(comps))
    key = retrieval_compare.headline(dataset)
    items = load_qa(R.DATA / dataset / "qa.jsonl")
    out: dict[str, Any] = {"key": key, "questions": len(items), "variants": {}}
    questions = None
    scores: dict[str, dict[int, list[Any]]] = {}
    for variant in VARIANTS:
        cfg = IndexConfig()
        cfg.heterograph.attributes = variant
        engine, record = R.build_or_reuse(dataset, comps, "minilm-onnx", config=cfg)
        if questions is None:
            questions = R.embed_questions(engine, items)
        chunk_map = ChunkMap.from_snapshot(engine.state.snapshot)
        stages = record["report"].get("stages", {})
        calls = record["report"].get("llm_by_stage", {}).get("attribute", {}).get("calls", 0)
        row: dict[str, Any] = {
            "recorded": engine.config.heterograph.attributes,
            "nodes": engine.stats().get("nodes", {}),
            "stages": {s: round(float(stages.get(s, 0.0)), 2) for s in STAGES},
            "llm_calls": calls,
            "budgets": {},
        }
        scores[variant] = {}
        for budget in budgets:
            log(f"{dataset}: graph, attributes {variant}, {budget} tokens")
            res = R.run_mode(engine, questions, "graph", budget, chunk_map)
            scores[variant][budget] = [q.get(key) for q in res["questions"]]
            row["budgets"][budget] = {
                "value": res["overall"].get(key),
                "search_ms_p50": res["overall"]["search_ms_p50"],
            }
        out["variants"][variant] = row
    out["intervals"] = {b: paired_bootstrap(scores["on"][b], scores["auto"][b]) for b in budgets}
    out["load"] = load_text(1, ", ")
    return out


def markdown(results: dict[str, Any], command: str) -> str:
    lines = [
        "# `graph` with and without attribute nodes (extractive LLM)",
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine()}; load average beside each dataset.",
        "",
        '`default` is `attributes="auto"`, recorded as `off` under the extractive LLM; `on` '
        "builds them as every index did before (decision 0034). Δ = on − default in points, "
        "with its paired 95 % bootstrap interval (`graphstrata/evaluation/compare.py`).",
        "",
    ]
    rows = []
    for dataset, data in results.items():
        for budget, ci in data["intervals"].items():
            d, o = (data["variants"][v]["budgets"][budget] for v in VARIANTS)
            rows.append([
                dataset, data["key"], budget, f"{d['value']:.4f}", f"{o['value']:.4f}",
                retrieval_compare.ci_cell(ci), f"{d['search_ms_p50']:.2f}",
                f"{o['search_ms_p50']:.2f}",
            ])  # fmt: skip
    lines += markdown_table(
        ["dataset", "measure", "budget", "default", "on", "Δ on − default", "p50 ms default",
         "p50 ms on"],
        rows,
    )  # fmt: skip
    lines += ["", "Builds (seconds from each build's record; nodes by kind):", ""]
    rows = []
    for dataset, data in results.items():
        for variant in VARIANTS:
            v = data["variants"][variant]
            nodes = " ".join(f"{k} {n}" for k, n in sorted(v["nodes"].items()))
            rows.append([dataset, f"{variant} ({v['recorded']})", v["llm_calls"],
                         *(v["stages"][s] for s in STAGES), nodes, data["load"]])  # fmt: skip
    lines += markdown_table(
        ["dataset", "attributes (recorded)", "attribute calls", *STAGES, "nodes", "load"], rows
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=",".join(R.DATASETS))
    parser.add_argument("--budgets", default=",".join(str(b) for b in R.BUDGETS))
    args = parser.parse_args(argv)
    if not R.DATA.is_dir():
        print(f"skipped: {R.DATA} not found (the shared evaluation data is absent)")
        return 0
    budgets = [int(b) for b in args.budgets.split(",") if b]
    results = {d: evaluate(d, budgets) for d in args.datasets.split(",") if d}
    command = command_line(__spec__.name, argv or None)
    path = write_report("graph-attributes", {"command": command, "results": results},
                        markdown(results, command))  # fmt: skip
    print(path.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
