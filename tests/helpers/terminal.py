"""The ``graphstrata`` command line on a pseudo-terminal (what a user sees on a terminal)."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time

from tests.helpers import REPO


def run_on_terminal(
    *args: str, stdout_pipe: bool = False, timeout: float = 300.0
) -> tuple[int, str, str]:
    """``graphstrata ARGS...`` (the hashing embedder) with stderr, and stdout unless
    ``stdout_pipe``, on a new pseudo-terminal of 120 columns.

    Returns
    -------
    tuple
        ``(exit status, what the terminal received, stdout when piped else "")``.
    """
    env = dict(os.environ, PYTHONPATH=str(REPO), GRAPHSTRATA_EMBEDDER="hashing:64")
    env.pop("GRAPHSTRATA_PROGRESS", None)
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "graphstrata.bindings.cli", *args],
        stdin=slave,
        stdout=subprocess.PIPE if stdout_pipe else slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    received = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: every writer closed the terminal
                    break
                if not data:
                    break
                received += data
            elif proc.poll() is not None:
                break
        out = proc.stdout.read().decode() if proc.stdout is not None else ""
        status = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return status, received.decode(errors="replace"), out
