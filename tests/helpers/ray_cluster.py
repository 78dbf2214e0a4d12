"""One local Ray cluster for the whole test run, and what the Ray tests build on the cluster.

Test modules import the fixture (``from tests.helpers.ray_cluster import ray_address``).
The cluster is real: ``ray.init(num_cpus=2, include_dashboard=False)``, its workers separate
processes that import this module (the repository goes on their ``PYTHONPATH``) to build the
embedders below.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphstrata.bindings.embed.models import HashingEmbedder

REPO = Path(__file__).resolve().parents[2]
DIM = 64
QUESTIONS = (
    "Which instruments did the Halvorsen Observatory build with Meridian Optics?",
    "Who founded the observatory?",
    "What happened in 1962?",
)


@pytest.fixture(scope="session")
def ray_address() -> Iterator[str]:
    """Start the test run's cluster once; yield its address (for subprocess drivers)."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    saved = os.environ.get("PYTHONPATH")
    # Workers are processes of the raylet this call starts: they inherit this environment.
    os.environ["PYTHONPATH"] = str(REPO) + (os.pathsep + saved if saved else "")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def wait_for_cpus(cpus: float, timeout: float = 30.0) -> float:
    """Wait until the cluster has ``cpus`` CPUs free again; return what is free at the end."""
    import ray

    deadline = time.monotonic() + timeout
    free = 0.0
    while time.monotonic() < deadline:
        free = float(ray.available_resources().get("CPU", 0.0))
        if free >= cpus:
            break
        time.sleep(0.2)
    return free


class KillOnceEmbedder:
    """The hashing embedder, whose actor kills itself (``os._exit``) on its second call once.

    The marker file makes it once per test, across the actor's restarts: the restarted actor
    finds the marker and embeds normally.
    """

    def __init__(self, marker: str, dim: int = DIM):
        self.inner = HashingEmbedder(dim)
        self.marker = marker
        self.calls = 0

    name = property(lambda self: self.inner.name)
    dim = property(lambda self: self.inner.dim)
    max_input_tokens = property(lambda self: self.inner.max_input_tokens)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == 2:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                os._exit(1)  # the actor's process dies mid-stage, pieces still queued on it
        return self.inner.embed(texts)


class SlowEmbedder:
    """The hashing embedder that marks a file when it first works, then takes ``delay`` per call."""

    def __init__(self, marker: str, delay: float, dim: int = DIM):
        self.inner = HashingEmbedder(dim)
        self.marker = marker
        self.delay = delay

    name = property(lambda self: self.inner.name)
    dim = property(lambda self: self.inner.dim)
    max_input_tokens = property(lambda self: self.inner.max_input_tokens)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        Path(self.marker).touch()
        time.sleep(self.delay)
        return self.inner.embed(texts)


def index_tables(path: Path, embedder: Any = None) -> dict[str, Any]:
    """Everything two builds must agree on, read from the committed index at ``path``.

    ``embedder``: the spec or object the queries are embedded with (default: hashing, DIM).
    """
    from graphstrata.bindings.api import Index

    emb = HashingEmbedder(DIM) if embedder is None else embedder
    index = Index.open(path, embedder=emb, llm="extractive")
    snap = index.engine.state.snapshot
    nodes = snap.nodes.table.drop_columns(["version"]).to_pydict()
    docs = snap.docs.drop_columns(["version"]).to_pydict()
    edges = snap.edges.to_pandas().sort_values(["src", "dst", "kind"]).reset_index(drop=True)
    ids = np.sort(snap.vectors.ids)
    queries = {
        mode: [
            [(h.kind, h.layer, h.text, round(h.score, 6), tuple(h.docs)) for h in r.nodes]
            for r in index.query_batch(list(QUESTIONS), mode=mode, budget_tokens=400)
        ]
        for mode in index.modes
    }
    return {
        "nodes": nodes,
        "docs": docs,
        "edges": edges,
        "vector_ids": ids,
        "vectors": snap.vectors.get(ids),
        "state": {
            **snap.state_arrays,
            **{f"{k} ids": v[0] for k, v in snap.node_state_arrays.items()},
            **{f"{k} values": v[1] for k, v in snap.node_state_arrays.items()},
        },
        # Where and when differ between two builds of the same index; what they hold may not.
        "stats": {
            k: v
            for k, v in index.stats().items()
            if k not in ("path", "size_bytes", "committed_at", "versions")
        },
        "queries": queries,
    }


def assert_same_index(got: dict[str, Any], want: dict[str, Any], queries: bool = True) -> None:
    """Same documents, chunks, nodes (hierarchy summaries included), edges, vectors, component
    state (Leiden, K-means, ...) and, with ``queries``, the same results in every mode.

    The results depend on one more thing than the committed tables: the usearch cache of the
    vectors, whose HNSW graph usearch builds with all cores, in an order that varies from run
    to run. On the sample corpus the graphs are small enough to give the same results; on
    hundreds of documents two single-process builds can already differ in ``graph`` mode
    (``benchmarks/results/distributed.md``), so the benchmark compares results separately.
    """
    assert got["docs"] == want["docs"]
    assert got["nodes"] == want["nodes"]
    assert got["stats"] == want["stats"]
    edges, base = got["edges"], want["edges"]
    assert edges[["src", "dst", "kind"]].equals(base[["src", "dst", "kind"]])
    np.testing.assert_allclose(edges["weight"], base["weight"], rtol=0, atol=1e-6)
    np.testing.assert_array_equal(got["vector_ids"], want["vector_ids"])
    np.testing.assert_allclose(got["vectors"], want["vectors"], rtol=0, atol=1e-6)
    assert sorted(got["state"]) == sorted(want["state"])
    for name, array in want["state"].items():
        np.testing.assert_allclose(got["state"][name], array, rtol=0, atol=1e-6, err_msg=name)
    if queries:
        assert got["queries"] == want["queries"]
