"""The live-writer registry of an index directory (``engine/store/lock.py``, issue 51 #6)."""

from __future__ import annotations

import os
import subprocess
import sys

from graphstrata.engine.store.lock import LIVE_WRITERS, held_lock, live_writer, live_writers


def test_a_registration_lasts_while_its_block_runs(tmp_path):
    assert live_writers(tmp_path) == []
    with live_writer(tmp_path, "graphstrata serve"):
        (found,) = live_writers(tmp_path)
        assert found.pid == os.getpid() and found.command == "graphstrata serve"
        assert f"pid {os.getpid()} (graphstrata serve)" == str(found)
    assert live_writers(tmp_path) == []
    assert list((tmp_path / LIVE_WRITERS).iterdir()) == []


def test_a_dead_process_registration_is_swept(tmp_path):
    code = (
        "import os, sys; from pathlib import Path; "
        "from graphstrata.engine.store.lock import live_writer; "
        f"cm = live_writer(Path({str(tmp_path)!r}), 'killed server'); cm.__enter__(); "
        "os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert len(list((tmp_path / LIVE_WRITERS).iterdir())) == 1  # left behind by the dead one
    assert live_writers(tmp_path) == []
    assert list((tmp_path / LIVE_WRITERS).iterdir()) == []


def test_registering_keeps_what_a_dead_writer_left_in_the_lock(tmp_path):
    (tmp_path / "LOCK").write_text("12345")  # a writer died holding it
    with live_writer(tmp_path, "graphstrata serve"):
        assert (tmp_path / "LOCK").read_text() == "12345"
    with held_lock(tmp_path) as lock:
        assert lock.left == "12345"  # the next writer still sweeps
