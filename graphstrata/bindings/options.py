"""Command-line options shared by ``graphstrata`` and the server's own entry point
(``python -m graphstrata.bindings.server``): the choice of backends.

Kept apart from the registry, which imports the backends, so that building a parser costs
nothing.
"""

from __future__ import annotations

import argparse


def add_backend_args(p: argparse.ArgumentParser) -> None:
    """Add ``--llm``, ``--embedder`` and ``--no-cache`` to a subcommand.

    Parameters
    ----------
    p:
        The subcommand's parser.
    """
    p.add_argument(
        "--llm",
        help="LLM backend spec (default: env GRAPHSTRATA_LLM, else the index's, else extractive)",
    )
    p.add_argument(
        "--embedder",
        help="embedder spec (default: env GRAPHSTRATA_EMBEDDER, else the index's, else "
        "minilm-onnx; an existing index only opens with an embedder compatible with its own)",
    )
    p.add_argument("--no-cache", action="store_true", help="bypass the LLM response cache")
