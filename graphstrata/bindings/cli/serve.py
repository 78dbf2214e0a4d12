"""``graphstrata serve``.

``serve INDEX`` runs the HTTP service: its arguments and its command are the server's own
(:mod:`graphstrata.bindings.server.command`), which prints one line with its URL once it
listens and a report when it stops. The service under load is measured by the benchmarks
(``python -m benchmarks.service.serve_load INDEX``), not by the package.
"""

from __future__ import annotations

from typing import Any

from graphstrata.bindings.server.command import add_arguments


def register(sub: Any) -> None:
    """Add ``serve`` to the command line.

    Parameters
    ----------
    sub:
        The ``add_subparsers()`` action of the main parser.
    """
    add_arguments(sub.add_parser("serve", help="run the HTTP service over one or several indexes"))
