"""Incremental updates of the EraRAG hierarchy against full rebuilds, on MultiHop-RAG.

The paper's protocol (EraRAG §V, "Dynamic Insertion Consumption"): build on 50% of the
documents, then insert the other 50% in 10 steps of 5%; beside each step, the cost of a full
rebuild of the same cumulative corpus. Then a single-document insert into the full index
(EraRAG Exp-1): one document is deleted and inserted again, so the insert lands in an index
that holds every other document. Each row reports LLM calls, prompt + completion tokens,
embeddings computed, bytes written and seconds, all from the engine's ``OperationReport``.

Retrieval quality: ``collapsed`` against ``naive`` (document recall and fact recall at a
2,000-token budget on the 500 questions, measured by ``graphstrata.evaluation``) on
the incrementally built index after the 10 inserts and on a static build of the full corpus
(the 100% rebuild).

Backends: the default CPU ones, the packaged all-MiniLM-L6-v2 and the extractive LLM
(``--embedder hashing`` gives a quick, model-free run; saved results say which was used).
The heterograph is disabled: this benchmark measures the hierarchy. Rebuilds are run only at
the cumulative shares given by ``--rebuild-at`` (the 50% build is one); for the other steps
the rebuild columns are interpolated linearly between measured rebuilds and marked ``~``.

Usage::

    python -m benchmarks.scale.update              # MiniLM, writes results/update.{md,json}
    python -m benchmarks.scale.update --embedder hashing --out /tmp/update-quick
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common
from benchmarks.common import RESULTS, command_line, read_jsonl, write_json

DATA = common.DATA / "multihop_rag"
BUDGET = 2000
STEPS = 10
SHUFFLE_SEED = 20250625
QUALITY_KEYS = (
    "doc_recall",
    "doc_recall_with_summaries",
    "fact_recall_text",
    "fact_recall_chunk",
)


def bench_config() -> Any:
    from graphstrata.engine.config import IndexConfig

    config = IndexConfig()
    config.heterograph.enabled = False
    return config


def make_backend(name: str) -> Any:
    from graphstrata.bindings.registry import make_embedder

    return make_embedder("all-MiniLM-L6-v2" if name == "minilm" else "hashing:384")


def cost(report: Any) -> dict[str, Any]:
    """The cost columns of one operation."""
    return {
        "llm_calls": int(report.llm_calls),
        "tokens": int(report.prompt_tokens + report.completion_tokens),
        "prompt_tokens": int(report.prompt_tokens),
        "completion_tokens": int(report.completion_tokens),
        "embedded": int(report.embedded),
        "bytes_written": int(report.bytes_written),
        "seconds": round(float(report.seconds), 2),
        "chunks_added": int(report.chunks_added),
        "chunks_removed": int(report.chunks_removed),
        "llm_by_stage": {k: dict(v) for k, v in report.llm_by_stage.items()},
    }


def hierarchy_shape(index: Any) -> dict[str, int]:
    """Nodes per layer of the index's hierarchy (layer 0 = chunks)."""
    from graphstrata.engine.types import NodeKind

    nodes = index.engine.state.snapshot.nodes
    shape = {"0": int(np.sum(nodes.kind == int(NodeKind.T)))}
    layers = nodes.layer[nodes.kind == int(NodeKind.L)]
    for layer, count in zip(*np.unique(layers, return_counts=True), strict=True):
        shape[str(int(layer))] = int(count)
    return shape


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.embedder = make_backend(args.embedder)
        self.config = bench_config()
        self.work = Path(args.work or tempfile.mkdtemp(prefix="gs-update-"))
        self.work.mkdir(parents=True, exist_ok=True)
        self.static: Any = None

    def say(self, text: str) -> None:
        print(text, flush=True)

    def _components(self, group_new_first: bool) -> list[Any]:
        from graphstrata.engine.hierarchy import HierarchyComponent

        return [HierarchyComponent(group_new_first=group_new_first)]

    def create(self, name: str) -> Any:
        """A fresh index whose one component is the hierarchy (default insert policy)."""
        from graphstrata.bindings.api import Index
        from graphstrata.bindings.llm.extractive import ExtractiveLLM
        from graphstrata.engine.index import Engine

        path = self.work / name
        shutil.rmtree(path, ignore_errors=True)
        engine = Engine.create(
            path, self.config, self.embedder, ExtractiveLLM(), self._components(True)
        )
        return Index(engine)

    def copy(self, index: Any, name: str, group_new_first: bool) -> Any:
        """A copy of ``index``'s directory, opened with the given insert policy."""
        from graphstrata.bindings.api import Index
        from graphstrata.bindings.llm.extractive import ExtractiveLLM
        from graphstrata.engine.index import Engine

        path = self.work / name
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(index.path, path)
        components = self._components(group_new_first)
        return Index(Engine.open(path, self.embedder, ExtractiveLLM(), components=components))

    def rebuild(self, docs: list[dict[str, Any]], name: str, keep: bool = False) -> dict[str, Any]:
        index = self.create(name)
        report = index.insert(docs)
        row = cost(report)
        row["shape"] = hierarchy_shape(index)
        if keep:
            self.static = index
        else:
            shutil.rmtree(self.work / name, ignore_errors=True)
        return row

    def evaluate(self, index: Any, qa: Path) -> dict[str, dict[str, float]]:
        from graphstrata.evaluation import evaluate

        result = evaluate(index, qa, modes=["naive", "collapsed"], budget=BUDGET)
        out = {}
        for mode, res in result.modes.items():
            out[mode] = {k: res.overall.get(k) for k in QUALITY_KEYS}
            out[mode]["tokens"] = res.overall.get("tokens")
        return out


def pick_single_doc(docs: list[dict[str, Any]], config: Any) -> dict[str, Any]:
    """The document whose chunk count is the corpus median (first such in corpus order)."""
    from graphstrata.engine.ingest.chunking import chunk_text

    counts = [len(chunk_text(d["text"], config.chunking)) for d in docs]
    median = sorted(counts)[len(counts) // 2]
    return docs[counts.index(median)]


def interpolate(measured: dict[int, dict[str, Any]], n_docs: int, key: str) -> float | None:
    """Linear interpolation of a rebuild cost over the cumulative number of documents."""
    xs = sorted(measured)
    if len(xs) < 2 or not xs[0] <= n_docs <= xs[-1]:
        return None
    return float(np.interp(n_docs, xs, [measured[x][key] for x in xs]))


#: The two insert policies measured: the default, and the plain nearest-segment placement.
POLICIES = {"grouped": True, "nearest": False}


def run(args: argparse.Namespace) -> dict[str, Any]:
    docs = read_jsonl(DATA / "corpus.jsonl")
    if args.limit_docs:
        docs = docs[: args.limit_docs]
    order = np.random.default_rng(SHUFFLE_SEED).permutation(len(docs))
    docs = [docs[i] for i in order]
    bench = Bench(args)
    n0 = len(docs) // 2
    parts = np.array_split(np.arange(n0, len(docs)), STEPS)
    rebuild_at = {int(x) for x in args.rebuild_at.split(",") if x}
    bench.say(
        f"MultiHop-RAG: {len(docs)} documents (seeded shuffle {SHUFFLE_SEED}); build on {n0}, "
        f"then {STEPS} inserts of {len(parts[-1])}-{len(parts[0])}; embedder "
        f"{bench.embedder.name}, LLM extractive; work dir {bench.work}"
    )

    t0 = time.perf_counter()
    first = bench.create("grouped")
    build = cost(first.insert(docs[:n0]))
    build["shape"] = hierarchy_shape(first)
    bench.say(f"build 50%: {json.dumps({k: v for k, v in build.items() if k != 'llm_by_stage'})}")
    # The build is the same for both policies (nothing is placed yet): copy it.
    indexes = {"grouped": first, "nearest": bench.copy(first, "nearest", False)}
    steps: list[dict[str, Any]] = [
        {
            "step": "build 50%",
            "docs": n0,
            "new_docs": n0,
            "incremental": {name: build for name in POLICIES},
            "rebuild": build,
        }
    ]
    measured = {n0: build}
    cumulative = n0
    for i, part in enumerate(parts, start=1):
        new_docs = [docs[j] for j in part.tolist()]
        cumulative += len(new_docs)
        share = 50 + 5 * i
        entry: dict[str, Any] = {
            "step": f"insert {i} (+5% -> {share}%)",
            "docs": cumulative,
            "new_docs": len(new_docs),
            "incremental": {},
            "rebuild": None,
        }
        for name, index in indexes.items():
            row = cost(index.insert(new_docs))
            row["shape"] = hierarchy_shape(index)
            entry["incremental"][name] = row
            bench.say(
                f"{entry['step']} [{name}]: calls {row['llm_calls']}, tokens {row['tokens']}, "
                f"embedded {row['embedded']}, bytes {row['bytes_written']}, {row['seconds']} s"
            )
        if share in rebuild_at:
            keep = share == 100
            entry["rebuild"] = bench.rebuild(docs[:cumulative], f"rebuild-{share}", keep=keep)
            measured[cumulative] = entry["rebuild"]
            reb = entry["rebuild"]
            bench.say(
                f"{entry['step']} [rebuild]: calls {reb['llm_calls']}, tokens {reb['tokens']}, "
                f"embedded {reb['embedded']}, bytes {reb['bytes_written']}, {reb['seconds']} s"
            )
        steps.append(entry)
    for entry in steps:
        if entry["rebuild"] is None:
            entry["rebuild_interpolated"] = {
                key: interpolate(measured, entry["docs"], key)
                for key in ("llm_calls", "tokens", "embedded", "bytes_written", "seconds")
            }

    qa = DATA / "qa.jsonl"
    quality: dict[str, Any] = {}
    if not args.skip_quality:
        if bench.static is None:
            bench.rebuild(docs, "rebuild-100", keep=True)
        for name, index in indexes.items():
            quality[name] = bench.evaluate(index, qa)
        quality["static"] = bench.evaluate(bench.static, qa)
        bench.say(f"quality: {json.dumps(quality)}")

    single_doc = pick_single_doc(docs, bench.config)
    single: dict[str, Any] = {
        "doc_id": single_doc["doc_id"],
        "rebuild": measured.get(len(docs)),
    }
    for name, index in indexes.items():
        deleted = cost(index.delete([single_doc["doc_id"]]))
        inserted = cost(index.insert([single_doc]))
        single[name] = {"delete": deleted, "insert": inserted}
        single["chunks"] = inserted["chunks_added"]
        bench.say(f"single-document insert [{name}]: {json.dumps(inserted)}")
    total = time.perf_counter() - t0
    result = {
        "dataset": "multihop_rag",
        "documents": len(docs),
        "shuffle_seed": SHUFFLE_SEED,
        "embedder": bench.embedder.name,
        "llm": "extractive",
        "config": bench.config.to_dict(),
        "policies": POLICIES,
        "rebuild_at": sorted(rebuild_at | {50}),
        "steps": steps,
        "single_document": single,
        "quality": quality,
        "budget_tokens": BUDGET,
        "seconds_total": round(total, 1),
        "machine": common.machine(),
        "command": command_line(__spec__.name),
        "targets": {name: targets(steps, single, name) for name in POLICIES},
    }
    if not args.keep:
        shutil.rmtree(bench.work, ignore_errors=True)
    return result


def targets(steps: list[dict[str, Any]], single: dict[str, Any], policy: str) -> dict[str, Any]:
    """The issue's targets for one insert policy, checked on measured rebuilds only."""
    out: dict[str, Any] = {}
    full = single["rebuild"]
    if full:
        ins = single[policy]["insert"]
        out["single_doc_tokens_ratio"] = ins["tokens"] / max(full["tokens"], 1)
        out["single_doc_bytes_ratio"] = ins["bytes_written"] / max(full["bytes_written"], 1)
        out["single_doc_ok"] = (
            out["single_doc_tokens_ratio"] <= 1 / 20 and out["single_doc_bytes_ratio"] <= 1 / 20
        )
    ratios = {
        s["step"]: s["incremental"][policy]["tokens"] / max(s["rebuild"]["tokens"], 1)
        for s in steps[1:]
        if s["rebuild"]
    }
    out["step_tokens_ratio_measured"] = ratios
    out["steps_ok"] = all(r <= 0.25 for r in ratios.values()) if ratios else None
    return out


# ------------------------------------------------------------------------------ output
def _num(value: float | None, approx: bool = False) -> str:
    if value is None:
        return "–"
    text = f"{value:,.0f}"
    return f"~{text}" if approx else text


def _ratio(a: float, b: float | None, approx: bool = False) -> str:
    if not b:
        return "–"
    return f"{'~' if approx else ''}{a / b:.3f}"


def _layer_key(item: tuple[str, int]) -> int:
    return int(item[0])


def _cost_cells(row: dict[str, Any], approx: bool = False) -> str:
    return " | ".join(
        [
            _num(row.get("llm_calls"), approx),
            _num(row.get("tokens"), approx),
            _num(row.get("embedded"), approx),
            _num(row.get("bytes_written"), approx),
            _num(row.get("seconds"), approx) if approx else f"{row.get('seconds', 0):.1f}",
        ]
    )


def _rebuild_of(step: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    if step["rebuild"] is not None:
        return step["rebuild"], False
    return step.get("rebuild_interpolated") or {}, True


def cost_table(result: dict[str, Any], policy: str) -> list[str]:
    lines = [
        "| step | docs | LLM calls | tokens | embedded | bytes written | s | rebuild calls "
        "| rebuild tokens | rebuild embedded | rebuild bytes | rebuild s | tokens ratio "
        "| bytes ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in result["steps"]:
        inc = s["incremental"][policy]
        reb, approx = _rebuild_of(s)
        lines.append(
            f"| {s['step']} | {s['docs']} | {_cost_cells(inc)} | {_cost_cells(reb, approx)} "
            f"| {_ratio(inc['tokens'], reb.get('tokens'), approx)} "
            f"| {_ratio(inc['bytes_written'], reb.get('bytes_written'), approx)} |"
        )
    single = result["single_document"]
    full = single["rebuild"] or {}
    for label in ("delete", "insert"):
        op = single[policy][label]
        lines.append(
            f"| single doc {label} ({single['chunks']} chunks) | {result['documents']} "
            f"| {_cost_cells(op)} | {_cost_cells(full)} "
            f"| {_ratio(op['tokens'], full.get('tokens'))} "
            f"| {_ratio(op['bytes_written'], full.get('bytes_written'))} |"
        )
    return lines


def shape_table(result: dict[str, Any], policy: str) -> list[str]:
    lines = [
        "| step | calls per layer | layer-1 written / before | nodes per layer |",
        "|---|---|---:|---|",
    ]
    previous: dict[str, int] | None = None
    for s in result["steps"]:
        inc = s["incremental"][policy]
        per_layer = " / ".join(
            str(v["calls"]) for k, v in sorted(inc["llm_by_stage"].items()) if "summarize" in k
        )
        shape = " / ".join(str(v) for _, v in sorted(inc["shape"].items(), key=_layer_key))
        written = "–"
        if previous and previous.get("1"):
            layer1 = inc["llm_by_stage"].get("summarize_layer_1", {}).get("calls", 0)
            written = f"{layer1 / previous['1']:.0%}"
        lines.append(f"| {s['step']} | {per_layer} | {written} | {shape} |")
        previous = inc["shape"]
    return lines


def target_lines(result: dict[str, Any], policy: str) -> list[str]:
    t = result["targets"][policy]
    lines = []
    if "single_doc_tokens_ratio" in t:
        lines.append(
            f"- single-document insert: tokens {t['single_doc_tokens_ratio']:.4f} of a rebuild, "
            f"bytes {t['single_doc_bytes_ratio']:.4f} (target ≤ 0.05 each): "
            f"{'met' if t['single_doc_ok'] else 'MISSED'}"
        )
    for step, ratio in t["step_tokens_ratio_measured"].items():
        lines.append(
            f"- {step}: tokens {ratio:.3f} of a rebuild (target ≤ 0.25): "
            f"{'met' if ratio <= 0.25 else 'MISSED'}"
        )
    return lines


POLICY_TITLES = {
    "grouped": "default policy (`group_new_first=True`): new items that fill whole segments "
    "among themselves form new segments, the rest join their nearest segment",
    "nearest": "plain placement (`group_new_first=False`): every new item joins its "
    "Hamming-nearest existing segment (the paper's Algorithm 3 as the partition kernel does it)",
}


NOTES = [
    "Notes on the columns:",
    "",
    "- Bytes written include the engine's usearch cache file whenever it is rewritten (when "
    "at least max(2048, a quarter of all vectors) are newer than the cache: amortized, so "
    "some inserts carry it and most do not), two manifest copies per commit, and the rows of "
    "new chunks twice (the engine writes each chunk row, then the hierarchy writes the same "
    "id again with its code and parent; the later row wins).",
    "- A step's embedded count is its new chunks plus its new summaries whose text was not "
    "embedded before; seconds are wall-clock on a machine shared with other jobs.",
]


def markdown(result: dict[str, Any]) -> str:
    hier = result["config"]["hierarchy"]
    lines = [
        "# Incremental update vs full rebuild (EraRAG hierarchy), MultiHop-RAG",
        "",
        f"Command: `{result['command']}`  ",
        f"Embedder `{result['embedder']}`, LLM `{result['llm']}` (CPU defaults; heterograph "
        f"disabled: the indexes hold the hierarchy only), s_min {hier['s_min']}, s_max "
        f"{hier['s_max']}, {hier['n_bits']} hyperplanes, summaries of at most "
        f"{hier['summary_tokens']} tokens, chunks of {result['config']['chunking']['chunk_tokens']} "
        f"tokens. {result['documents']} documents in a seeded order ({result['shuffle_seed']}): "
        "build on 50%, then 10 inserts of 5%, then one document deleted and inserted again "
        f"into the full index. Total run {result['seconds_total']} s on {result['machine']} "
        "(shared with other work: seconds are wall-clock under load).",
        "",
        "Tokens = prompt + completion tokens of all LLM calls (cl100k counts); embedded = texts "
        "embedded (chunks and summaries); bytes = bytes the commit wrote. Rebuild = a fresh "
        "index built from the same cumulative corpus in one insert, measured at "
        f"{', '.join(f'{x}%' for x in result['rebuild_at'])} of the corpus (the 50% build is "
        "one) and interpolated linearly elsewhere (`~`). The two insert policies start from the "
        "same 50% build (a copy).",
    ]
    lines += ["", *NOTES]
    for policy in result["policies"]:
        lines += ["", f"## {POLICY_TITLES[policy]}", "", *cost_table(result, policy)]
        lines += ["", "Targets (measured rebuilds only):", "", *target_lines(result, policy)]
        lines += [
            "",
            "Summaries written per layer (summarize_layer_1 / 2 / ...), layer-1 summaries "
            "written as a share of the layer-1 summaries before the step, nodes per layer after "
            "the step (chunks / layer 1 / ...):",
            "",
            *shape_table(result, policy),
        ]
    quality = result["quality"]
    if quality:
        lines += [
            "",
            f"## Retrieval quality at a {result['budget_tokens']}-token budget, 500 questions",
            "",
            "Measured by `graphstrata.evaluation` (doc R: a retrieved chunk cites a gold "
            "document; +sum: any retrieved node cites it; fact R text: the gold fact is in a "
            "retrieved text; fact R chunk: a source chunk of the fact was retrieved).",
            "",
            "| index | mode | doc R | doc R +sum | fact R text | fact R chunk | tokens |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        labels = {
            "grouped": "after 10 inserts, default policy",
            "nearest": "after 10 inserts, plain placement",
            "static": "static build of the full corpus",
        }
        for name, label in labels.items():
            for mode, scores in quality.get(name, {}).items():
                cells = " | ".join(
                    "–" if scores[k] is None else f"{scores[k]:.3f}" for k in QUALITY_KEYS
                )
                lines.append(f"| {label} | {mode} | {cells} | {scores['tokens']:.0f} |")
        lines.append("")
        for name in result["policies"]:
            diff = {
                k: quality[name]["collapsed"][k] - quality["static"]["collapsed"][k]
                for k in QUALITY_KEYS
                if quality[name]["collapsed"][k] is not None
            }
            worst = [k for k, v in diff.items() if abs(v) > 0.01]
            verdict = "all within 1 point" if not worst else f"beyond 1 point: {', '.join(worst)}"
            lines.append(
                f"- collapsed, {labels[name]} − static (points): "
                + ", ".join(f"{k} {100 * v:+.1f}" for k, v in diff.items())
                + f" ({verdict})"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument(
        "--rebuild-at",
        default="75,100",
        help="cumulative shares (percent) at which a full rebuild is measured (50 is the build)",
    )
    parser.add_argument("--limit-docs", type=int, default=0, help="use only the first N documents")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--work", help="working directory for the indexes (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the indexes")
    parser.add_argument(
        "--out", default=str(RESULTS / "update"), help="results path without extension"
    )
    parser.add_argument("--render", help="only re-render the Markdown of a saved JSON result")
    args = parser.parse_args(argv)
    if args.render:
        result = json.loads(Path(args.render).read_text(encoding="utf-8"))
        Path(args.out).with_suffix(".md").write_text(markdown(result), encoding="utf-8")
        print(markdown(result))
        return 0
    if not (DATA / "corpus.jsonl").exists():
        print(f"skipped: {DATA} is absent (MultiHop-RAG data not available)")
        return 0
    result = run(args)
    out = Path(args.out)
    write_json(out.with_suffix(".json"), result)
    text = markdown(result)
    out.with_suffix(".md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
