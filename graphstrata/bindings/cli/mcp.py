"""``graphstrata mcp INDEX [--read-only]``: the MCP tools over stdio (:mod:`graphstrata.bindings.mcp`).

Nothing but the protocol may reach stdout; the report and progress lines of the other
commands are not printed, errors go to stderr.
"""

from __future__ import annotations

import argparse
from typing import Any

from graphstrata.bindings.cli.common import open_index
from graphstrata.bindings.extras import require
from graphstrata.bindings.options import add_backend_args


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the index's MCP tools on stdin/stdout until the client hangs up."""
    require("mcp", "mcp", "graphstrata mcp")  # before the index is opened: the hint comes first
    from graphstrata.bindings.mcp.stdio import serve_stdio

    index = open_index(args)
    try:
        serve_stdio(index, read_only=args.read_only)
    finally:
        index.close()
    return 0


def register(sub: Any) -> None:
    """Add ``mcp`` to the command line.

    Parameters
    ----------
    sub:
        The ``add_subparsers()`` action of the main parser.
    """
    p = sub.add_parser(
        "mcp",
        help="serve the index's MCP tools over stdio (for Claude Desktop and other MCP clients)",
        description=(
            "Run an MCP server on stdin/stdout with the tools search, answer, list_documents, "
            "get_document, insert_documents, delete_document, list_indexes and stats. "
            "Writes go directly into the index unless --read-only."
        ),
    )
    p.add_argument("index", help="the index directory")
    p.add_argument("--read-only", action="store_true", help="offer no write tools (insert, delete)")
    add_backend_args(p)
    p.set_defaults(func=cmd_mcp)
