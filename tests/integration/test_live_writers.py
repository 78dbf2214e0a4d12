"""Writers that see each other (issue 51, #6 and #7), with a real server, the real CLI and
real files.

* #6: ``graphstrata index SRC --out IX --force`` while ``graphstrata serve IX`` accepts inserts
  swapped the index out from under the server: the inserts it had acknowledged were lost and
  the version its clients saw went back. A rebuild now refuses while a server is registered
  as a live writer (naming its pid and command), and refuses its swap when another writer
  committed while it built.
* #7: a server never noticed versions committed by other processes (``graphstrata insert``
  beside it). It now polls the manifest (``--refresh-interval``) and never goes back.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import httpx
import pytest

from benchmarks.service.server_process import ServerHandle, server_process
from tests.helpers import REPO
from tests.helpers.cli import run

pytestmark = pytest.mark.integration

CITY = REPO / "examples" / "sample" / "city"
FAST = ("--no-heterograph",)
ENV = {"GRAPHSTRATA_EMBEDDER": "hashing:64", "PYTHONPATH": str(REPO)}


def _client(handle: ServerHandle) -> httpx.Client:
    return httpx.Client(base_url=handle.url, timeout=60, trust_env=False)


def _docs(prefix: str, n: int) -> list[dict[str, str]]:
    return [
        {"doc_id": f"{prefix}-{i}", "text": f"Quartzite ferry {prefix} number {i} leaves Brekkvik."}
        for i in range(n)
    ]


def _insert(c: httpx.Client, docs: list[dict[str, str]]) -> dict:
    resp = c.post("/v1/documents", json=docs)
    assert resp.status_code == 202, resp.text
    op_id = resp.json()["id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        op = c.get(f"/v1/operations/{op_id}").json()
        if op["status"] in ("succeeded", "failed", "cancelled"):
            assert op["status"] == "succeeded", op
            return op
        time.sleep(0.05)
    raise AssertionError("the insert did not finish")


def _served(c: httpx.Client) -> dict:
    return c.get("/v1/stats").json()["index"]


@pytest.fixture
def index(tmp_path) -> Path:
    out = tmp_path / "ix"
    run("index", str(CITY), "--out", str(out), *FAST)
    return out


def test_index_force_refuses_while_a_server_writes_and_loses_no_acknowledged_insert(index):
    with server_process(index, env=ENV) as handle, _client(handle) as c:
        for batch in range(3):
            _insert(c, _docs(f"acked{batch}", 5))
        before = _served(c)
        proc = run("index", str(CITY), "--out", str(index), "--force", *FAST, check=False)
        assert proc.returncode == 1, proc.stderr
        line = proc.stderr.strip()
        assert len(line.splitlines()) == 1, proc.stderr
        assert f"pid {handle.proc.pid}" in line and "graphstrata serve" in line, line
        # The server goes on where it was: every acknowledged insert is there, no version lost.
        after = _served(c)
        assert after["version"] == before["version"] and after["documents"] == 7 + 15
        for batch in range(3):
            status = c.get(f"/v1/documents/acked{batch}-4").json()
            assert status["present"], status
        _insert(c, _docs("later", 1))
        assert _served(c)["version"] == before["version"] + 1
    # Once the server stopped, its registration is gone and the rebuild goes through.
    run("index", str(CITY), "--out", str(index), "--force", *FAST)
    assert json.loads(run("stats", str(index), "--json").stdout)["documents"] == 7


def test_rebuild_refuses_its_swap_when_another_writer_committed_meanwhile(index, tmp_path):
    from graphstrata.bindings.api import Index, IndexLockedError
    from graphstrata.bindings.rebuild import rebuild
    from graphstrata.engine import IndexConfig, read_documents

    def insert_and_race(new: Index, docs: list) -> object:
        report = new.insert(docs)
        # `graphstrata insert` commits to the old index while the rebuild builds.
        run("insert", str(index), str(_new_doc(tmp_path)))
        return report

    v0 = json.loads(run("stats", str(index), "--json").stdout)["version"]
    cfg = IndexConfig()
    with pytest.raises(IndexLockedError, match="while the rebuild ran"):
        rebuild(
            index,
            CITY,
            cfg,
            force=True,
            prepare=lambda: list(read_documents(CITY)),
            create=lambda stage: Index.create(stage, cfg, embedder="hashing:64"),
            insert=insert_and_race,
        )
    stats = json.loads(run("stats", str(index), "--json").stdout)
    assert stats["version"] == v0 + 1  # the racing writer's commit is kept
    assert not [p for p in index.parent.iterdir() if p.name.startswith(".ix.")]


def test_a_server_serves_versions_committed_by_the_cli(index, tmp_path):
    extra = tmp_path / "extra.jsonl"
    # The default settings: the manifest is polled every second.
    with server_process(index, env=ENV) as handle, _client(handle) as c:
        served = _served(c)["version"]
        for round_ in range(3):  # three commits: each round changes the texts
            docs = [{**d, "text": f"{d['text']} Round {round_}."} for d in _docs("cli", 3)]
            extra.write_text("".join(json.dumps(d) + "\n" for d in docs))
            run("insert", str(index), str(extra))
        on_disk = json.loads(run("stats", str(index), "--json").stdout)["version"]
        assert on_disk == served + 3
        deadline = time.monotonic() + 15  # 1 s polling, plus loading on two shared cores
        while _served(c)["version"] != on_disk and time.monotonic() < deadline:
            time.sleep(0.1)
        now = _served(c)
        assert now["version"] == on_disk and now["documents"] == 7 + 3
        assert c.get("/v1/documents/cli-2").json()["present"]
        # A write through the server goes on top of the CLI's commits.
        op = _insert(c, _docs("srv", 1))
        assert op["report"]["version"] == on_disk + 1
    # Polling can be turned off (0): the server then moves only with its own writes.
    with (
        server_process(index, ["--refresh-interval", "0"], env=ENV) as handle,
        _client(handle) as c,
    ):
        served = _served(c)["version"]
        run("insert", str(index), str(_new_doc(tmp_path)))
        time.sleep(2)
        assert _served(c)["version"] == served


def test_refresh_never_goes_back_to_an_older_version(index, tmp_path):
    from graphstrata.bindings.api import Index

    older = tmp_path / "older"
    shutil.copytree(index, older)
    run("insert", str(index), str(_new_doc(tmp_path)))
    served = Index.open(index, embedder="hashing:64")
    try:
        newest = served.version
        # The index is replaced by an older copy (by hand, or a server on another machine).
        os.rename(index, tmp_path / "moved")
        os.rename(older, index)
        assert served.refresh() is False
        assert served.version == newest
    finally:
        served.close()


def _new_doc(folder: Path) -> Path:
    path = folder / "harbour.md"
    path.write_text("# Harbour\n\nThe quartzite harbour of Brekkvik moors zeppelins.\n")
    return path
