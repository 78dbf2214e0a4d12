"""The real server in a subprocess on a free loopback port (tests and service benchmarks).

:func:`server_process` starts ``python -m graphstrata.bindings.server INDEX --port 0``, waits
for the line that says where it listens, and stops it on exit with SIGTERM (graceful; the
server prints its report) or, if it lingers, SIGKILL. Nothing here imports the server: the
client side needs neither FastAPI nor the index.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

#: What ``graphstrata serve`` prints before its URL once the socket listens (its
#: ``graphstrata.bindings.server.command.LISTENING``). Spelled here, not imported: importing the
#: command line would load the engine (Numba, Arrow) into every load generator.
LISTENING = "listening on "


class ServerStartError(RuntimeError):
    """The server process exited or stayed silent instead of listening."""


@dataclass
class ServerHandle:
    """A server started by :func:`server_process`; ``output`` is filled when it stops."""

    url: str
    proc: subprocess.Popen[str]
    output: str = ""


@contextlib.contextmanager
def server_process(
    index: str | Path,
    extra_args: Sequence[str] = (),
    *,
    env: dict[str, str] | None = None,
    startup_timeout: float = 120.0,
) -> Iterator[ServerHandle]:
    """Start ``graphstrata serve INDEX --port 0`` on loopback in a subprocess.

    Parameters
    ----------
    index:
        The index to serve.
    extra_args:
        More ``graphstrata serve`` options.
    env:
        Environment variables added to this process's for the server.
    startup_timeout:
        Seconds to wait for the server to listen.

    Yields
    ------
    ServerHandle
        ``url`` is where it listens; ``output`` (everything it printed) is set on exit.

    Raises
    ------
    ServerStartError
        When the server does not start.
    """
    cmd = [
        sys.executable,
        "-m",
        "graphstrata.bindings.server",
        str(index),
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        *extra_args,
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    handle = ServerHandle(url="", proc=proc)
    try:
        handle.url = _wait_listening(proc, startup_timeout)
        yield handle
    finally:
        handle.output = stop_process(proc)


def _wait_listening(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    while time.monotonic() < deadline:
        if not sel.select(timeout=0.5):
            if proc.poll() is not None:
                break
            continue
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line.rstrip())
        if LISTENING in line:
            return line.split(LISTENING, 1)[1].split()[0]
    stop_process(proc)
    raise ServerStartError("the server did not start: " + " | ".join(seen[-5:]))


def stop_process(proc: subprocess.Popen[str], timeout: float = 30.0) -> str:
    """SIGTERM (graceful), wait, SIGKILL if needed; return what the process printed.

    SIGTERM rather than SIGINT: a process started from a non-interactive background job
    inherits an ignored SIGINT until uvicorn installs its handlers.

    Parameters
    ----------
    proc:
        The process (started with ``stdout=PIPE, text=True``).
    timeout:
        Seconds to wait after SIGTERM before SIGKILL.

    Returns
    -------
    str
        What the process printed and was not read yet.
    """
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ""
