"""How the engine's own work grows with the corpus (issue 17): build, one-document writes,
open, queries, per size, with growth exponents between sizes.

The corpus is ``benchmarks/scale/synthetic_corpus.py`` (seeded: Zipf words, a 3,000-name entity
pool, ~5.2 chunks per document); the backends are the ``hashing`` embedder (384 dimensions)
and the extractive LLM, so the numbers are the engine's work, not a model's. Each size runs
in a fresh subprocess, so its peak RSS is its own. Per size:

* build: wall seconds per stage (the ``OperationReport`` stages, wall clock), total wall and
  process CPU seconds, bytes on disk;
* one-document insert and delete into the built index (warm process: one insert and delete
  of another document first): seconds, bytes written, the slowest stages; then the median
  of ``SERIES`` one-document inserts and of their one-by-one deletes (a single write varies
  by 20-40% from one document to the next);
* ``Index.open`` seconds (a second open in the same process: imports are warm), and in a
  fresh process (its imports timed apart, before the open): its open and the first query
  of each mode, which maps the caches (usearch bases, BM25 postings) and builds what stays
  lazy;
* the first query of each mode after a write (in the order of ``Index.modes``; state a
  version's modes share, such as the sparse index, is paid by the first mode that uses it):
  once in a process that had not queried, once in one that had, and after each of the
  ``SERIES`` inserts (p50 and max: one sample varied 2x from run to run at 1M chunks),
  then warm p50/p99 per mode over ``--queries`` queries.

Growth exponents: ``log(v2 / v1) / log(n2 / n1)`` between consecutive sizes of one setting,
``n`` the chunk count. ``ann`` measures the semantic edges of a build three ways (the k-NN
graph of ``core.nndescent``, an HNSW index searched with every vector, the exact kernel):
time, growth and recall. ``hnsw`` grows one HNSW index as a build does and records the
CPU per insert step by step (``benchmarks/scale/scale_hnsw.py``).

Usage::

    python -m benchmarks.scale.scale run --chunks 2000 10000                    # all components
    python -m benchmarks.scale.scale run --chunks 10000 100000 --no-heterograph # naive + hierarchy
    python -m benchmarks.scale.scale ann --vectors 50000 200000 500000 --queries 2000
    python -m benchmarks.scale.scale hnsw --vectors 200000 --step 20000
    python -m benchmarks.scale.scale interleaved --index A/ix B/ix --chunks 10000 100000 --work W
    python -m benchmarks.scale.scale report  # rewrite results/scale.md from results/scale.json

``interleaved`` measures one-document writes on kept indexes of two sizes write by write in
turn, so that their ratio compares the same minutes of the machine
(``benchmarks/scale/scale_interleaved.py``).

Results merge into ``benchmarks/results/scale.json`` (one entry per setting and size) and
``scale.md`` is regenerated from it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import REPO, RESULTS, command_line, load1, module_command, write_json
from benchmarks.scale import scale_graph_index, scale_hnsw, scale_interleaved, scale_remake
from benchmarks.scale.synthetic_corpus import CHUNKS_PER_DOC, DIM, SyntheticCorpus, chunk_vectors

#: One-document inserts after the measured ones (their median; Leiden quality after them).
SERIES = 20


def _queries(corpus: Any, n: int) -> list[str]:
    rng = np.random.default_rng(7)
    out = []
    for i in range(n):
        name = corpus.names[int(rng.integers(0, 300))]  # popular entities
        words = [corpus.words[int(rng.integers(0, 2000))] for _ in range(3)]
        out.append(f"{name} {' '.join(words)}" if i % 2 == 0 else " ".join([*words, name]))
    return out


def _stages(report: Any, top: int | None = None) -> dict[str, float]:
    items = sorted(report.stages.items(), key=lambda kv: -kv[1])
    return {k: round(v, 3) for k, v in (items[:top] if top else items)}


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


# ---------------------------------------------------------------------- one size (child)
def run_one(
    chunks: int, heterograph: bool, work: Path, n_queries: int, exact_below: int | None = None
) -> dict[str, Any]:
    """Build, write, open and query one index of ~``chunks`` chunks.

    ``exact_below`` overrides ``HeterographConfig.semantic_exact_below`` (the setting is
    then labelled with it).
    """
    from graphstrata.bindings.api import Index
    from graphstrata.bindings.embed.models import HashingEmbedder
    from graphstrata.bindings.llm.extractive import ExtractiveLLM
    from graphstrata.engine.config import IndexConfig

    corpus = SyntheticCorpus()
    n_docs = max(2, round(chunks / CHUNKS_PER_DOC))
    t = time.perf_counter()
    docs = list(corpus.documents(n_docs))
    gen_seconds = time.perf_counter() - t
    config = IndexConfig()
    config.heterograph.enabled = heterograph
    if exact_below is not None:
        config.heterograph.semantic_exact_below = exact_below
    path = work / "ix"
    embedder = HashingEmbedder(DIM)
    index = Index.create(path, config, embedder=embedder, llm=ExtractiveLLM(), use_cache=False)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    build = index.insert(docs)
    build_cpu, build_wall = time.process_time() - cpu0, time.perf_counter() - wall0
    out: dict[str, Any] = {
        "setting": _setting(heterograph)
        + (f" (semantic_exact_below={exact_below})" if exact_below is not None else ""),
        "docs": n_docs,
        "chunks": int(build.chunks_added),
        "generate_s": round(gen_seconds, 2),
        "build_wall_s": round(build_wall, 2),
        "build_cpu_s": round(build_cpu, 2),
        "build_stages_s": _stages(build),
        "disk_bytes": int(index.engine.store.size_bytes()),
        "nodes": len(index.engine.state.snapshot.nodes.ids),
        "vectors": len(index.engine.state.snapshot.vectors),
        "semantic_edges": [n for n in build.notes if "semantic edges" in n],
        "load1_build": load1(),
    }
    out.update(measure(index, path, n_docs, n_queries, heterograph))
    return out


def measure(
    index: Any, path: Path, n_docs: int, n_queries: int, heterograph: bool
) -> dict[str, Any]:
    """Writes, opens and queries of a built index of the synthetic corpus's first ``n_docs``
    documents (``run_one`` after its build, or ``measure`` on a kept index)."""
    corpus = SyntheticCorpus()
    out: dict[str, Any] = {}
    queries = _queries(corpus, n_queries)
    # Warm-up write (Numba compiles the update kernels on their first call): the measured
    # insert and delete below are those of a warm process.
    warm_doc = corpus.document(n_docs + 2)
    index.insert([warm_doc])
    index.delete([warm_doc["doc_id"]])
    new_doc = corpus.document(n_docs + 1)
    ins = index.insert([new_doc])
    out["insert_s"] = round(ins.seconds, 3)
    out["insert_bytes"] = int(ins.bytes_written)
    out["insert_stages_s"] = _stages(ins, top=6)
    # The process has not queried yet: its first query per mode builds the read state that
    # is lazy (BM25 postings, per-mode caches), so this is "first query of a process".
    first: dict[str, float] = {}
    for mode in index.modes:
        t = time.perf_counter()
        index.query(queries[0], mode=mode)
        first[mode] = round(time.perf_counter() - t, 4)
    out["first_query_after_write_s"] = first
    # Every mode has queried now: a write must advance what they built, not rebuild it.
    write_doc = corpus.document(n_docs + 3)
    index.insert([write_doc])
    after: dict[str, float] = {}
    for mode in index.modes:
        t = time.perf_counter()
        index.query(queries[1 % len(queries)], mode=mode)
        after[mode] = round(time.perf_counter() - t, 4)
    out["first_query_after_write_warm_s"] = after
    index.delete([write_doc["doc_id"]])
    dele = index.delete([new_doc["doc_id"]])
    out["delete_s"] = round(dele.seconds, 3)
    out["delete_bytes"] = int(dele.bytes_written)
    out["delete_stages_s"] = _stages(dele, top=6)
    # A series of one-document writes: their median (one write is noisy on shared cores)
    # and, with the heterograph, what many local Leiden runs did to the partition. After
    # each write every mode answers one query: the median of those first queries after a
    # write (one sample, as above, varied 2x from run to run at 1M chunks).
    series = [corpus.document(n_docs + 10 + i) for i in range(SERIES)]
    seconds, written = [], []
    firsts: dict[str, list[float]] = {mode: [] for mode in index.modes}
    for i, doc in enumerate(series):
        rep = index.insert([doc])
        seconds.append(rep.seconds)
        written.append(rep.bytes_written)
        for mode in index.modes:
            t = time.perf_counter()
            index.query(queries[(3 + i) % len(queries)], mode=mode)
            firsts[mode].append(time.perf_counter() - t)
    out["series_insert_s_p50"] = round(_percentile(seconds, 50), 3)
    out["series_insert_bytes_p50"] = int(_percentile([float(b) for b in written], 50))
    out["series_first_query_ms"] = {
        mode: {"p50": round(1000 * _percentile(t, 50), 2), "max": round(1000 * max(t), 2)}
        for mode, t in firsts.items()
    }
    if heterograph:
        out["leiden"] = leiden_quality(index)
    # The same documents deleted one by one: the median of a delete, as of an insert.
    seconds, written = [], []
    for doc in series:
        rep = index.delete([doc["doc_id"]])
        seconds.append(rep.seconds)
        written.append(rep.bytes_written)
    out["series_delete_s_p50"] = round(_percentile(seconds, 50), 3)
    out["series_delete_bytes_p50"] = int(_percentile([float(b) for b in written], 50))
    del index
    out.update(open_in_fresh_process(path, queries[2 % len(queries)]))
    t = time.perf_counter()
    index = open_for_measuring(path)
    out["open_s"] = round(time.perf_counter() - t, 3)
    warm: dict[str, dict[str, float]] = {}
    for mode in index.modes:
        for q in queries[:3]:
            index.query(q, mode=mode)
        times = []
        for q in queries:
            t = time.perf_counter()
            index.query(q, mode=mode)
            times.append(time.perf_counter() - t)
        warm[mode] = {
            "p50_ms": round(1000 * _percentile(times, 50), 2),
            "p99_ms": round(1000 * _percentile(times, 99), 2),
        }
    out["warm_query"] = warm
    out["expansion_search"] = int(index.engine.config.search.expansion_search)
    out["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out["load1_end"] = load1()
    return out


def code_version() -> str:
    """The repository's commit (short), ``+dirty`` when the work tree has changes (outside
    ``benchmarks/results``)."""

    def git(*a: str) -> str:
        return subprocess.run(
            ["git", *a], cwd=REPO, capture_output=True, text=True, check=False
        ).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    # the results themselves do not count: a run merges into them
    changed = git(
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ":/",
        ":(exclude,top)benchmarks/results",
    )
    return head + ("+dirty" if changed else "")


def _setting(heterograph: bool) -> str:
    return "all" if heterograph else "naive+hierarchy"


def measure_kept(args: argparse.Namespace) -> dict[str, Any]:
    """The ``measure-one`` child: open the copy and measure it."""

    path = Path(args.path)
    n_docs = max(2, round(args.chunks / CHUNKS_PER_DOC))
    index = open_for_measuring(path)
    out = measure(index, path, n_docs, args.queries, not args.no_heterograph)
    out["peak_rss_mib_measure"] = out.pop("peak_rss_mib")
    return out


def _evict_from_page_cache(root: Path) -> None:
    """Drop the pages of ``root``'s files from the page cache (``POSIX_FADV_DONTNEED``).

    The copy just read every byte of the kept index: at a million chunks two 5.6 GB copies
    in the page cache beside an 11 GB process evicted the measured copy's mapped usearch
    pages (warm ``naive`` p50 12 ms, p99 228 ms, against 2-3 ms in a process alone).
    """
    for path in root.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def remeasure(args: argparse.Namespace, data: dict[str, Any]) -> None:
    """Copy a kept index, measure the copy in a child process and replace the measured
    fields of its row (the build's stay; ``measure_code`` names the code measured)."""
    setting = _setting(not args.no_heterograph)
    rows = [r for r in data.get("runs", []) if r["setting"] == setting]
    row = min(rows, key=lambda r: abs(r["chunks"] - args.chunks), default=None)
    if row is None or abs(row["chunks"] - args.chunks) > 0.05 * args.chunks:
        raise SystemExit(f"no {setting} row of about {args.chunks} chunks to re-measure")
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    copy = work / "ix"
    print(f"load average {load1()}: copying {args.index}", flush=True)
    shutil.copytree(args.index, copy)
    _evict_from_page_cache(Path(args.index))
    out = work / "result.json"
    child = [*module_command(__spec__.name), "measure-one", "--path", str(copy)]
    child += ["--chunks", str(args.chunks), "--queries", str(args.queries), "--json", str(out)]
    if args.no_heterograph:
        child.append("--no-heterograph")
    print(f"load average {load1()}: {' '.join(child[2:])}", flush=True)
    subprocess.run(child, check=True, cwd=REPO)
    result = json.loads(out.read_text())
    result["measure_code"] = code_version()
    print(json.dumps(result), flush=True)
    row.update(result)
    shutil.rmtree(work, ignore_errors=True)
    _save(data)


def interleaved(args: argparse.Namespace, data: dict[str, Any]) -> None:
    """Copy kept indexes and measure their one-document writes in turn
    (``scale_interleaved``); the run is appended to ``interleaved`` in scale.json."""
    if len(args.index) != len(args.chunks) or len(args.index) < 2:
        raise SystemExit("give two or more --index, and as many --chunks")
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    sizes = []
    for index, chunks in zip(args.index, args.chunks, strict=True):
        copy = work / f"ix-{chunks}"
        print(f"load average {load1()}: copying {index}", flush=True)
        shutil.copytree(index, copy)
        _evict_from_page_cache(Path(index))
        sizes.append((copy, chunks))
    result = scale_interleaved.measure_interleaved(__spec__.name, sizes, args.rounds, load1)
    result["code"] = code_version()
    print(json.dumps({k: v for k, v in result.items() if k != "sizes"}), flush=True)
    data["interleaved"] = [*data.get("interleaved", []), result]
    shutil.rmtree(work, ignore_errors=True)
    _save(data)


def open_in_fresh_process(path: Path, query: str) -> dict[str, Any]:
    """``fresh_open_s`` and ``first_query_after_open_s`` per mode, measured in a new
    process (the ``open`` subcommand), so nothing built by this one is reused."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "open.json"
        child = [*module_command(__spec__.name), "open", "--path", str(path), "--query", query]
        subprocess.run([*child, "--json", str(out)], check=True, cwd=REPO)
        return dict(json.loads(out.read_text()))


def _open_imports() -> tuple[Any, Any, Any, Any]:
    """What :func:`open_for_measuring` imports (``open_once`` times them apart)."""
    from graphstrata.bindings.api import Index
    from graphstrata.bindings.embed.models import HashingEmbedder
    from graphstrata.bindings.llm.extractive import ExtractiveLLM
    from graphstrata.engine.config import SearchConfig

    return Index, HashingEmbedder, ExtractiveLLM, SearchConfig


def open_for_measuring(path: Path) -> Any:
    """``Index.open`` as every measurement here does: the hashing embedder, no LLM cache,
    and this code's query defaults (``SearchConfig()``, e.g. its HNSW expansion) rather than
    those recorded when a kept index was built, so that a kept index measures the code."""
    Index, HashingEmbedder, ExtractiveLLM, SearchConfig = _open_imports()
    return Index.open(
        path,
        embedder=HashingEmbedder(DIM),
        llm=ExtractiveLLM(),
        use_cache=False,
        search=SearchConfig(),
    )


def open_once(path: Path, query: str) -> dict[str, Any]:
    """Open ``path`` and time the first query of each mode; the package's imports are
    timed apart, before the open (``imports_s``): up to code 02db8f8 they were inside
    ``fresh_open_s`` (0.66 s of it on a warm page cache, measured for issue 17)."""
    t = time.perf_counter()
    _open_imports()
    imports = time.perf_counter() - t
    t = time.perf_counter()
    index = open_for_measuring(path)
    opened = time.perf_counter() - t
    first: dict[str, float] = {}
    for mode in index.modes:
        t = time.perf_counter()
        index.query(query, mode=mode)
        first[mode] = round(time.perf_counter() - t, 4)
    return {
        "imports_s": round(imports, 3),
        "fresh_open_s": round(opened, 3),
        "first_query_after_open_s": first,
    }


def leiden_quality(index: Any) -> dict[str, Any]:
    """Modularity of the committed partition (built whole, then changed by local Leiden on
    every write) against Leiden re-run on the same graph: from that partition, and from
    scratch, with their seconds."""
    import igraph as ig

    from graphstrata.core.communities import leiden
    from graphstrata.engine.heterograph.schema import G2_EDGES, G2_KINDS, NAME, ST_LEIDEN

    snap = index.engine.state.snapshot
    g2 = snap.nodes.ids_of_kind(*G2_KINDS)
    kinds = snap.edges.column("kind").to_numpy()
    sel = np.isin(kinds, np.asarray(G2_EDGES, np.uint8))
    src = snap.edges.column("src").to_numpy()[sel]
    dst = snap.edges.column("dst").to_numpy()[sel]
    live = np.isin(src, g2) & np.isin(dst, g2)
    a, b = np.searchsorted(g2, src[live]), np.searchsorted(g2, dst[live])
    ids, labels = snap.node_state(NAME, ST_LEIDEN)
    stored = labels[np.searchsorted(ids, g2)]
    graph = ig.Graph(n=int(g2.size), edges=np.column_stack([a, b]).tolist())
    w = np.ones(a.size)
    out: dict[str, Any] = {"nodes": int(g2.size), "edges": int(a.size)}
    out["modularity_local"] = round(graph.modularity(stored.tolist()), 5)
    out["communities_local"] = int(np.unique(stored).size)
    for name, init in (("from_partition", stored), ("from_scratch", None)):
        t = time.perf_counter()
        full = leiden(int(g2.size), a, b, w, seed=0, initial=init)
        out[f"full_{name}_s"] = round(time.perf_counter() - t, 2)
        out[f"modularity_full_{name}"] = round(graph.modularity(full.tolist()), 5)
        out[f"communities_full_{name}"] = int(np.unique(full).size)
    return out


# ---------------------------------------------------------------------- ANN recall
def _hnsw_all(x: np.ndarray, ids: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The peers' way (NodeRAG's hnswlib edges; this engine before ``core.nndescent``): one
    HNSW index over every vector, searched with every vector, on every core."""
    from graphstrata.core.ann import hnsw_index, match_arrays

    index = hnsw_index(x.shape[1], "f32", 128)
    index.add(ids, x, threads=0)
    keys, _, valid = match_arrays(index.search(x, m + 1, threads=0), x.shape[0], m + 1)
    valid &= keys != ids[:, None]
    valid &= np.cumsum(valid, axis=1) <= m
    return np.repeat(ids, m + 1).reshape(-1, m + 1)[valid], keys[valid]


def _recall(
    src: np.ndarray, dst: np.ndarray, x: np.ndarray, q: np.ndarray, kth: np.ndarray, n_true: int
) -> float:
    """Share of the sample's exact pairs matched: found neighbours of the queries ``q`` at
    least as similar as each query's exact m-th (``kth``), over ``n_true`` exact pairs."""
    sel = np.isin(src, q)
    sims = np.einsum("ij,ij->i", x[src[sel]], x[dst[sel]])
    return round(float(np.sum(sims >= kth[src[sel]] - 1e-6)) / max(n_true, 1), 4)


def run_ann(sizes: list[int], n_queries: int, m: int, hnsw_max: int) -> list[dict[str, Any]]:
    """The semantic edges of a build (every vector's ``m`` nearest others) three ways, per size:
    ``core.nndescent`` (ours), an HNSW index built and searched with every vector (up to
    ``hnsw_max`` vectors) and the exact kernel on a sample of queries (the machine's limit:
    its all-pairs time is extrapolated). Recall@m of both against the exact sample."""
    from graphstrata.core.knn import nearest_neighbours_scored
    from graphstrata.core.nndescent import graph_edges, knn_graph

    t = time.perf_counter()
    everything = chunk_vectors(max(sizes))
    print(f"embedded {everything.shape[0]} chunks in {time.perf_counter() - t:.0f} s", flush=True)
    knn_graph(everything[:64], m)  # compile, untimed
    out = []
    for n in sorted(sizes):
        x = np.ascontiguousarray(everything[:n])
        ids = np.arange(x.shape[0], dtype=np.int64)
        rng = np.random.default_rng(0)
        q = np.sort(rng.choice(x.shape[0], min(n_queries, x.shape[0]), replace=False))
        row: dict[str, Any] = {"vectors": int(x.shape[0]), "queries": int(q.size), "m": m}
        row["load1_before"] = load1()
        t = time.perf_counter()
        es, _, esim = nearest_neighbours_scored(x[q], ids[q], x, ids, m)
        exact_s = time.perf_counter() - t
        row["exact_s_for_queries"] = round(exact_s, 2)
        row["exact_s_all_pairs_estimate"] = round(exact_s * x.shape[0] / q.size, 1)
        # A found neighbour counts when it is as similar as the exact m-th (ties count).
        kth = np.full(x.shape[0], np.inf, np.float32)
        np.minimum.at(kth, es, esim)
        truth = (x, q, kth, es.size)

        t = time.perf_counter()
        src, dst, _ = graph_edges(knn_graph(x, m), ids)
        row["nndescent_s"] = round(time.perf_counter() - t, 2)
        row["nndescent_recall"] = _recall(src, dst, *truth)
        if n <= hnsw_max:
            t = time.perf_counter()
            src, dst = _hnsw_all(x, ids, m)
            row["hnsw_s"] = round(time.perf_counter() - t, 2)
            row["hnsw_recall"] = _recall(src, dst, *truth)
        row["load1"] = load1()
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


# ---------------------------------------------------------------------- results
def _load() -> dict[str, Any]:
    path = RESULTS / "scale.json"
    return json.loads(path.read_text()) if path.exists() else {"runs": [], "ann": []}


def _save(data: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    write_json(RESULTS / "scale.json", data, sort_keys=True)
    (RESULTS / "scale.md").write_text(markdown(data))


def _exponent(a: float, b: float, na: int, nb: int) -> str:
    if a <= 0 or b <= 0 or na == nb:
        return "–"
    return f"{math.log(b / a) / math.log(nb / na):.2f}"


COLUMNS: list[tuple[str, str]] = [
    ("build_wall_s", "build wall s"),
    ("build_cpu_s", "build CPU s"),
    ("peak_rss_mib", "peak RSS MiB"),
    ("disk_bytes", "disk bytes"),
    ("insert_s", "1-doc insert s"),
    ("insert_bytes", "insert bytes"),
    ("delete_s", "1-doc delete s"),
    ("delete_bytes", "delete bytes"),
    ("series_insert_s_p50", f"p50 of {SERIES} inserts s"),
    ("series_insert_bytes_p50", f"p50 of {SERIES} inserts bytes"),
    ("series_delete_s_p50", f"p50 of {SERIES} deletes s"),
    ("series_delete_bytes_p50", f"p50 of {SERIES} deletes bytes"),
    ("open_s", "open s"),
    ("fresh_open_s", "open s, fresh process"),
    ("imports_s", "imports s, fresh process"),
]


def markdown(data: dict[str, Any]) -> str:
    """``scale.md`` from the merged results."""
    lines = [
        "# Scale: the engine's own work against corpus size",
        "",
        "Generated by `benchmarks/scale/scale.py` (see its docstring for what each column means)"
        " from `scale.json`. Synthetic corpus (`benchmarks/scale/synthetic_corpus.py`, seed 17),"
        " `hashing` embedder (384 dimensions), extractive LLM. The cores were shared with"
        " other processes: the 1-minute load average is printed beside every row; on 2 cores"
        " a load above 2 means the numbers are slower than the machine alone.",
        "",
    ]
    for cmd in data.get("commands", []):
        lines.append(f"    {cmd}")
    lines.append("")
    # Reading notes written with the results (``"notes"`` in scale.json), kept across runs.
    for note in data.get("notes", []):
        lines += [f"* {note}"]
    if data.get("notes"):
        lines.append("")
    runs = sorted(data.get("runs", []), key=lambda r: (r["setting"], r["chunks"]))
    for setting in sorted({r["setting"] for r in runs}):
        rows = [r for r in runs if r["setting"] == setting]
        lines += [f"## {setting}", ""]
        head = ["chunks", "docs", "nodes", "vectors", *[c[1] for c in COLUMNS], "load1", "code"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for r in rows:
            cells = [str(r["chunks"]), str(r["docs"]), str(r["nodes"]), str(r.get("vectors", "–"))]
            cells += [str(r.get(k, "–")) for k, _ in COLUMNS]
            cells.append(f"{r.get('load1_build', '–')} / {r.get('load1_end', '–')}")
            # the build's commit, then the commit whose writes and queries the row shows
            code = r.get("code", "–")
            cells.append(f"{code} / {r['measure_code']}" if "measure_code" in r else code)
            lines.append("| " + " | ".join(cells) + " |")
        for a, b in itertools.pairwise(rows):
            cells = [f"exponent {a['chunks']}→{b['chunks']}", "", "", ""]
            cells += [
                _exponent(float(a.get(k, 0)), float(b.get(k, 0)), a["chunks"], b["chunks"])
                for k, _ in COLUMNS
            ]
            cells += ["", ""]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        stages = sorted({s for r in rows for s in r["build_stages_s"]})
        top = sorted(stages, key=lambda s: -max(r["build_stages_s"].get(s, 0) for r in rows))
        bound = ""
        if len(rows) > 1:  # the bound: no stage growing faster than N log N
            na, nb = rows[-2]["chunks"], rows[-1]["chunks"]
            bound = (
                f"; N log N from {na} to {nb} chunks is exponent "
                f"{_exponent(na * math.log(na), nb * math.log(nb), na, nb)}"
            )
        lines += [f"Build stages (wall s, the report's stages; nested stages overlap{bound}):", ""]
        lines.append("| stage | " + " | ".join(str(r["chunks"]) for r in rows) + " | exponent |")
        lines.append("|---|" + "---|" * (len(rows) + 1))
        for s in top[:14]:
            vals = [r["build_stages_s"].get(s, 0.0) for r in rows]
            exp = (
                _exponent(vals[-2], vals[-1], rows[-2]["chunks"], rows[-1]["chunks"])
                if len(rows) > 1
                else "–"
            )
            lines.append(f"| {s} | " + " | ".join(f"{v:.2f}" for v in vals) + f" | {exp} |")
        lines.append("")
        lines += ["One-document insert / delete, slowest stages (wall s):", ""]
        for r in rows:
            ins = ", ".join(f"{k} {v}" for k, v in r["insert_stages_s"].items())
            dele = ", ".join(f"{k} {v}" for k, v in r["delete_stages_s"].items())
            lines.append(f"* {r['chunks']} chunks: insert {ins}; delete {dele}")
            for note in r.get("semantic_edges", []):
                lines.append(f"  * build: {note}")
        lines.append("")
        leiden_rows = [r for r in rows if "leiden" in r]
        if leiden_rows:
            lines += [
                f"Leiden after the build and {SERIES + 6} one-document writes with"
                " `local_leiden` on (`leiden_local`; a write opening over half of G2 runs it"
                " whole), against a full re-run on the same graph (modularity, communities,"
                " seconds of the full run):",
                "",
                "| chunks | G2 nodes | local | full from that partition | full from scratch |",
                "|---|---|---|---|---|",
            ]
            for r in leiden_rows:
                q = r["leiden"]
                lines.append(
                    f"| {r['chunks']} | {q['nodes']} | {q['modularity_local']}"
                    f" ({q['communities_local']}) | {q['modularity_full_from_partition']}"
                    f" ({q['communities_full_from_partition']}, {q['full_from_partition_s']} s)"
                    f" | {q['modularity_full_from_scratch']}"
                    f" ({q['communities_full_from_scratch']}, {q['full_from_scratch_s']} s) |"
                )
            lines.append("")
        modes = list(rows[0]["warm_query"])
        lines += [
            "Queries: first of the process, after a write (s) / first after a write in a "
            "process that had queried every mode (s) / first after opening in a fresh process"
            " (s) / warm p50 / p99 (ms); – = not measured by that run:",
            "",
        ]
        lines.append("| chunks | " + " | ".join(modes) + " |")
        lines.append("|---|" + "---|" * len(modes))
        for r in rows:
            warm_after = r.get("first_query_after_write_warm_s", {})
            after_open = r.get("first_query_after_open_s", {})
            cells = [
                f"{r['first_query_after_write_s'].get(m, '–')} / {warm_after.get(m, '–')}"
                f" / {after_open.get(m, '–')}"
                f" / {r['warm_query'][m]['p50_ms']} / {r['warm_query'][m]['p99_ms']}"
                for m in modes
            ]
            lines.append(f"| {r['chunks']} | " + " | ".join(cells) + " |")
        lines.append("")
        series_rows = [r for r in rows if "series_first_query_ms" in r]
        if series_rows:
            lines += [
                f"First query of each mode after each of {SERIES} one-document inserts, in a"
                " process that had queried every mode: p50 / max (ms), beside the warm p50:",
                "",
                "| chunks | " + " | ".join(modes) + " |",
                "|---|" + "---|" * len(modes),
            ]
            for r in series_rows:
                firsts = r["series_first_query_ms"]
                cells = [
                    f"{firsts[m]['p50']} / {firsts[m]['max']} ({r['warm_query'][m]['p50_ms']})"
                    if m in firsts
                    else "–"
                    for m in modes
                ]
                lines.append(f"| {r['chunks']} | " + " | ".join(cells) + " |")
            lines.append("")
    ann = data.get("ann", [])
    if ann:
        lines += [
            "## Semantic edges of a build: k-NN graph of every vector (recall against exact)",
            "",
            "Hashing embeddings of the corpus' chunks, every vector a query. `nndescent`:"
            " `core.nndescent.knn_graph` (random projection forest + NN-descent, what a build"
            " runs); `HNSW`: one usearch index (connectivity 16, expansion 128) built over every"
            " vector and searched with every vector on every core (NodeRAG's way, and this"
            " engine's until the k-NN graph replaced it); `exact`: the blocked GEMM kernel on a"
            " sample of queries, its all-pairs time extrapolated (the machine's limit for an"
            " exact graph). Recall@m: found neighbours at least as similar as the exact m-th,"
            " over the sample. Exponent: growth of the time from the previous size.",
            "",
            "| vectors | m | nndescent s | exponent | nndescent recall | HNSW s | exponent |"
            " HNSW recall | exact all pairs s (est.) | load1 before / after |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        ann = sorted(ann, key=lambda a: a["vectors"])
        for k, a in enumerate(ann):
            prev = ann[k - 1] if k else None
            nd_exp = (
                _exponent(prev["nndescent_s"], a["nndescent_s"], prev["vectors"], a["vectors"])
                if prev and "nndescent_s" in prev and "nndescent_s" in a
                else ""
            )
            h_exp = (
                _exponent(prev["hnsw_s"], a["hnsw_s"], prev["vectors"], a["vectors"])
                if prev and "hnsw_s" in prev and "hnsw_s" in a
                else ""
            )
            lines.append(
                f"| {a['vectors']} | {a['m']} | {a.get('nndescent_s', '–')} | {nd_exp} |"
                f" {a.get('nndescent_recall', '–')} | {a.get('hnsw_s', a.get('approx_s_all', '–'))}"
                f" | {h_exp} | {a.get('hnsw_recall', a.get('recall', '–'))} |"
                f" {a['exact_s_all_pairs_estimate']} |"
                f" {a.get('load1_before', '–')} / {a['load1']} |"
            )
        lines.append("")
    lines += scale_hnsw.markdown(data.get("hnsw", []))
    lines += scale_graph_index.markdown(data.get("graph_index", []))
    lines += scale_remake.markdown(data.get("remake", []))
    lines += scale_interleaved.markdown(data.get("interleaved", []))
    lines.append(f"Machine: {platform.platform()}, {os.cpu_count()} CPUs.")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- entry point
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="build and measure one index per size (a subprocess each)")
    p.add_argument("--chunks", type=int, nargs="+", required=True)
    p.add_argument("--no-heterograph", action="store_true", dest="no_heterograph")
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--work", help="folder for the indexes (default: a temporary one)")
    p.add_argument("--semantic-exact-below", type=int, dest="exact_below")
    p.add_argument(
        "--keep-index",
        action="store_true",
        dest="keep_index",
        help="keep each built index (WORK/<setting>-<chunks>-None/ix) for later profiling",
    )
    p = sub.add_parser("one", help=argparse.SUPPRESS)
    p.add_argument("--chunks", type=int, required=True)
    p.add_argument("--no-heterograph", action="store_true", dest="no_heterograph")
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--work", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--semantic-exact-below", type=int, dest="exact_below")
    p = sub.add_parser(
        "measure",
        help="re-measure the writes, opens and queries of a kept index (--keep-index) with "
        "the current code; the build figures of its row stay",
    )
    p.add_argument("--index", required=True, help="a kept index (WORK/<setting>-<chunks>-None/ix)")
    p.add_argument("--chunks", type=int, required=True, help="the --chunks it was built with")
    p.add_argument("--no-heterograph", action="store_true", dest="no_heterograph")
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--work", required=True, help="folder for the copy that is measured")
    p = sub.add_parser("measure-one", help=argparse.SUPPRESS)
    p.add_argument("--path", required=True)
    p.add_argument("--chunks", type=int, required=True)
    p.add_argument("--no-heterograph", action="store_true", dest="no_heterograph")
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--json", required=True)
    p = sub.add_parser("open", help=argparse.SUPPRESS)
    p.add_argument("--path", required=True)
    p.add_argument("--query", required=True)
    p.add_argument("--json", required=True)
    p = sub.add_parser("ann", help="the semantic edges of a build three ways: time and recall")
    p.add_argument("--vectors", type=int, nargs="+", default=[50_000])
    p.add_argument("--queries", type=int, default=2000)
    p.add_argument("--m", type=int, default=16)
    p.add_argument(
        "--hnsw-max",
        type=int,
        default=200_000,
        dest="hnsw_max",
        help="measure the HNSW way up to this many vectors (it took 664 s at 514k in a build)",
    )
    p = sub.add_parser(
        "hnsw", help="CPU per HNSW insert as one index grows (benchmarks/scale/scale_hnsw.py)"
    )
    p.add_argument("--vectors", type=int, default=200_000)
    p.add_argument("--step", type=int, default=20_000)
    p.add_argument("--queries", type=int, default=200)
    p = sub.add_parser(
        "graph-index",
        help="a vector base from its k-NN graph against usearch's inserts (scale_graph_index)",
    )
    p.add_argument("--vectors", type=int, nargs="+", default=[50_000, 200_000])
    p.add_argument("--queries", type=int, default=1000)
    p = sub.add_parser(
        "remake",
        help="per kind of a kept index, its vector base made anew against copied",
    )
    p.add_argument("--index", required=True, help="a kept index (opened, not written)")
    p.add_argument("--chunks", type=int, required=True, help="its --chunks")
    p.add_argument("--no-heterograph", action="store_true", dest="no_heterograph")
    p.add_argument("--max-vectors", type=int, default=500_000, dest="max_vectors")
    p = sub.add_parser(
        "interleaved",
        help="one-document writes on kept indexes of two sizes, in turn, write by write",
    )
    p.add_argument("--index", nargs="+", required=True, help="kept indexes, smallest first")
    p.add_argument("--chunks", type=int, nargs="+", required=True, help="their --chunks")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--work", required=True, help="folder for the copies that are measured")
    p = sub.add_parser("interleaved-one", help=argparse.SUPPRESS)
    p.add_argument("--path", required=True)
    p.add_argument("--chunks", type=int, required=True)
    sub.add_parser("report", help="rewrite scale.md from scale.json")
    args = ap.parse_args(argv)
    command = command_line(__spec__.name, argv)
    if args.cmd == "one":
        result = run_one(
            args.chunks, not args.no_heterograph, Path(args.work), args.queries, args.exact_below
        )
        Path(args.json).write_text(json.dumps(result))
        return 0
    if args.cmd == "measure-one":
        Path(args.json).write_text(json.dumps(measure_kept(args)))
        return 0
    if args.cmd == "open":
        Path(args.json).write_text(json.dumps(open_once(Path(args.path), args.query)))
        return 0
    if args.cmd == "interleaved-one":
        scale_interleaved.child(Path(args.path), args.chunks)
        return 0
    data = _load()
    if args.cmd == "report":
        _save(data)
        return 0
    if args.cmd == "measure":
        remeasure(args, data)
    elif args.cmd == "interleaved":
        interleaved(args, data)
    elif args.cmd == "hnsw":
        print(f"load average {load1()}", flush=True)
        data["hnsw"] = scale_hnsw.run(chunk_vectors(args.vectors), args.step, args.queries, load1)
    elif args.cmd == "graph-index":
        print(f"load average {load1()}", flush=True)
        rows = scale_graph_index.run(
            chunk_vectors(max(args.vectors)), args.vectors, args.queries, load1
        )
        sizes = {r["vectors"] for r in rows}
        data["graph_index"] = [
            r for r in data.get("graph_index", []) if r["vectors"] not in sizes
        ] + rows
    elif args.cmd == "remake":
        print(f"load average {load1()}", flush=True)
        name = f"{_setting(not args.no_heterograph)} {args.chunks}"
        index = open_for_measuring(Path(args.index))
        rows = [
            {"index": name, **r}
            for r in scale_remake.run(index.engine.state.vectors, args.max_vectors, load1)
        ]
        done = {(r["index"], r["kind"]) for r in rows}
        data["remake"] = [
            r for r in data.get("remake", []) if (r["index"], r["kind"]) not in done
        ] + rows
    elif args.cmd == "ann":
        print(f"load average {load1()}", flush=True)
        results = run_ann(args.vectors, args.queries, args.m, args.hnsw_max)
        sizes = {r["vectors"] for r in results}
        data["ann"] = [a for a in data.get("ann", []) if a["vectors"] not in sizes] + results
    else:
        root = Path(args.work or tempfile.mkdtemp(prefix="gs-scale-"))
        code = code_version()
        for chunks in args.chunks:
            work = root / f"{'naive' if args.no_heterograph else 'all'}-{chunks}-{args.exact_below}"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            out = work / "result.json"
            child = [*module_command(__spec__.name), "one", "--chunks", str(chunks)]
            child += ["--queries", str(args.queries), "--work", str(work), "--json", str(out)]
            if args.no_heterograph:
                child.append("--no-heterograph")
            if args.exact_below is not None:
                child += ["--semantic-exact-below", str(args.exact_below)]
            print(f"load average {load1()}: {' '.join(child[2:])}", flush=True)
            t = time.perf_counter()
            subprocess.run(child, check=True, cwd=REPO)
            result = json.loads(out.read_text())
            result["child_wall_s"] = round(time.perf_counter() - t, 1)
            result["code"] = code
            print(json.dumps(result), flush=True)
            if not args.keep_index:
                shutil.rmtree(work / "ix", ignore_errors=True)
            data["runs"] = [
                r
                for r in data.get("runs", [])
                if not (r["setting"] == result["setting"] and r["chunks"] == result["chunks"])
            ]
            data["runs"].append(result)
            _save(data)
    commands = [c for c in data.get("commands", []) if c != command]
    data["commands"] = [*commands, command]
    _save(data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
