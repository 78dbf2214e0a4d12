"""``graphstrata mcp INDEX``: the MCP tools over stdio, for a client that starts the server
as its own subprocess (Claude Desktop, an IDE, the SDK's ``stdio_client``).

The index is opened in this process and written directly (no service, no token: whoever can
start the process can read the index's files); ``--read-only`` leaves the write tools out.
"""

from __future__ import annotations

import anyio

from graphstrata.bindings.api import Index
from graphstrata.bindings.mcp.backend import LocalBackend
from graphstrata.bindings.mcp.tools import build_server


def serve_stdio(index: Index, read_only: bool = False) -> None:
    """Serve the MCP tools over ``index`` on stdin/stdout until the client closes them.

    Parameters
    ----------
    index:
        The open index.
    read_only:
        Offer no write tools.

    Raises
    ------
    MissingExtraError
        When the ``mcp`` package is not installed.
    """
    server = build_server(LocalBackend(index, read_only=read_only))
    anyio.run(server.run_stdio_async)
