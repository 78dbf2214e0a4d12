"""The ``graphstrata`` command line.

Every command shares one config loader (``--config``, ``--llm``, ``--embedder`` and the
``GRAPHSTRATA_*`` environment variables), prints a report after every operation (``--json``
for machines), shows progress on long work, and exits non-zero with a one-line cause.

Modules: :mod:`.common` (what the subcommands share), :mod:`.commands` (index, insert, delete,
query, stats, compact), :mod:`.build` (how ``index`` builds beside ``--out`` and swaps the new
index in, so a failed or careless build loses nothing), :mod:`.evaluate` (eval), :mod:`.serve`
(serve) and :mod:`.main` (the parser, which imports each of them; it also exits
quietly when the reader of stdout goes away, as in ``graphstrata stats IX | head -1``).
"""

import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from graphstrata.bindings.cli.common import CLIError
from graphstrata.bindings.cli.main import build_parser, main

__all__ = ["CLIError", "build_parser", "main"]
