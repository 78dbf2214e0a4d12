"""``graphstrata eval``: retrieval quality of an index on a QA file.

    graphstrata eval INDEX QA.jsonl [--modes naive,bm25,collapsed,graph] [--budget 2000]
                     [--limit N] [--top-k K] [--answers] [--baseline MODE]
                     [--by-type/--no-by-type] [--json] [--out FILE]

Prints a Markdown table (or the JSON with ``--json``); ``--out FILE`` also writes the result:
JSON with every question's scores, or the table when FILE ends in ``.md``. The measures are
defined in :mod:`graphstrata.evaluation`. ``--answers`` also answers each question with the
index's LLM backend (``--llm``; extractive by default) and reports the containment of the gold
answer in the generated answer (``gen. answer (n)``). ``--baseline MODE`` adds each other
mode's difference to MODE with its paired bootstrap 95 % interval.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from graphstrata.bindings.cli.common import CLIError, open_index
from graphstrata.bindings.cli.progress import add_quiet_arg, progress_for
from graphstrata.bindings.options import add_backend_args


def cmd_eval(args: argparse.Namespace) -> int:
    """``graphstrata eval INDEX QA.jsonl``."""
    from graphstrata.bindings.api import QAError, load_qa

    if args.budget < 1:
        raise CLIError(f"--budget must be >= 1 token, got {args.budget}")
    if args.limit is not None and args.limit < 1:
        raise CLIError(f"--limit must be >= 1, got {args.limit}")
    try:
        items = load_qa(args.qa)
    except QAError as exc:
        raise CLIError(str(exc)) from exc
    index = open_index(args)
    progress = progress_for(args)
    modes = args.modes.split(",") if args.modes else list(index.modes)
    if args.baseline is not None and args.baseline not in modes:
        raise CLIError(f"--baseline {args.baseline!r} is not among the modes evaluated")
    try:
        result = index.evaluate(
            items,
            args.modes,
            args.budget,
            limit=args.limit,
            top_k=args.top_k,
            answers=args.answers,
            progress=progress,
            baseline=args.baseline,
        )
    finally:
        progress.close()
    if args.out:
        write_result(result, Path(args.out), by_type=args.by_type)
    if args.json:
        print(json.dumps(result.to_dict(), indent=1, ensure_ascii=False))
    else:
        print(result.table(by_type=args.by_type))
    return 0


def write_result(result: Any, path: Path, by_type: bool = True) -> None:
    """Write an ``EvalResult``: the table for ``.md`` files, else JSON with every question.

    Parameters
    ----------
    result:
        The ``EvalResult``.
    path:
        Where to write (parents are created).
    by_type:
        Add a row per question type to the table.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".md":
        path.write_text(result.table(by_type=by_type) + "\n", encoding="utf-8")
    else:
        text = json.dumps(result.to_dict(include_questions=True), indent=1, ensure_ascii=False)
        path.write_text(text + "\n", encoding="utf-8")


def register(sub: Any) -> None:
    """Add the ``eval`` subcommand.

    Parameters
    ----------
    sub:
        The ``add_subparsers()`` action of the main parser.
    """
    p = sub.add_parser(
        "eval",
        help="measure retrieval quality on a QA file (recall of documents, facts, answers)",
        description=(
            "Run every question of a QA JSONL file (id, question, answers, type, gold_doc_ids, "
            "gold_facts) through each search mode at a fixed token budget and report document "
            "recall, fact recall, evidence-token recall, answer containment, rank measures "
            "(Recall@k, MRR@10), tokens and latency."
        ),
    )
    p.add_argument("index")
    p.add_argument("qa", help="QA JSONL file")
    p.add_argument(
        "--modes",
        default=None,
        help="comma-separated modes (naive, bm25, hybrid, collapsed, detailed, summarized, graph); "
        "default: every mode the index serves",
    )
    p.add_argument("--budget", type=int, default=2000, help="retrieved-token budget (default 2000)")
    p.add_argument("--limit", type=int, default=None, help="evaluate the first N questions")
    p.add_argument("--top-k", type=int, default=None, dest="top_k", help="candidates per query")
    p.add_argument(
        "--answers",
        action="store_true",
        help="also answer each question with the index's LLM backend and report answer "
        "containment in the generated answer (yes/no and null questions are skipped)",
    )
    p.add_argument(
        "--baseline",
        default=None,
        help="a mode evaluated: the others get their difference to it with a paired "
        "bootstrap 95%% interval",
    )
    p.add_argument(
        "--by-type",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="add a row per question type (default on)",
    )
    p.add_argument("--out", help="also write the result: .md for the table, else JSON")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    add_quiet_arg(p)
    add_backend_args(p)
    p.set_defaults(func=cmd_eval)
