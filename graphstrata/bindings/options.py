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


def add_threads_arg(p: argparse.ArgumentParser) -> None:
    """Add ``--threads N|default``: the process's thread budget
    (:mod:`graphstrata.bindings.threads`; default: env ``GRAPHSTRATA_THREADS``, else the CPU
    affinity).

    Parameters
    ----------
    p:
        The subcommand's parser.
    """
    p.add_argument(
        "--threads",
        type=_threads_value,
        default=None,
        metavar="N",
        help="cores the process's thread pools share (BLAS, Numba, ONNX Runtime, torch): a "
        "number, or 'default' to leave each library at its own (default: env "
        "GRAPHSTRATA_THREADS, else the CPU affinity)",
    )


def _threads_value(value: str) -> int | str:
    from graphstrata.bindings.threads import parse_override

    try:
        parsed = parse_override(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    if parsed is None:
        raise argparse.ArgumentTypeError("expected a number >= 1 or 'default'")
    return parsed
