"""The distributed build on a real local Ray cluster (2 CPUs) equals a single-process build.

Each test builds the 30 sample documents with the extractive LLM and the hashing embedder
(or the fake OpenAI server on loopback), on one machine and through Ray, and compares
everything the index holds (``ray_cluster.assert_same_index``): documents and chunk texts,
every node (hierarchy segments and summaries, heterograph nodes), every edge, vectors within
1e-6, and the results of every search mode. Faults are real: an embedding actor's process
exits mid-stage; a driver process is SIGKILLed mid-insert; an LLM server fails half-way.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")
pytest.importorskip("ray.data")

from graphstrata.bindings.api import LLM_CACHE_FILE, Index
from graphstrata.bindings.cli import main
from graphstrata.bindings.distributed import RayOptions, build_index, insert
from graphstrata.engine.config import ConfigError
from graphstrata.engine.documents import DocumentError
from graphstrata.engine.store import Store
from tests.helpers import SAMPLE_DIR, SAMPLE_JSONL
from tests.helpers.fake_openai_server import FakeOpenAIServer
from tests.helpers.ray_cluster import (
    DIM,
    REPO,
    KillOnceEmbedder,
    assert_same_index,
    index_tables,
    ray_address,
    wait_for_cpus,
)

pytestmark = pytest.mark.integration
__all__ = ["ray_address"]  # the session fixture, imported for pytest

EMBEDDER = f"hashing:{DIM}"
DRIVER = Path(__file__).with_name("ray_insert_driver.py")


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The single-process build of the sample folder."""
    path = tmp_path_factory.mktemp("one") / "ix"
    index = Index.create(path, embedder=EMBEDDER, llm="extractive")
    index.insert_path(SAMPLE_DIR)
    return index_tables(path)


def test_ray_build_equals_single_process(ray_address: str, baseline, tmp_path: Path) -> None:
    seen: dict[str, int] = {}

    def progress(stage: str, done: int, total: int) -> None:
        seen[stage] = max(seen.get(stage, 0), done)

    result = build_index(
        SAMPLE_DIR,
        tmp_path / "ix",
        embedder=EMBEDDER,
        llm="extractive",
        options=RayOptions(actors=2),
        progress=progress,
    )
    assert_same_index(index_tables(tmp_path / "ix"), baseline)
    stages = result.stages
    assert stages["chunk"].rows == 30
    assert stages["embed"].rows == len(baseline["vector_ids"])
    assert {"llm:summarize", "llm:decompose", "llm:community"} <= set(stages)
    # Both builds decided ``attributes="auto"`` alike: off under the extractive LLM.
    assert "llm:attribute" not in stages
    # Rows per stage went through the progress callback, and into the report's notes.
    assert seen["embed rows"] > 0 and seen["chunk rows"] == 30
    assert any(n.startswith("ray embed:") for n in result.report.notes)
    assert wait_for_cpus(2.0) >= 2.0  # the pools were given back


def test_parquet_source_is_read_by_ray_tasks(ray_address: str, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open(SAMPLE_JSONL, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "docs.parquet")
    one = Index.create(tmp_path / "one", embedder=EMBEDDER, llm="extractive")
    one.insert_path(SAMPLE_JSONL)
    build_index(
        tmp_path / "docs.parquet",
        tmp_path / "ray",
        embedder=EMBEDDER,
        llm="extractive",
        options=RayOptions(actors=2),
    )
    assert_same_index(index_tables(tmp_path / "ray"), index_tables(tmp_path / "one"))


def test_an_embedding_actor_killed_mid_stage_is_retried(
    ray_address: str, baseline, tmp_path: Path
) -> None:
    marker = tmp_path / "killed"
    result = build_index(
        SAMPLE_DIR,
        tmp_path / "ix",
        embedder=functools.partial(KillOnceEmbedder, str(marker)),
        llm="extractive",
        # Small pieces: the dying actor has calls queued that Ray must resend.
        options=RayOptions(actors=2, embed_batch_rows=8),
    )
    assert marker.exists(), "no actor was killed: the test proved nothing"
    assert_same_index(index_tables(tmp_path / "ix"), baseline)
    assert result.stages["embed"].rows == len(baseline["vector_ids"])


def test_driver_killed_mid_insert_leaves_the_last_version(
    ray_address: str, sample_docs, tmp_path: Path
) -> None:
    path = tmp_path / "ix"
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    for file, docs in ((first, sample_docs[:15]), (second, sample_docs[15:])):
        file.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    build_index(first, path, embedder=EMBEDDER, llm="extractive", options=RayOptions(actors=2))
    marker = tmp_path / "embedding"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    driver = subprocess.Popen(
        [sys.executable, str(DRIVER), ray_address, str(path), str(second), str(marker)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), f"the driver never reached the embedding stage: {driver.poll()}"
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=30)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == -signal.SIGKILL
    # The killed driver's actors go with its job; the index is at version 1 and opens.
    assert wait_for_cpus(2.0) >= 2.0
    assert Store.open(path).manifest["version"] == 1
    reopened = Index.open(path, embedder=EMBEDDER)
    assert reopened.stats()["documents"] == 15
    assert reopened.query("Meridian Optics", mode="naive").nodes
    # The writer lock died with the driver: a rerun commits version 2 with every document.
    again = insert(path, second, options=RayOptions(actors=2))
    assert again.report.docs_added == 15
    assert Store.open(path).manifest["version"] == 2


def test_openai_backend_through_ray_resumes_from_the_cache(
    ray_address: str, tmp_path: Path, capsys
) -> None:
    with FakeOpenAIServer() as server:
        llm = f"openai:fake-model@{server.url}?max_concurrency=4&max_retries=0"
        common = ["--embedder", EMBEDDER, "--llm", llm, "--json"]
        assert main(["index", str(SAMPLE_JSONL), "--out", str(tmp_path / "one"), *common]) == 0
        total = server.seen.chat_requests
        assert total > 0
        # Through Ray, the server fails after half of the prompts: the build is discarded...
        server.reset()
        server.fail_after = total // 2
        out = tmp_path / "ray"
        args = ["index", str(SAMPLE_JSONL), "--out", str(out), *common, "--ray", ray_address]
        assert main(args) == 1
        assert "LLMError" in capsys.readouterr().err
        assert sorted(p.name for p in out.iterdir()) == [LLM_CACHE_FILE]
        # ...and the rerun pays only for the prompts the failed one had not been answered.
        server.reset()
        server.fail_after = None
        assert main(args) == 0
        report = json.loads(capsys.readouterr().out)
        assert 0 < server.seen.chat_requests < total
        assert report["llm_calls"] == server.seen.chat_requests and report["llm_cached"] > 0
    assert not server.overflowed
    assert_same_index(index_tables(out), index_tables(tmp_path / "one"))


def test_ray_insert_command_equals_plain_insert(
    ray_address: str, sample_docs, tmp_path: Path, capsys
) -> None:
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    for file, docs in ((first, sample_docs[:20]), (second, sample_docs[20:])):
        file.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    for name in ("one", "ray"):
        out = str(tmp_path / name)
        assert main(["index", str(first), "--out", out, "--embedder", EMBEDDER, "--json"]) == 0
    assert main(["insert", str(tmp_path / "one"), str(second), "--json"]) == 0
    capsys.readouterr()
    args = ["insert", str(tmp_path / "ray"), str(second), "--json", "--ray", ray_address]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["docs_added"] == 10
    assert_same_index(index_tables(tmp_path / "ray"), index_tables(tmp_path / "one"))


def test_without_ray_the_flag_fails_with_one_line(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from graphstrata.bindings.cli import main\n"
        f"sys.exit(main(['index', {str(SAMPLE_DIR)!r}, '--out', {str(tmp_path / 'ix')!r}, "
        "'--embedder', 'hashing', '--ray']))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'graphstrata[ray]'" in lines[0]
    assert not (tmp_path / "ix").exists()


def test_a_bad_spec_fails_with_its_own_error_and_writes_nothing(
    ray_address: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match="unknown embedder 'nope'"):
        build_index(SAMPLE_DIR, tmp_path / "ix", embedder="nope", options=RayOptions(actors=1))
    assert not (tmp_path / "ix").exists()
    assert wait_for_cpus(2.0) >= 2.0


def test_an_invalid_batch_is_rejected_whole_before_any_actor_starts(
    ray_address: str, sample_docs, tmp_path: Path
) -> None:
    source = tmp_path / "bad.jsonl"
    docs = [*sample_docs[:3], sample_docs[0], {"doc_id": "empty", "text": "  "}]
    source.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    with pytest.raises(DocumentError) as err:
        build_index(source, tmp_path / "ix", embedder=EMBEDDER, options=RayOptions(actors=1))
    assert len(err.value.problems) == 2  # the duplicate and the empty text, in one error
    assert not (tmp_path / "ix").exists()


def test_the_embedding_gpu_option_flows_to_the_actors_of_a_cpu_cluster(
    ray_address: str,
) -> None:
    from graphstrata.bindings.distributed import RaySession
    from graphstrata.bindings.distributed.backends import embedding_pool
    from graphstrata.bindings.distributed.workers import BackendSpec

    with RaySession(RayOptions(actors=1, embed_gpus_per_actor=1.0)) as session:
        assert session.cluster is not None and session.cluster.gpus == 0
        assert session.cluster.options.embed_gpus_per_actor == 1.0
        pool = embedding_pool(session.cluster, BackendSpec("embedder", EMBEDDER))
        try:
            # No GPU to give: the actor reserves its CPU share and runs one thread, as before.
            assert (pool.placement.num_gpus, pool.placement.threads) == (0.0, 1)
            assert pool.info["dim"] > 0
        finally:
            pool.close()
    assert wait_for_cpus(2.0) >= 2.0
