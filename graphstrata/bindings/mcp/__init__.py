"""MCP (Model Context Protocol) server of graphstrata, on the official ``mcp`` SDK (extra
``mcp``).

- :mod:`.tools`: the tools (search, answer, documents, writes, indexes, stats), one
  ``MCPServer`` over a backend;
- :mod:`.backend`: the backend contract and :class:`~.backend.LocalBackend` (an ``Index``
  opened in the process);
- :mod:`.stdio`: ``graphstrata mcp INDEX [--read-only]``.

The HTTP service serves the same tools at ``/mcp`` (``graphstrata/bindings/server/mcp.py``,
with its tokens and writer). Decision 0027 records the transport and auth choices.
"""
