"""The ``graphstrata`` parser and entry point: every subcommand module, imported plainly."""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import signal
import sys
from collections.abc import Callable

from graphstrata.bindings.cli.answer import register as register_answer
from graphstrata.bindings.cli.build import add_ray_args
from graphstrata.bindings.cli.check import register as register_check
from graphstrata.bindings.cli.commands import register as register_index_commands
from graphstrata.bindings.cli.evaluate import register as register_eval
from graphstrata.bindings.cli.mcp import register as register_mcp
from graphstrata.bindings.cli.prompts import register as register_prompts
from graphstrata.bindings.cli.serve import register as register_serve
from graphstrata.bindings.cli.warmup import register as register_warmup
from graphstrata.bindings.extras import MissingExtraError
from graphstrata.bindings.options import add_threads_arg

#: The thread role of each command that runs kernels or models
#: (:mod:`graphstrata.bindings.threads`); ``serve`` applies the ``server`` role itself, when
#: its app is created.
THREAD_ROLES = {
    "index": "build",
    "insert": "build",
    "delete": "build",
    "compact": "build",
    "maintain": "build",
    "query": "query",
    "answer": "query",
    "eval": "query",
    "mcp": "query",
}


def build_parser() -> argparse.ArgumentParser:
    """The ``graphstrata`` argument parser with every subcommand.

    Returns
    -------
    argparse.ArgumentParser
        Parsed arguments carry the command's function as ``func``.
    """
    parser = argparse.ArgumentParser(
        prog="graphstrata", description="Incremental graph retrieval for growing corpora"
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True)
    register_index_commands(sub)
    add_ray_args(sub)
    register_eval(sub)
    register_serve(sub)
    register_answer(sub)
    register_check(sub)
    register_mcp(sub)
    register_prompts(sub)
    for name, role in THREAD_ROLES.items():
        add_threads_arg(sub.choices[name])
        sub.choices[name].set_defaults(thread_role=role)
    register_warmup(sub)
    return parser


def _version() -> str:
    from graphstrata import __version__

    return f"graphstrata {__version__}"


def main(argv: list[str] | None = None) -> int:
    """Run one ``graphstrata`` command.

    Parameters
    ----------
    argv:
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0, 1 with a one-line cause on stderr for any failure
        (``GRAPHSTRATA_DEBUG=1`` raises instead, with the traceback), 130 when interrupted,
        141 (128 + SIGPIPE, as a shell reports a Unix tool killed by it) without a word when
        the reader of stdout went away (``graphstrata stats IX | head -1``).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        role = getattr(args, "thread_role", None)
        if role is not None:
            from graphstrata.bindings.threads import apply as apply_threads

            apply_threads(role, args.threads)
        status = func(args)
        sys.stdout.flush()
        return status
    except BrokenPipeError as exc:
        if not _stdout_closed():  # another pipe (a socket, a subprocess): a real failure
            if os.environ.get("GRAPHSTRATA_DEBUG") == "1":
                raise
            return _fail(args, exc)
        _discard_stdout()
        return 128 + signal.SIGPIPE
    except KeyboardInterrupt:
        _flush_quietly()
        print(
            "graphstrata: interrupted; the index stays at its last committed version",
            file=sys.stderr,
        )
        return 130
    except Exception as exc:
        if os.environ.get("GRAPHSTRATA_DEBUG") == "1":
            raise
        return _fail(args, exc)


def _fail(args: argparse.Namespace, exc: BaseException) -> int:
    """Print the one-line cause of a failure (with the notes added on the way); exit status 1."""
    _flush_quietly()
    if isinstance(exc, MissingExtraError):  # its line says all: what needs which extra
        print(exc, file=sys.stderr)
        return 1
    notes = [str(n) for n in getattr(exc, "__notes__", [])]
    message = " ".join("; ".join([str(exc), *notes]).split()) or type(exc).__name__
    print(f"graphstrata {args.command}: error: {type(exc).__name__}: {message}", file=sys.stderr)
    return 1


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (so a ``BrokenPipeError`` was ours)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        events = poller.poll(0)
    except (OSError, ValueError, AttributeError):
        return True  # cannot tell (no poll, no file descriptor): take it for stdout's
    return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in events)


def _flush_quietly() -> None:
    """Flush what a failed command printed; a reader that went away is not a second error."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
    except (OSError, ValueError):
        pass


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so flushing it at exit does not raise again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
