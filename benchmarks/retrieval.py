"""Retrieval quality of every search mode on the shared QA datasets.

    python benchmarks/retrieval.py [--datasets multihop_rag,hotpotqa] [--budgets 1000,2000,4000]
                                   [--limit N] [--rebuild]

For each dataset of ``../shared/data`` (MultiHop-RAG: 609 news articles, 500 questions;
HotpotQA: 994 passages, 100 questions) it builds an index with the default CPU backends
(packaged all-MiniLM-L6-v2 + the extractive LLM, default ``IndexConfig``), or reuses the one
under ``build/bench-indexes/`` built from the same corpus, config, backends and component set,
then runs ``graphstrata.engine.evaluation.evaluate`` for every mode the index serves (dense
``naive``, sparse ``bm25``, the hierarchy and heterograph modes when present) at each budget.
Writes ``benchmarks/results/retrieval.md`` and ``retrieval.json``.

Skips cleanly (exit 0) when ``../shared/data`` is absent.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
INDEX_ROOT = REPO / "build" / "bench-indexes"
RESULTS = REPO / "benchmarks" / "results"
DATASETS = ("multihop_rag", "hotpotqa")
BUDGETS = (1000, 2000, 4000)
#: Table order; a mode the index does not serve is listed as unavailable.
MODES = ("naive", "bm25", "collapsed", "detailed", "summarized", "graph")
HEADLINE_BUDGET = 2000


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def components_for(names: list[str] | None) -> list[Any]:
    """The default components of the default config, or only those named (``--components``)."""
    from graphstrata.engine.config import IndexConfig
    from graphstrata.engine.index import default_components

    available = default_components(IndexConfig())
    if names is None:
        return available
    unknown = sorted(set(names) - {c.name for c in available})
    if unknown:
        raise SystemExit(f"unknown or absent components {unknown}; present: {available}")
    return [c for c in available if c.name in names]


def build_identity(dataset: str, components: list[Any]) -> dict[str, Any]:
    """What an index depends on: corpus, config, backends and the components that built it."""
    from graphstrata.engine.config import IndexConfig
    from graphstrata.engine.store import sha256_file

    return {
        "dataset": dataset,
        "corpus_sha256": sha256_file(DATA / dataset / "corpus.jsonl"),
        "config": IndexConfig().to_dict(),
        "components": [c.name for c in components],
    }


def code_files(components: list[Any]) -> list[Path]:
    """Source files an index's content depends on: chunking; the extractive LLM, prompts and
    kernels when a stateful component is built; each component's module with its
    ``<module>_*.py`` siblings."""
    engine_dir = REPO / "graphstrata" / "engine"
    files = [engine_dir / "chunking.py"]
    if any(c.name != "sparse" for c in components):  # bm25 keeps no state and no LLM
        files += [REPO / "graphstrata" / "bindings" / "extractive.py", engine_dir / "prompts.py"]
        files += sorted((REPO / "graphstrata" / "core").glob("*.py"))
    for comp in components:
        module = Path(sys.modules[type(comp).__module__].__file__ or "")
        files += [module, *sorted(module.parent.glob(f"{module.stem}_*.py"))]
    return files


def code_sha256(components: list[Any]) -> str:
    """One hash over ``code_files``: a rerun after a code change rebuilds the index."""
    h = hashlib.sha256()
    for path in code_files(components):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def index_dir(identity: dict[str, Any]) -> Path:
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]
    return INDEX_ROOT / f"{identity['dataset']}-{key}"


def build_or_reuse(
    dataset: str, components: list[Any], rebuild: bool = False
) -> tuple[Any, dict[str, Any]]:
    """Open the dataset's index for this identity, building it first if needed.

    The index is opened with exactly the components that built it, so a component added to
    the code later never serves modes over an index it has not seen (a rerun then builds a
    new index, under a new identity). The build record is written last: a directory without
    one is an interrupted build and is rebuilt, and so is an index whose record names other
    source code (``code_sha256``) than the current one. Returns the open ``Index`` and the
    record.
    """
    from graphstrata.bindings.api import LLM_CACHE_FILE, Index
    from graphstrata.bindings.backends import make_embedder, make_llm
    from graphstrata.engine.config import IndexConfig
    from graphstrata.engine.index import Engine

    identity = build_identity(dataset, components)
    path = index_dir(identity)
    record_path = path.with_suffix(".build.json")
    embedder = make_embedder()
    llm = make_llm(cache_path=path / LLM_CACHE_FILE)
    code = code_sha256(components)
    record = json.loads(record_path.read_text()) if record_path.exists() else None
    if record and record.get("code_sha256") != code:
        log(f"{dataset}: the code changed since {path.relative_to(REPO)} was built; rebuilding")
    elif record and not rebuild and (path / "manifest.json").exists():
        log(f"{dataset}: reusing {path.relative_to(REPO)}")
        engine = Engine.open(path, embedder, llm, components=components)
        return Index(engine), record
    record_path.unlink(missing_ok=True)
    if path.exists():
        shutil.rmtree(path)
    docs = read_jsonl(DATA / dataset / "corpus.jsonl")
    log(f"{dataset}: building an index of {len(docs)} documents in {path.relative_to(REPO)}")
    index = Index(Engine.create(path, IndexConfig(), embedder, llm, components=components))
    last = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] > 30 or done >= total:
            last[0] = now
            log(f"{dataset}: {stage} {done}/{total}")

    report = index.insert(docs, progress=progress)
    record = {
        "identity": {k: v for k, v in identity.items() if k != "config"},
        "code_sha256": code,
        "report": report.to_dict(),
        "built_at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    record_path.write_text(json.dumps(record, indent=1))
    log(f"{dataset}: built in {report.seconds:.0f} s ({report.chunks_added} chunks)")
    return index, record


def evaluate_dataset(
    dataset: str, budgets: list[int], limit: int | None, components: list[Any], rebuild: bool
) -> dict[str, Any]:
    from graphstrata.engine.evaluation import evaluate, load_qa

    index, record = build_or_reuse(dataset, components, rebuild)
    items = load_qa(DATA / dataset / "qa.jsonl")
    served = index.modes
    modes = [m for m in MODES if m in served] + [m for m in served if m not in MODES]
    missing = [m for m in MODES if m not in served]
    log(f"{dataset}: modes {modes} (not in this index: {missing or 'none'})")
    results = {}
    for budget in budgets:
        log(f"{dataset}: evaluating {len(items[:limit])} questions at budget {budget}")
        results[budget] = evaluate(index, items, [*modes, *missing], budget, limit=limit)
    stats = index.stats()
    return {"record": record, "stats": stats, "results": results}


# ------------------------------------------------------------------------------ report
def machine() -> str:
    loads = os.getloadavg()
    busy = max(loads) > (os.cpu_count() or 1)
    return (
        f"{platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}; "
        f"load average at the end {', '.join(f'{x:.1f}' for x in loads)}"
        + (
            " (other work shared the cores: latencies and build times are upper bounds)"
            if busy
            else ""
        )
    )


def dataset_summary(name: str, data: dict[str, Any]) -> str:
    stats = data["stats"]
    report = data["record"]["report"]
    nodes = ", ".join(f"{k} {v}" for k, v in sorted(stats["nodes"].items()))
    return (
        f"- **{name}**: {stats['documents']} documents, nodes {nodes}; "
        f"embedder {stats['embedder']['name']}, LLM {stats['llm']}; "
        f"chunks of {stats['chunking']['chunk_tokens']} tokens "
        f"(overlap {stats['chunking']['overlap_tokens']}); "
        f"built in {report['seconds']:.0f} s ({data['record']['built_at']}) with components "
        f"{', '.join(data['record']['identity']['components']) or 'none'}; "
        f"modes served: {', '.join(stats['modes'])}; "
        f"not served: {', '.join(m for m in MODES if m not in stats['modes']) or 'none'}"
    )


def write_markdown(all_data: dict[str, dict[str, Any]], budgets: list[int], command: str) -> str:
    from graphstrata.engine.evaluation import format_rows, markdown_table, table_header

    lines = [
        "# Retrieval quality",
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine()}. Written {time.strftime('%Y-%m-%d %H:%M')}.",
        "",
        "Measures (definitions and tie rules in `graphstrata/engine/evaluation.py`): "
        "**doc R** = share of gold documents with a retrieved chunk or semantic unit; "
        "**doc R +sum** = the same, counting summaries' citations too; **fact R text** = "
        "gold evidence sentences found verbatim in a retrieved node; **fact R chunk** = gold "
        "sentences whose source chunk was retrieved; **answer (n)** = a gold answer in the "
        "retrieved text, over the n questions whose answer is not a yes/no verdict or "
        "'Insufficient information.' (MultiHop-RAG's answers are mostly entity names that "
        "many articles mention, so this measure is lenient there); **tokens** = retrieved tokens "
        "used (mean); **embed ms** = query embedding per question (batched 64 at a time); "
        "**search ms** = the mode's search per question (mean). Recall means are over the "
        "questions where the measure applies (MultiHop-RAG's null queries have no gold).",
        "",
        "Indexes:",
        "",
        *(dataset_summary(name, data) for name, data in all_data.items()),
        "",
    ]
    headline = [b for b in budgets if b == HEADLINE_BUDGET] or budgets[:1]
    for budget in headline:
        rows = [
            row
            for name, data in all_data.items()
            for row in format_rows(data["results"][budget], by_type=False, label=name)
        ]
        lines += [
            f"## All datasets at {budget} tokens",
            "",
            markdown_table(table_header("dataset"), rows),
            "",
        ]
    for name, data in all_data.items():
        lines += [f"## {name}", ""]
        rows = [
            row
            for budget in budgets
            for row in format_rows(
                data["results"][budget], by_type=False, label=str(budget), unavailable=False
            )
        ]
        lines += ["By budget:", "", markdown_table(table_header("budget"), rows), ""]
        for budget in headline:
            result = data["results"][budget]
            lines += [
                f"By question type at {budget} tokens:",
                "",
                markdown_table(
                    table_header(), format_rows(result, by_type=True, unavailable=False)
                ),
                "",
            ]
            lines += [f"Note: {n}" for n in result.notes]
    return "\n".join(lines).rstrip() + "\n"


def write_json(all_data: dict[str, dict[str, Any]], command: str) -> dict[str, Any]:
    return {
        "command": command,
        "machine": machine(),
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
        "datasets": {
            name: {
                "build": data["record"],
                "stats": data["stats"],
                "results": {str(b): r.to_dict() for b, r in data["results"].items()},
            }
            for name, data in all_data.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--budgets", default=",".join(str(b) for b in BUDGETS))
    parser.add_argument("--limit", type=int, default=None, help="first N questions per dataset")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the indexes")
    parser.add_argument(
        "--components",
        default=None,
        help="build with only these components (comma list, e.g. 'sparse'); default: all present",
    )
    parser.add_argument("--out", default=str(RESULTS / "retrieval.md"), help="Markdown output")
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        print(f"skipped: {DATA} not found (the shared evaluation data is absent)")
        return 0
    datasets = [d for d in args.datasets.split(",") if d]
    unknown = [d for d in datasets if not (DATA / d / "qa.jsonl").exists()]
    if unknown:
        parser.error(f"no such dataset under {DATA}: {unknown}")
    budgets = [int(b) for b in args.budgets.split(",") if b]
    command = "python benchmarks/retrieval.py" + "".join(f" {a}" for a in (argv or sys.argv[1:]))
    names = [c for c in args.components.split(",") if c] if args.components else None
    components = components_for(names)
    all_data = {
        d: evaluate_dataset(d, budgets, args.limit, components, args.rebuild) for d in datasets
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(write_markdown(all_data, budgets, command), encoding="utf-8")
    out.with_suffix(".json").write_text(
        json.dumps(write_json(all_data, command), indent=1, ensure_ascii=False) + "\n"
    )
    log(f"wrote {out} and {out.with_suffix('.json')}")
    print(out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
