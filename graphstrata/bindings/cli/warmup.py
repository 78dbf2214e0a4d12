"""``graphstrata warmup``: compile the engine's kernels and prepare the embedder now, so the
first query of every later process loads them instead (``graphstrata.bindings.warmup``).

The compiled kernels go to Numba's cache: next to the installed modules, Numba's per-user
cache when those are read-only, or ``NUMBA_CACHE_DIR`` when set (README, "Install without
torch, warm up once").
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from graphstrata.bindings.warmup import prepare_embedder, warmup


def cmd_warmup(args: argparse.Namespace) -> int:
    """Warm the kernels, then (unless ``--embedder none``) the embedder; print what it did."""
    quiet = args.json

    def progress(step: str, seconds: float) -> None:
        if not quiet:
            print(f"  {step}: {seconds:.1f}s", flush=True)

    report = warmup(progress)
    out = report.to_dict()
    if not quiet:
        print(report.summary(), flush=True)
    if args.embedder != "none":
        embedder = out["embedder"] = prepare_embedder(args.embedder)
        if "error" in embedder:
            # The kernels are warm all the same; the embedder's cause is one line.
            print(f"warmup: embedder not prepared: {embedder['error']}", file=sys.stderr)
        elif not quiet:
            where = f" on {embedder['device']}" if embedder["device"] else ""
            print(f"warmup: embedder {embedder['name']}{where} ready in {embedder['seconds']}s")
    if quiet:
        print(json.dumps(out, indent=1))
    return 0


def register(sub: Any) -> None:
    """Add ``warmup`` to the ``graphstrata`` subparsers.

    Parameters
    ----------
    sub:
        The ``add_subparsers()`` action of the main parser.
    """
    p = sub.add_parser(
        "warmup",
        help="compile and cache every kernel (and prepare the embedder) before the first query",
    )
    p.add_argument(
        "--embedder",
        default=None,
        help="embedder spec to prepare (default: the default embedder; 'none' to skip)",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON only")
    p.set_defaults(func=cmd_warmup)
