"""``graphstrata mcp INDEX``: the MCP tools over stdio, for a client that starts the server
as its own subprocess (Claude Desktop, an IDE, the SDK's ``stdio_client``).

The index is opened in this process and written directly (no service, no token: whoever can
start the process can read the index's files), the process registered as a live writer of
it meanwhile; ``--read-only`` leaves the write tools out. Reads follow the versions other
processes commit (:class:`~.backend.LocalBackend`).
"""

from __future__ import annotations

import contextlib
import logging

import anyio

from graphstrata.bindings.api import Index, IndexLockedError
from graphstrata.bindings.mcp.backend import LocalBackend
from graphstrata.bindings.mcp.tools import build_server

log = logging.getLogger(__name__)


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
    with contextlib.ExitStack() as registered:
        if not read_only:
            # While it may write, a rebuild (graphstrata index --force) must not swap the
            # directory away under it: the writes it acknowledged would be lost.
            try:
                registered.enter_context(index.live_writer("graphstrata mcp"))
            except (OSError, IndexLockedError) as exc:
                log.warning("%s: not registered as a live writer (%s)", index.path, exc)
        anyio.run(server.run_stdio_async)
