"""The ``graphstrata`` command line.

Every command shares one config loader (``--config``, ``--llm``, ``--embedder`` and the
``GRAPHSTRATA_*`` environment variables), prints a report after every operation (``--json``
for machines), shows progress on long work, and exits non-zero with a one-line cause.

Extra commands (eval, serve, bench) live in their own modules and register themselves through
``COMMAND_MODULES``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

#: Modules that add subcommands: each defines ``register(subparsers) -> None``.
COMMAND_MODULES = ("graphstrata.bindings.cli_eval", "graphstrata.bindings.cli_serve")


class CLIError(Exception):
    """A user-facing failure: printed as one line, exit code 1."""


# ---------------------------------------------------------------------------- shared loader
def add_backend_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--llm",
        help="LLM backend spec (default: the index's, else extractive; env GRAPHSTRATA_LLM)",
    )
    p.add_argument("--embedder", help="embedder spec (default: the index's, else all-MiniLM-L6-v2)")
    p.add_argument("--no-cache", action="store_true", help="bypass the LLM response cache")


def load_config(path: str | None, overrides: dict[str, Any]) -> Any:
    """IndexConfig from an optional JSON/TOML file plus command-line overrides."""
    from graphstrata.engine.config import IndexConfig

    data: dict[str, Any] = {}
    if path:
        p = Path(path)
        if not p.exists():
            raise CLIError(f"config file {p} not found")
        if p.suffix == ".toml":
            import tomllib

            data = tomllib.loads(p.read_text())
        else:
            data = json.loads(p.read_text())
    cfg = IndexConfig.from_dict(data)
    for dotted, value in overrides.items():
        if value is None:
            continue
        target: Any = cfg
        *parents, leaf = dotted.split(".")
        for name in parents:
            target = getattr(target, name)
        setattr(target, leaf, value)
    cfg.validate()
    return cfg


def open_index(args: argparse.Namespace, version: int | None = None) -> Any:
    from graphstrata.bindings.api import Index

    return Index.open(
        args.index,
        embedder=getattr(args, "embedder", None),
        llm=getattr(args, "llm", None),
        version=version,
        use_cache=not getattr(args, "no_cache", False),
    )


class Progress:
    """tqdm bars on stderr, one per stage, shown only for work that lasts over a second."""

    def __init__(self, enabled: bool):
        self.enabled = (enabled and sys.stderr.isatty()) or os.environ.get(
            "GRAPHSTRATA_PROGRESS"
        ) == "1"
        self.bars: dict[str, Any] = {}
        self.started: dict[str, float] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm

        now = time.monotonic()
        self.started.setdefault(stage, now)
        bar = self.bars.get(stage)
        if bar is None:
            if now - self.started[stage] < 1.0 and done < total:
                return
            bar = self.bars[stage] = tqdm(total=total, desc=stage, file=sys.stderr, leave=False)
        bar.total = total
        bar.n = done
        bar.refresh()
        if done >= total:
            bar.close()

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def print_report(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
        return
    keys = [
        "operation", "version", "docs_added", "docs_updated", "docs_unchanged", "docs_deleted",
        "chunks_added", "chunks_removed", "chunks_embedded", "nodes_added", "nodes_removed", "edges_added",
        "llm_calls", "llm_cached", "prompt_tokens", "completion_tokens", "embedded", "bytes_written", "seconds",
    ]  # fmt: skip
    width = max(len(k) for k in keys)
    for k in keys:
        if k in report:
            print(f"{k:<{width}}  {report[k]}")
    if report.get("stages"):
        stages = ", ".join(
            f"{k} {v:.2f}s" for k, v in sorted(report["stages"].items(), key=lambda kv: -kv[1])
        )
        print(f"{'stages':<{width}}  {stages}")
    for note in report.get("notes", []):
        print(f"{'note':<{width}}  {note}")


# ---------------------------------------------------------------------------- commands
def cmd_index(args: argparse.Namespace) -> int:
    from graphstrata.bindings.api import Index
    from graphstrata.engine.documents import read_documents

    overrides = {
        "chunking.chunk_tokens": args.chunk_tokens,
        "chunking.overlap_tokens": args.overlap_tokens,
        "hierarchy.enabled": False if args.no_hierarchy else None,
        "heterograph.enabled": False if args.no_heterograph else None,
        "hierarchy.n_bits": args.n_bits,
    }
    cfg = load_config(args.config, overrides)
    out = Path(args.out)
    if (out / "manifest.json").exists():
        if not args.force:
            raise CLIError(
                f"{out} already holds an index; use `graphstrata insert` or --force to rebuild"
            )
        _remove_index_keep_cache(out)
    docs = list(read_documents(args.source))
    index = Index.create(
        out, cfg, embedder=args.embedder, llm=args.llm, use_cache=not args.no_cache
    )
    progress = Progress(not args.json)
    try:
        report = index.insert(docs, progress=progress)
    finally:
        progress.close()
    print_report(report.to_dict(), args.json)
    return 0


def _remove_index_keep_cache(path: Path) -> None:
    """Delete an index for --force, keeping its LLM response cache so a rebuild pays only once."""
    import shutil

    from graphstrata.bindings.api import LLM_CACHE_FILE

    cache = path / LLM_CACHE_FILE
    kept = path.parent / f".{path.name}.{LLM_CACHE_FILE}.keep"
    if cache.exists():
        cache.replace(kept)
    shutil.rmtree(path)
    if kept.exists():
        path.mkdir(parents=True)
        kept.replace(cache)


def cmd_insert(args: argparse.Namespace) -> int:
    from graphstrata.engine.documents import read_documents

    index = open_index(args)
    progress = Progress(not args.json)
    try:
        report = index.insert(list(read_documents(args.source)), progress=progress)
    finally:
        progress.close()
    print_report(report.to_dict(), args.json)
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    index = open_index(args)
    report = index.delete(args.doc_ids, missing_ok=args.missing_ok)
    print_report(report.to_dict(), args.json)
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    index = open_index(args, version=args.version)
    params = json.loads(args.params) if args.params else {}
    if args.answer:
        result = index.answer(args.question, mode=args.mode, budget_tokens=args.budget, **params)
    else:
        result = index.query(
            args.question, mode=args.mode, budget_tokens=args.budget, top_k=args.top_k, **params
        )
    if args.json:
        print(json.dumps(result.to_dict(), indent=1, ensure_ascii=False))
        return 0
    r = result.report
    print(
        f"mode={r['mode']} version={r['version']} nodes={r['nodes']} tokens={r['tokens']}/{r['budget_tokens']} "
        f"embed={r['embed_seconds'] * 1000:.1f}ms search={r['search_seconds'] * 1000:.1f}ms"
    )
    for h in result.nodes:
        text = " ".join(h.text.split())
        text = text if len(text) <= 240 else text[:237] + "..."
        print(
            f"[{h.kind}{h.layer if h.kind == 'L' else ''} {h.score:.3f} {h.tokens}t {', '.join(h.docs)[:80]}] {text}"
        )
    if result.answer is not None:
        print(f"\nanswer: {result.answer}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    index = open_index(args, version=args.version)
    stats = index.stats()
    if args.json:
        print(json.dumps(stats, indent=1))
        return 0
    for key, value in stats.items():
        print(f"{key:<16} {json.dumps(value) if isinstance(value, dict | list) else value}")
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    index = open_index(args)
    print_report(index.compact().to_dict(), args.json)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphstrata", description="Incremental graph retrieval for growing corpora"
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "index", help="build a new index from a folder of .txt/.md files or a JSONL file"
    )
    p.add_argument("source")
    p.add_argument("--out", required=True, help="index directory to create")
    p.add_argument("--config", help="JSON or TOML file with IndexConfig fields")
    p.add_argument("--chunk-tokens", type=int, dest="chunk_tokens")
    p.add_argument("--overlap-tokens", type=int, dest="overlap_tokens")
    p.add_argument("--n-bits", type=int, dest="n_bits", help="LSH hyperplanes of the hierarchy")
    p.add_argument("--no-hierarchy", action="store_true", help="skip the EraRAG hierarchy")
    p.add_argument("--no-heterograph", action="store_true", help="skip the NodeRAG heterograph")
    p.add_argument("--force", action="store_true", help="replace an existing index at --out")
    p.add_argument("--json", action="store_true")
    add_backend_args(p)
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("insert", help="insert or update documents")
    p.add_argument("index")
    p.add_argument("source")
    p.add_argument("--json", action="store_true")
    add_backend_args(p)
    p.set_defaults(func=cmd_insert)

    p = sub.add_parser("delete", help="delete documents by doc_id")
    p.add_argument("index")
    p.add_argument("doc_ids", nargs="+")
    p.add_argument(
        "--missing-ok", action="store_true", help="ignore doc_ids that are not in the index"
    )
    p.add_argument("--json", action="store_true")
    add_backend_args(p)
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser("query", help="retrieve a context for a question")
    p.add_argument("index")
    p.add_argument("question")
    p.add_argument(
        "--mode", default="naive", help="naive, collapsed, detailed, summarized, graph, bm25"
    )
    p.add_argument("--budget", type=int, default=None, help="retrieved-token budget (default 2000)")
    p.add_argument("--top-k", type=int, default=None, dest="top_k")
    p.add_argument("--params", help="JSON object of mode parameters")
    p.add_argument("--answer", action="store_true", help="also generate an answer with the LLM")
    p.add_argument("--at-version", type=int, dest="version", help="query a pinned older version")
    p.add_argument("--json", action="store_true")
    add_backend_args(p)
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("stats", help="describe an index")
    p.add_argument("index")
    p.add_argument("--at-version", type=int, dest="version")
    p.add_argument("--json", action="store_true")
    add_backend_args(p)
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("compact", help="merge segments and rewrite the vector cache")
    p.add_argument("index")
    p.add_argument("--json", action="store_true")
    add_backend_args(p)
    p.set_defaults(func=cmd_compact)

    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        module.register(sub)
    return parser


def _version() -> str:
    from graphstrata import __version__

    return f"graphstrata {__version__}"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except KeyboardInterrupt:
        print(
            "graphstrata: interrupted; the index stays at its last committed version",
            file=sys.stderr,
        )
        return 130
    except Exception as exc:
        if os.environ.get("GRAPHSTRATA_DEBUG") == "1":
            raise
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(
            f"graphstrata {args.command}: error: {type(exc).__name__}: {message}", file=sys.stderr
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
