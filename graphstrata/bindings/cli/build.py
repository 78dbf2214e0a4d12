"""``graphstrata index`` and the ``--ray`` flag of ``index`` and ``insert``.

``graphstrata index SOURCE --out NAME [--force]`` is :meth:`Index.rebuild
<graphstrata.bindings.api.Index.rebuild>`: the source is read and validated before anything
changes, the new index is built beside ``NAME`` and swapped in once committed, and a failure
leaves ``NAME`` as it was (:mod:`graphstrata.bindings.rebuild` has the whole contract).

``--ray [ADDRESS]`` changes only where the model work runs: the source is read, validated and
chunked by Ray tasks and the embedding and LLM batches go to the cluster
(:mod:`graphstrata.bindings.distributed`); the checks, the build beside ``NAME``, the swap and
the LLM cache are the same. ``insert`` takes the flag too (:func:`insert_with_ray`).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphstrata.bindings.cli.common import CLIError
from graphstrata.bindings.cli.progress import progress_for

if TYPE_CHECKING:
    from graphstrata.bindings.api import IndexConfig
    from graphstrata.bindings.distributed import RaySession
    from graphstrata.bindings.distributed.cluster import RayOptions


def build_index(args: argparse.Namespace, cfg: IndexConfig) -> dict[str, Any]:
    """Build the index of ``args.source`` at ``args.out`` with :meth:`Index.rebuild`.

    Parameters
    ----------
    args:
        ``index`` arguments: ``source``, ``out``, ``force``, ``json``, ``embedder``, ``llm``,
        ``no_cache``, and ``ray`` / ``ray_actors`` (:func:`add_ray_args`; absent: one machine).
    cfg:
        The validated config of the new index.

    Returns
    -------
    dict
        The insert's report (``OperationReport.to_dict()``).
    """
    from graphstrata.bindings.api import Index

    progress = progress_for(args)
    try:
        report = Index.rebuild(
            Path(args.out),
            args.source,
            cfg,
            force=args.force,
            embedder=args.embedder,
            llm=args.llm,
            use_cache=not args.no_cache,
            progress=progress,
            ray=_ray_session(args),
            on_recover=lambda line: print(f"graphstrata index: {line}", file=sys.stderr),
        )
    finally:
        progress.close()
    return report.to_dict()


# ------------------------------------------------------------------------ --ray
def add_ray_args(sub: Any) -> None:
    """Add ``--ray [ADDRESS]`` and ``--ray-actors`` to ``index`` and ``insert``.

    With ``--ray`` the command runs its model work on a Ray cluster
    (:mod:`graphstrata.bindings.distributed`); everything else (the checks of ``--out``, the
    build beside it and the swap, the LLM cache) is the command's own. ``insert`` is routed
    to :func:`insert_with_ray` when the flag is given.

    Parameters
    ----------
    sub:
        The ``add_subparsers()`` action, after the index commands were registered.
    """
    for name in ("index", "insert"):
        p = sub.choices[name]
        p.add_argument(
            "--ray",
            nargs="?",
            const="",
            default=None,
            metavar="ADDRESS",
            help="run embedding and LLM batches on a Ray cluster (extra `ray`): ADDRESS of "
            "the head (auto, HOST:6379, ray://HOST:10001); alone, RAY_ADDRESS or a local "
            "cluster. Put it after the positional arguments",
        )
        p.add_argument(
            "--ray-actors",
            type=int,
            dest="ray_actors",
            help="actors per model pool (default: the cluster's GPUs, else its CPUs)",
        )
        p.add_argument(
            "--ray-embed-gpus",
            type=float,
            dest="ray_embed_gpus",
            metavar="GPUS",
            help="GPUs per embedding actor on a cluster with GPUs (default: a whole GPU, or "
            "0.1 beside vLLM actors that take every GPU)",
        )
    insert = sub.choices["insert"]
    insert.set_defaults(func=functools.partial(_insert_command, insert.get_default("func")))


def _ray_options(args: argparse.Namespace) -> RayOptions:
    from graphstrata.bindings.distributed import RayOptions

    try:
        return RayOptions(
            address=args.ray or None,
            actors=getattr(args, "ray_actors", None),
            embed_gpus_per_actor=getattr(args, "ray_embed_gpus", None),
        )
    except ValueError as exc:
        raise CLIError(f"--ray-actors/--ray-embed-gpus: {exc}") from exc


def _ray_session(args: argparse.Namespace) -> RaySession | None:
    """The ``--ray`` cluster session of this command (not entered yet), or None without it."""
    if getattr(args, "ray", None) is None:
        return None
    from graphstrata.bindings.distributed import RaySession

    return RaySession(_ray_options(args))


def _insert_command(plain: Any, args: argparse.Namespace) -> int:
    if getattr(args, "ray", None) is None:
        return int(plain(args))
    return insert_with_ray(args)


def insert_with_ray(args: argparse.Namespace) -> int:
    """``graphstrata insert INDEX SOURCE --ray [ADDRESS]``: the insert on a Ray cluster.

    Parameters
    ----------
    args:
        ``insert`` arguments with ``ray`` set.

    Returns
    -------
    int
        0 (failures raise; the index stays at its last committed version).
    """
    from graphstrata.bindings.cli.reports import print_report
    from graphstrata.bindings.distributed.build import index_config

    progress = progress_for(args)
    try:
        with contextlib.ExitStack() as stack:
            session = _ray_session(args)
            assert session is not None
            stack.enter_context(session)
            session.meter.progress = progress
            prepared = session.prepare(args.source, index_config(args.index))
            index = session.open(
                args.index, embedder=args.embedder, llm=args.llm, use_cache=not args.no_cache
            )
            result = session.insert(index, prepared, progress)
    finally:
        progress.close()
    print_report(result.report.to_dict(), args.json)
    return 0
