"""``graphstrata check INDEX``: verify the SHA-256 of every file of an index.

Opening an index checks the manifest's own checksum and every file's size, not the bytes
of every file (docs/architecture.md, "Store"); this command hashes them all. Exit 0 when
every file is intact, 1 with one line per bad file on stdout otherwise.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def cmd_check(args: argparse.Namespace) -> int:
    """Verify the files of the current version (``--all-versions``: every kept version).

    Returns
    -------
    int
        0 when every file is intact, 1 otherwise.
    """
    from graphstrata.bindings.api import Index

    version, result = Index.verify_files(args.index, all_versions=args.all_versions)
    scope = "every kept version" if args.all_versions else f"version {version}"
    for bad in result.problems:
        print(f"{bad.file}: {bad.what} {bad.problem}")
    if result.ok:
        print(f"ok: {result.files} files of {scope} match their checksums")
        return 0
    print(
        f"graphstrata check: {len(result.problems)} bad file(s) of {result.files} in {scope} "
        f"of {args.index}",
        file=sys.stderr,
    )
    return 1


def register(sub: Any) -> None:
    """Add ``check`` to the ``graphstrata`` subparsers.

    Parameters
    ----------
    sub:
        The ``add_subparsers()`` action of the main parser.
    """
    p = sub.add_parser(
        "check", help="verify the SHA-256 of every file of an index (exit 1 on a bad file)"
    )
    p.add_argument("index")
    p.add_argument(
        "--all-versions",
        action="store_true",
        dest="all_versions",
        help="also every version kept since the last compact",
    )
    p.set_defaults(func=cmd_check)
