"""The index commands: ``index``, ``insert``, ``delete``, ``query``, ``stats``, ``compact``,
``maintain``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from graphstrata.bindings.cli.build import build_index
from graphstrata.bindings.cli.common import (
    json_object,
    load_config,
    open_index,
    parse_params,
    skip_pyarrow_pandas_probe,
)
from graphstrata.bindings.cli.progress import add_quiet_arg, progress_for
from graphstrata.bindings.cli.prompts import load_prompts
from graphstrata.bindings.cli.reports import failed_files, print_report, print_stats
from graphstrata.bindings.options import add_backend_args


def cmd_index(args: argparse.Namespace) -> int:
    """``graphstrata index SOURCE --out DIR``: build a new index.

    The source is read and validated first; the index is built beside ``DIR`` and swapped in
    only once committed, so a failure (or ``--force`` with a mistyped source) leaves ``DIR`` as
    it was (:mod:`graphstrata.bindings.cli.build`).
    """
    overrides = {
        "chunking.chunk_tokens": args.chunk_tokens,
        "chunking.overlap_tokens": args.overlap_tokens,
        "hierarchy.enabled": False if args.no_hierarchy else None,
        "heterograph.enabled": False if args.no_heterograph else None,
        "hierarchy.n_bits": args.n_bits,
    }
    cfg = load_config(args.config, overrides)
    if args.prompts:
        cfg.prompts = load_prompts(args.prompts)
    report = build_index(args, cfg)
    print_report(report, args.json)
    return files_status(report)


def cmd_insert(args: argparse.Namespace) -> int:
    """``graphstrata insert INDEX SOURCE``: insert or update documents (a JSONL file, or a
    file or folder of PDF, Word, HTML, Markdown and text files, each file on its own)."""
    from graphstrata.bindings.api import read_source

    index = open_index(args)
    batch = read_source(args.source, index.config.ingest)
    progress = progress_for(args)
    try:
        report = index.insert_parsed(batch, progress=progress, wait=args.wait).to_dict()
    finally:
        progress.close()
    print_report(report, args.json)
    return files_status(report)


def files_status(report: dict[str, Any]) -> int:
    """The exit status of a write: 1 when a file failed (the others were written and the
    report names each file's outcome), else 0."""
    failed = failed_files(report)
    if failed:
        total = len(report["files"])
        print(f"graphstrata: {failed} of {total} files failed (listed above)", file=sys.stderr)
    return 1 if failed else 0


def cmd_delete(args: argparse.Namespace) -> int:
    """``graphstrata delete INDEX DOC_ID...``."""
    index = open_index(args)
    progress = progress_for(args)
    try:
        report = index.delete(args.doc_ids, missing_ok=args.missing_ok, progress=progress)
    finally:
        progress.close()
    print_report(report.to_dict(), args.json)
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    """``graphstrata query INDEX QUESTION``: retrieve (and with ``--answer``, answer)."""
    params = parse_params(args.params)
    flt = json_object(args.filter, "--filter", '{"year": {"$gte": 2020}}')
    skip_pyarrow_pandas_probe()
    index = open_index(args, version=args.version)
    # Unknown or ill-typed mode parameters, a bad filter: one line, before any work.
    index.parse_params(args.mode, params)
    index.check_filter(flt)
    budget, top_k = args.budget, args.top_k
    if args.answer:
        result = index.answer(args.question, args.mode, budget, top_k=top_k, filter=flt, **params)
    else:
        result = index.query(args.question, args.mode, budget, top_k, filter=flt, **params)
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
    """``graphstrata stats INDEX``."""
    index = open_index(args, version=args.version)
    print_stats(index.stats(), args.json)
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    """``graphstrata compact INDEX``: merge segments, rewrite the vector cache."""
    index = open_index(args)
    print_report(index.compact(wait=args.wait).to_dict(), args.json)
    return 0


def cmd_maintain(args: argparse.Namespace) -> int:
    """``graphstrata maintain INDEX``: whole-graph Leiden and important entities, committed."""
    index = open_index(args)
    print_report(index.maintain(wait=args.wait).to_dict(), args.json)
    return 0


def add_wait_arg(p: argparse.ArgumentParser) -> None:
    """``--wait``: how long a writing command waits for the index lock."""
    p.add_argument(
        "--wait",
        type=float,
        default=0.0,
        help="seconds to wait for the index lock if a running service holds it (default 0)",
    )


def register(sub: Any) -> None:
    """Add the index commands to the ``graphstrata`` subparsers.

    Parameters
    ----------
    sub:
        The ``add_subparsers()`` action of the main parser.
    """
    p = sub.add_parser(
        "index",
        help="build a new index from a JSONL file, or a file or folder of PDF, Word (.docx), "
        "HTML, Markdown and text files",
    )
    p.add_argument("source")
    p.add_argument("--out", required=True, help="index directory to create")
    p.add_argument("--config", help="JSON or TOML file with IndexConfig fields")
    p.add_argument(
        "--prompts", help="TOML or JSON prompt file (graphstrata prompts export writes one)"
    )
    p.add_argument("--chunk-tokens", type=int, dest="chunk_tokens")
    p.add_argument("--overlap-tokens", type=int, dest="overlap_tokens")
    p.add_argument("--n-bits", type=int, dest="n_bits", help="LSH hyperplanes of the hierarchy")
    p.add_argument("--no-hierarchy", action="store_true", help="skip the EraRAG hierarchy")
    p.add_argument("--no-heterograph", action="store_true", help="skip the NodeRAG heterograph")
    p.add_argument(
        "--force",
        action="store_true",
        help="rebuild the graphstrata index at --out (swapped in only once the new one is "
        "committed; its LLM cache is kept)",
    )
    p.add_argument("--json", action="store_true")
    add_quiet_arg(p)
    add_backend_args(p)
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("insert", help="insert or update documents (JSONL, a file or a folder)")
    p.add_argument("index")
    p.add_argument("source", help="a .jsonl file, or a file or folder of .pdf/.docx/.html/.md/.txt")
    p.add_argument("--json", action="store_true")
    add_quiet_arg(p)
    add_wait_arg(p)
    add_backend_args(p)
    p.set_defaults(func=cmd_insert)

    p = sub.add_parser("delete", help="delete documents by doc_id")
    p.add_argument("index")
    p.add_argument("doc_ids", nargs="+")
    p.add_argument(
        "--missing-ok", action="store_true", help="ignore doc_ids that are not in the index"
    )
    p.add_argument("--json", action="store_true")
    add_quiet_arg(p)
    add_backend_args(p)
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser("query", help="retrieve a context for a question")
    p.add_argument("index")
    p.add_argument("question")
    p.add_argument(
        "--mode",
        default="naive",
        help="naive (default), bm25, hybrid, collapsed, detailed, summarized or graph",
    )
    p.add_argument("--budget", type=int, default=None, help="retrieved-token budget (default 2000)")
    p.add_argument("--top-k", type=int, default=None, dest="top_k")
    p.add_argument(
        "--params",
        help="JSON object of mode parameters, e.g. '{\"bias_share\": 0.5}' for detailed",
    )
    p.add_argument(
        "--filter",
        help='JSON metadata filter, e.g. \'{"year": {"$gte": 2020}}\' (docs/guide/filters.md)',
    )
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
    add_wait_arg(p)
    p.add_argument("--json", action="store_true")
    add_backend_args(p)
    p.set_defaults(func=cmd_compact)

    p = sub.add_parser(
        "maintain",
        help="re-run over the whole graph what writes do locally: Leiden communities and the "
        "important entities (their elements and attributes are rewritten where they moved)",
    )
    p.add_argument("index")
    add_wait_arg(p)
    p.add_argument("--json", action="store_true")
    add_backend_args(p)
    p.set_defaults(func=cmd_maintain)
