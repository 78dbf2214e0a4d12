"""Retrieval quality and search latency of every search mode on the shared QA datasets.

    python -m benchmarks.quality.retrieval [--datasets multihop_rag,hotpotqa,graphrag_bench_novel]
                                   [--budgets 1000,2000,4000] [--embedder minilm-onnx] [--groups GROUPS] [--limit N]
                                   [--sweeps fusion,graph,bias | --no-sweep] [--build-only]
                                   [--rebuild] [--out PATH]

For each dataset of ``../shared/data`` (MultiHop-RAG: 609 news articles, 500 questions;
HotpotQA: 994 passages, 100 questions; GraphRAG-Bench novels: 4 books, 326 questions with
paraphrased evidence, scored by evidence-token recall) it builds one index per *group* of components
(default ``hierarchy,sparse,hybrid+heterograph``: the hierarchy with the stateless ``bm25``
and ``hybrid`` modes in one index, the heterograph in another, so a change of the
heterograph code does not rebuild the hierarchy index and the reverse) with the extractive
LLM and the default ``IndexConfig``, or reuses the one under ``build/bench-indexes/`` built
from the same corpus, build-time config, embedder, components and build code. Every mode
(``naive``, ``bm25``, ``hybrid``, ``collapsed``, ``detailed``, ``summarized``, ``graph``) is
evaluated on the first index that serves it at each budget, in one run.

* **Embedder**: ``--embedder`` (default: the packaged all-MiniLM-L6-v2 on torch);
  ``minilm-onnx`` is the same model on ONNX Runtime (the same vectors within 1e-5 cosine,
  ~2x faster on these cores). Chunk and summary vectors are cached by text under
  ``build/bench-indexes/embed-cache`` so a rebuild embeds only new texts; questions are
  embedded once per dataset, uncached (the time is reported), and every mode searches with
  those vectors (``Engine.query_vectors``).
* **Query-time settings** (``IndexConfig.search`` and ``IndexConfig.fusion``) are those of
  the current code, not the ones recorded when the index was built: they change no stored
  byte, so they are not part of an index's identity either.
* **Latency**: ``search ms p50 / p99`` is the mode's own search per question (the engine's
  ``search_seconds``, query embedding apart), after one untimed warm-up question.
* **Comparisons** (``benchmarks/quality/retrieval_compare.py``): every mode against the
  best of ``naive`` and ``bm25`` at each budget, with paired bootstrap 95 % intervals
  (``graphstrata.evaluation.compare``), the rank measures of each mode's ranked list
  before packing (Recall@k, MRR@10), and the acceptance criteria of issue 48.
* **Sweeps** at 2,000 tokens (``--sweeps``, default all; none with ``--no-sweep``):
  ``fusion``: ``hybrid`` and ``collapsed`` under fixed and per-query dense weights
  (``FusionConfig.adaptive``), RRF, each side alone and the coverage and feedback knobs;
  the defaults of ``FusionConfig`` cite this table. ``bias``: ``detailed`` and
  ``summarized`` under ``HierarchyConfig.bias_share`` and ``compete`` (decision 0035).
  ``graph``: the ``graph`` budget variants, and its query-term coverage
  (``HeterographConfig.term_decay``) at every budget.

Writes ``benchmarks/results/retrieval.md`` and ``retrieval.json``, with the load average
beside each table. Skips cleanly (exit 0) when ``../shared/data`` is absent.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import json
import shutil
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common
from benchmarks.common import (
    DATA,
    INDEX_ROOT,
    REPO,
    RESULTS,
    command_line,
    load_text,
    log,
    machine,
    read_jsonl,
)
from benchmarks.quality import retrieval_compare

DATASETS = ("multihop_rag", "hotpotqa", "graphrag_bench_novel")
BUDGETS = (1000, 2000, 4000)
#: Table order; a mode no index serves is listed as unavailable.
MODES = ("naive", "bm25", "hybrid", "collapsed", "detailed", "summarized", "graph")
HEADLINE_BUDGET = 2000
DEFAULT_GROUPS = "hierarchy,sparse,hybrid+heterograph"
#: Config sections read only at query time: not part of an index's identity.
QUERY_SECTIONS = ("search", "fusion")
#: Modules of the component packages that only serve queries (not hashed into the identity).
QUERY_MODULES = ("view.py", "search.py", "ranking.py")
#: Kernels only queries use.
QUERY_KERNELS = ("fusion.py", "budget.py", "ppr.py")
MEASURES = (
    "doc_recall",
    "fact_recall_text",
    "fact_recall_chunk",
    "evidence_recall",
    "answer_contained",
)


# ------------------------------------------------------------------ embedding cache
class CachedEmbedder:
    """An embedder that remembers the vectors it computed, by text, in two append-only files.

    It reports the inner embedder's name and dimension, so an index built through it is an
    index of the inner embedder (the vectors are the ones the inner embedder computed).
    """

    def __init__(self, inner: Any, directory: Path):
        self.inner = inner
        directory.mkdir(parents=True, exist_ok=True)
        stem = directory / str(inner.name).replace("/", "_").replace(":", "_")
        self._keys_path = stem.with_suffix(".keys")
        self._rows_path = stem.with_suffix(".f32")
        self._lock = threading.Lock()
        self._row: dict[int, int] = {}
        self._rows = np.zeros((0, int(inner.dim)), np.float32)
        if self._keys_path.exists() and self._rows_path.exists():
            keys = np.fromfile(self._keys_path, dtype=np.int64)
            rows = np.fromfile(self._rows_path, dtype=np.float32).reshape(-1, int(inner.dim))
            n = min(keys.size, rows.shape[0])  # an interrupted append leaves a torn tail
            self._rows = rows[:n].copy()
            self._row = {int(k): i for i, k in enumerate(keys[:n].tolist())}
        self.hits = 0
        self.misses = 0

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def compatible_names(self) -> frozenset[str]:
        return frozenset(getattr(self.inner, "compatible_names", {self.name}))

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    @property
    def max_input_tokens(self) -> int:
        return int(getattr(self.inner, "max_input_tokens", 0) or 0)

    @staticmethod
    def _key(text: str) -> int:
        digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
        return int.from_bytes(digest, "little", signed=True)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        with self._lock:
            todo = list(dict.fromkeys(k for k in keys if k not in self._row))
        if todo:
            first = dict(zip(keys, texts, strict=True))
            fresh = np.asarray(self.inner.embed([first[k] for k in todo]), np.float32)
            with self._lock:
                with open(self._keys_path, "ab") as fk, open(self._rows_path, "ab") as fr:
                    np.asarray(todo, np.int64).tofile(fk)
                    fresh.tofile(fr)
                base = self._rows.shape[0]
                self._rows = np.concatenate([self._rows, fresh])
                self._row.update({k: base + i for i, k in enumerate(todo)})
        self.misses += len(todo)
        self.hits += len(keys) - len(todo)
        with self._lock:
            return self._rows[[self._row[k] for k in keys]]


# ------------------------------------------------------------------ indexes
def components_for(names: Sequence[str]) -> list[Any]:
    """The shipped components of the default config that are named."""
    from graphstrata.engine.config import IndexConfig
    from graphstrata.engine.modes.registry import default_components

    available = default_components(IndexConfig())
    unknown = sorted(set(names) - {c.name for c in available})
    if unknown:
        raise SystemExit(
            f"unknown or absent components {unknown}; present: {[c.name for c in available]}"
        )
    return [c for c in available if c.name in names]


#: Config sections that only some components read at build time.
COMPONENT_SECTIONS = {"hierarchy": "hierarchy", "heterograph": "heterograph"}


def build_config(components: list[Any], config: Any = None) -> dict[str, Any]:
    """``config`` (default: the default ``IndexConfig``) as far as these components' build
    reads it: the shared sections and the sections of the components present (not the
    query-time ones)."""
    from graphstrata.engine.config import IndexConfig

    present = {c.name for c in components}
    skip = set(QUERY_SECTIONS) | {s for c, s in COMPONENT_SECTIONS.items() if c not in present}
    return {k: v for k, v in (config or IndexConfig()).to_dict().items() if k not in skip}


def build_identity(
    dataset: str, components: list[Any], embedder: str, config: Any = None
) -> dict[str, Any]:
    """What an index depends on: corpus, build-time config (``config``, default the default
    ``IndexConfig``), embedder and components."""
    from graphstrata.engine.store import sha256_file

    return {
        "dataset": dataset,
        "corpus_sha256": sha256_file(DATA / dataset / "corpus.jsonl"),
        "config": build_config(components, config),
        "embedder": embedder,
        "components": [c.name for c in components],
    }


def json_sha256(value: Any) -> str:
    """SHA-256 of ``value``'s JSON with sorted keys: an index's identity key (``index_dir``)
    and the config hash a build record keeps (its identity leaves the config out)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def latest_built(
    dataset: str, components: list[Any], embedder: str, config: Any = None
) -> Path | None:
    """The most recently built index of this dataset, group, embedder and build config
    (``config``, default the default one), whatever its build code (for ``--reuse-stale``;
    a record without a config hash predates variants and was built with the default)."""
    names = [c.name for c in components]
    want = json_sha256(build_config(components, config))
    default = json_sha256(build_config(components))
    found = []
    for rec_path in INDEX_ROOT.glob(f"{dataset}-{'-'.join(names)}-*.build.json"):
        rec = json.loads(rec_path.read_text())
        ident = rec.get("identity", {})
        if ident.get("config_sha256", default) != want:
            continue
        if ident.get("components") == names and ident.get("embedder", embedder) == embedder:
            path = rec_path.with_suffix("").with_suffix("")
            if (path / "manifest.json").exists():
                found.append((rec.get("built_at", ""), path))
    return max(found)[1] if found else None


def code_files(components: list[Any]) -> list[Path]:
    """Source files an index's content depends on: chunking and ingest; the extractive LLM,
    prompts and build kernels when a stateful component is built; each stateful component's
    package except its query-only modules (``QUERY_MODULES``)."""
    engine_dir = REPO / "graphstrata" / "engine"
    files = sorted((engine_dir / "ingest").glob("*.py"))
    stateful = [c for c in components if c.name not in ("sparse", "hybrid")]
    if stateful:  # bm25 and hybrid keep no state and call no LLM
        files += [
            REPO / "graphstrata" / "bindings" / "llm" / "extractive.py",
            REPO / "graphstrata" / "bindings" / "llm" / "statements.py",
            engine_dir / "prompts.py",
        ]
        files += sorted(
            p for p in (REPO / "graphstrata" / "core").glob("*.py") if p.name not in QUERY_KERNELS
        )
    for comp in stateful:
        module = Path(sys.modules[type(comp).__module__].__file__ or "")
        files += sorted(
            p
            for p in module.parent.rglob("*.py")
            if p.name not in QUERY_MODULES and "query" not in p.relative_to(module.parent).parts
        )
    return files


def code_sha256(components: list[Any]) -> str:
    """One hash over ``code_files``: a rerun after a change of build code rebuilds."""
    h = hashlib.sha256()
    for path in code_files(components):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def index_dir(identity: dict[str, Any]) -> Path:
    key = json_sha256(identity)[:12]
    group = "-".join(identity["components"])
    return INDEX_ROOT / f"{identity['dataset']}-{group}-{key}"


def open_engine(path: Path, embedder: Any, llm: Any, components: list[Any]) -> Any:
    """The index at ``path`` with the current code's query-time config sections."""
    from graphstrata.engine.config import IndexConfig
    from graphstrata.engine.index import Engine

    fresh = IndexConfig()
    # the search section at open (the HNSW indexes take its expansion as they are opened);
    # the others are read by the views at query time
    engine = Engine.open(path, embedder, llm, components=components, search=fresh.search)
    for section in QUERY_SECTIONS:
        if section != "search":
            setattr(engine.config, section, getattr(fresh, section))
    return engine


#: ``code_sha256`` of each component group, taken when the code was imported (so a record
#: names the code that ran, even if a file changes during a long build).
_CODE_AT_START: dict[tuple[str, ...], str] = {}


def build_or_reuse(
    dataset: str,
    components: list[Any],
    embedder_spec: str | None,
    rebuild: bool = False,
    reuse_stale: bool = False,
    config: Any = None,
) -> tuple[Any, dict[str, Any]]:
    """Open the dataset's index of this group, building it first if needed (with ``config``,
    an ``IndexConfig``; default the default one).

    The build record is written last: a directory without one is an interrupted build and is
    rebuilt, and so is an index whose record names other build code (``code_sha256``),
    unless ``reuse_stale`` (the record then says ``stale``, and the tables show it).
    """
    from graphstrata.bindings.api import LLM_CACHE_FILE
    from graphstrata.bindings.registry import make_embedder, make_llm
    from graphstrata.engine.config import IndexConfig
    from graphstrata.engine.index import Engine

    embedder = make_embedder(embedder_spec)
    identity = build_identity(dataset, components, str(embedder.name), config)
    path = index_dir(identity)
    record_path = path.with_suffix(".build.json")
    llm = make_llm(cache_path=path / LLM_CACHE_FILE)
    code = _CODE_AT_START.setdefault(tuple(c.name for c in components), code_sha256(components))
    if reuse_stale and not rebuild and not record_path.exists():
        other = latest_built(dataset, components, str(embedder.name), config)
        if other is not None:
            path, record_path = other, other.with_suffix(".build.json")
            llm = make_llm(cache_path=path / LLM_CACHE_FILE)
    record = json.loads(record_path.read_text()) if record_path.exists() else None
    if record is not None:
        stale_identity = (
            record.get("identity", {}).get("corpus_sha256") != identity["corpus_sha256"]
        )
        if stale_identity:
            raise SystemExit(f"{record_path} indexes another corpus")
    stale = record is not None and (
        record.get("code_sha256") != code or path != index_dir(identity)
    )
    usable = not rebuild and (path / "manifest.json").exists()
    if record is not None and stale and reuse_stale and usable:
        log(f"{dataset}: reusing {path.name} although its build code changed (--reuse-stale)")
        return open_engine(path, embedder, llm, components), {**record, "stale": True}
    if stale:
        log(f"{dataset}: the build code changed since {path.name} was built; rebuilding")
    elif record and not rebuild and (path / "manifest.json").exists():
        log(f"{dataset}: reusing {path.relative_to(REPO)}")
        return open_engine(path, embedder, llm, components), record
    record_path.unlink(missing_ok=True)
    if path.exists():
        shutil.rmtree(path)
    docs = read_jsonl(DATA / dataset / "corpus.jsonl")
    log(f"{dataset}: building an index of {len(docs)} documents in {path.relative_to(REPO)}")
    cached = CachedEmbedder(embedder, INDEX_ROOT / "embed-cache")
    engine = Engine.create(path, config or IndexConfig(), cached, llm, components=components)
    last = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] > 30 or done >= total:
            last[0] = now
            log(f"{dataset}: {stage} {done}/{total}")

    load_before = load_text(1, ", ")
    report = engine.insert(docs, progress=progress)
    record = {
        "identity": {
            **{k: v for k, v in identity.items() if k != "config"},
            "config_sha256": json_sha256(identity["config"]),
        },
        "code_sha256": code,
        "report": report.to_dict(),
        "embed_cache": {"hits": cached.hits, "misses": cached.misses},
        "load_average": {"before": load_before, "after": load_text(1, ", ")},
        "built_at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    record_path.write_text(json.dumps(record, indent=1))
    log(
        f"{dataset}: built in {report.seconds:.0f} s ({report.chunks_added} chunks, "
        f"{cached.misses} texts embedded, {cached.hits} from the cache)"
    )
    return open_engine(path, embedder, llm, components), record


# ------------------------------------------------------------------ evaluation
@dataclasses.dataclass
class Questions:
    """One dataset's questions, embedded once."""

    items: list[Any]
    vectors: np.ndarray
    embed_ms: float


def embed_questions(engine: Any, items: list[Any]) -> Questions:
    texts = [q.question for q in items]
    engine.embedder.embed(texts[:1])  # warm-up
    start = time.perf_counter()
    vectors = np.concatenate(
        [
            np.asarray(engine.embedder.embed(texts[i : i + 64]), np.float32)
            for i in range(0, len(texts), 64)
        ]
    )
    return Questions(items, vectors, 1000.0 * (time.perf_counter() - start) / len(texts))


def run_mode(
    engine: Any,
    questions: Questions,
    mode: str,
    budget: int,
    chunk_map: Any,
    params: dict[str, Any] | None = None,
) -> dict:
    """Scores of every question in one mode at one budget (``params``: the mode's query
    parameters), aggregated (``questions``: the per-question scores, kept for the paired
    intervals, not written to the JSON)."""
    params = params or {}
    from graphstrata.evaluation import rank_scores, score_hits

    items = questions.items
    engine.query_vectors([items[0].question], questions.vectors[:1], mode, budget, **params)
    scores: list[dict[str, Any]] = []
    by_kind: dict[str, float] = {}
    useful: dict[str, float] = {}
    duplicates, tested = 0, False
    for start in range(0, len(items), 64):
        part = items[start : start + 64]
        results = engine.query_vectors(
            [q.question for q in part],
            questions.vectors[start : start + 64],
            mode,
            budget,
            **params,
        )
        for item, result in zip(part, results, strict=True):
            score = score_hits(result.nodes, item, chunk_map)
            score.update(rank_scores(result.report.get("ranked"), item, chunk_map))
            score.update(
                id=item.id,
                type=item.type,
                search_ms=1000.0 * float(result.report["search_seconds"]),
                dense_weight=result.report.get("fusion", {}).get("dense_weight"),
            )
            for kind, tokens in result.report.get("tokens_by_kind", {}).items():
                by_kind[kind] = by_kind.get(kind, 0.0) + tokens
            for kind, tokens in retrieval_compare.evidence_tokens(
                result.nodes, item.gold_facts
            ).items():
                useful[kind] = useful.get(kind, 0.0) + tokens
            if "fusion" in result.report:
                tested = True
                duplicates += int(result.report["fusion"].get("duplicates", 0))
            scores.append(score)
    out = summarize(scores, {k: v / len(items) for k, v in sorted(by_kind.items())})
    if tested:
        out["overall"]["duplicates"] = duplicates / len(items)
    out["overall"]["evidence_tokens_by_kind"] = {
        k: v / len(items) for k, v in sorted(useful.items())
    }
    out["questions"] = scores
    return out


def summarize(scores: list[dict[str, Any]], tokens_by_kind: dict[str, float]) -> dict:
    from graphstrata.evaluation import aggregate

    def agg(rows: list[dict[str, Any]]) -> dict[str, Any]:
        out = aggregate(rows)
        search = [float(r["search_ms"]) for r in rows]
        out["search_ms_p50"] = float(np.percentile(search, 50))
        out["search_ms_p99"] = float(np.percentile(search, 99))
        return out

    types = list(dict.fromkeys(s["type"] for s in scores))
    return {
        "overall": {**agg(scores), "tokens_by_kind": tokens_by_kind},
        "by_type": {t: agg([s for s in scores if s["type"] == t]) for t in types},
    }


def evaluate_dataset(
    dataset: str,
    budgets: list[int],
    limit: int | None,
    groups: list[list[Any]],
    embedder_spec: str | None,
    rebuild: bool,
    sweep: Sequence[str],
    reuse_stale: bool = False,
) -> dict[str, Any]:
    """Every mode of ``groups``' indexes at each budget, then the sweeps named in ``sweep``
    (``SWEEPS``) at the headline budget."""
    from graphstrata.evaluation import ChunkMap, load_qa

    engines = []
    failed: list[str] = []
    for comps in groups:
        try:
            engines.append(build_or_reuse(dataset, comps, embedder_spec, rebuild, reuse_stale))
        except Exception as exc:  # one group failing leaves the others' rows
            names = ",".join(c.name for c in comps)
            log(f"{dataset}: building [{names}] failed: {exc!r}")
            failed.append(f"building the index of [{names}] failed: {exc!r}")
    if not engines:
        raise SystemExit(f"{dataset}: no index could be built")
    items = load_qa(DATA / dataset / "qa.jsonl")[:limit]
    questions = embed_questions(engines[0][0], items)
    log(f"{dataset}: {len(items)} questions embedded, {questions.embed_ms:.1f} ms each")
    served: dict[str, int] = {}
    for g, (engine, _) in enumerate(engines):
        for mode in engine.modes:
            served.setdefault(mode, g)
    chunk_maps = {g: ChunkMap.from_snapshot(e.state.snapshot) for g, (e, _) in enumerate(engines)}
    results: dict[int, dict[str, Any]] = {}
    loads: dict[int, str] = {}
    for budget in budgets:
        results[budget] = {}
        for mode in MODES:
            if mode not in served:
                continue
            engine = engines[served[mode]][0]
            log(f"{dataset}: {mode} at {budget} tokens")
            results[budget][mode] = run_mode(
                engine, questions, mode, budget, chunk_maps[served[mode]]
            )
        loads[budget] = load_text(1, ", ")
    key = retrieval_compare.headline(dataset)
    flat = results.get(HEADLINE_BUDGET, {})
    sweeps = (
        run_sweep(engines[0][0], questions, chunk_maps[0], key, flat) if "fusion" in sweep else {}
    )
    if "bias" in sweep and "detailed" in served:
        g = served["detailed"]
        sweeps.update(run_bias_sweep(engines[g][0], questions, chunk_maps[g], key))
    if "graph" in sweep and "graph" in served:
        g = served["graph"]
        sweeps.update(run_graph_sweep(engines[g][0], questions, chunk_maps[g], key))
    return {
        "records": [rec for _, rec in engines],
        "stats": [e.stats() for e, _ in engines],
        "served": {m: g for m, g in served.items()},
        "questions": len(items),
        "embed_ms": questions.embed_ms,
        "results": results,
        "loads": loads,
        "sweep": sweeps,
        "sweep_load": load_text(1, ", "),
        "failed": failed,
    }


#: Fusion variants of the sweep: (label, FusionConfig overrides). ``w`` is the configured
#: dense weight; ``agreement`` / ``spread`` s=S d=D the per-query weight
#: (``FusionConfig.adaptive``, ``adaptive_strength``, ``adaptive_depth``).
SWEEP: tuple[tuple[str, dict[str, Any]], ...] = (
    ("dense only", {"method": "dense"}),
    ("sparse only", {"method": "sparse"}),
    ("rrf k=60 w=0.5", {"method": "rrf", "rrf_k": 60, "dense_weight": 0.5, "adaptive": "off"}),
    *(
        (f"score w={w}, fixed", {"dense_weight": w, "adaptive": "off"})
        for w in (0.2, 0.25, 0.3, 0.4, 0.5)
    ),
    *(
        (
            f"score w={w}, {signal} s={st} d={d}",
            {"dense_weight": w, "adaptive": signal, "adaptive_strength": st, "adaptive_depth": d},
        )
        for signal in ("agreement", "spread")
        for w, st, d in (
            (0.2, 2.0, 5),
            (0.2, 4.0, 5),
            (0.3, 2.0, 5),
            (0.3, 4.0, 5),
            (0.3, 8.0, 5),
            (0.3, 4.0, 3),
            (0.4, 4.0, 5),
        )
    ),
    ("defaults, term_decay 1 (no coverage)", {"term_decay": 1.0}),
    ("defaults, no feedback", {"feedback_docs": 0}),
    ("defaults, feedback_docs 2", {"feedback_docs": 2}),
    ("defaults, feedback_weight 0.5", {"feedback_weight": 0.5}),
    ("defaults, feedback_terms 0 (no sparse feedback)", {"feedback_terms": 0}),
    ("defaults, feedback_terms 2", {"feedback_terms": 2}),
    ("defaults, feedback_terms 5", {"feedback_terms": 5}),
    ("defaults, feedback_term_weight 0.2", {"feedback_term_weight": 0.2}),
    ("defaults, feedback_term_weight 0.33", {"feedback_term_weight": 0.33}),
    ("defaults, adaptive_depth 10", {"adaptive_depth": 10}),
    ("defaults, term_decay 0.8", {"term_decay": 0.8}),
    ("defaults, term_decay 0.7", {"term_decay": 0.7}),
    # the rest of FusionConfig's defaults, each measured on all three sets (issue 48)
    *(
        (f"rrf k={k} w=0.5", {"method": "rrf", "rrf_k": k, "dense_weight": 0.5, "adaptive": "off"})
        for k in (10, 100)
    ),
    ("defaults, complete_scores off", {"complete_scores": False}),
    ("defaults, max_overlap 0.5", {"max_overlap": 0.5}),
    ("defaults, max_overlap 1.01 (no deduplication)", {"max_overlap": 1.01}),
    (
        "defaults, feedback_in_hierarchy (collapsed: the feedback round on)",
        {"feedback_in_hierarchy": True},
    ),
)
SWEEP_MODES = ("hybrid", "collapsed")
#: The stages ``GRAPH_LEAN`` takes away, in turn, and the parameters that take each away.
_LEAN_STEPS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("no BM25 entries", {"sparse_top_k": 0}),
    ("and no second hop", {"bridge_weight": 0.0}),
    ("and no coverage", {"term_decay": 1.0}),
    ("and 1 walk step", {"ppr_iters": 1}),
)
#: ``graph`` with its stages taken away one after another: each variant takes away what its
#: label names and everything the variants before it took away (decision 0040: what the
#: latency bound of issue 48 would cost; timed by ``python -m benchmarks.kernels.variant_latency
#: graph-lean``).
GRAPH_LEAN: tuple[tuple[str, dict[str, Any]], ...] = tuple(
    zip(
        [label for label, _ in _LEAN_STEPS],
        itertools.accumulate((step for _, step in _LEAN_STEPS), lambda a, b: {**a, **b}),
        strict=True,
    )
)
#: Variants of ``graph`` (query parameters, ``HeterographConfig``): which kinds the walk's
#: budget goes to, how many BM25 entry points it takes (``sparse_top_k``, at 2,000 tokens and
#: scaled with the budget) and the query-term coverage of its ranking (``term_decay``) at each
#: budget. Each is (label, parameters, budget).
GRAPH_SWEEP: tuple[tuple[str, dict[str, Any], int], ...] = (
    ("graph: defaults", {}, HEADLINE_BUDGET),
    *((f"graph: sparse_top_k {k}", {"sparse_top_k": k}, HEADLINE_BUDGET) for k in (20, 30, 60, 80)),
    ("graph: entry_top_k 20", {"entry_top_k": 20}, HEADLINE_BUDGET),
    ("graph: sparse_top_k 80 (40 entry points), 1000 tokens", {"sparse_top_k": 80}, 1000),
    ("graph: text_share 0.5", {"text_share": 0.5}, HEADLINE_BUDGET),
    ("graph: text_share 0.8", {"text_share": 0.8}, HEADLINE_BUDGET),
    ("graph: structured_share 0.05", {"structured_share": 0.05}, HEADLINE_BUDGET),
    ("graph: structured_share 0.1", {"structured_share": 0.1}, HEADLINE_BUDGET),
    ("graph: token_exponent 0.5", {"token_exponent": 0.5}, HEADLINE_BUDGET),
    *(
        (f"graph: {name}, {budget} tokens", params, budget)
        for name, params in (
            ("defaults", {}),
            ("term_decay 1 (no coverage)", {"term_decay": 1.0}),
            ("term_decay 0.95", {"term_decay": 0.95}),
            ("term_decay 0.8", {"term_decay": 0.8}),
        )
        for budget in BUDGETS
    ),
    # 20 BM25 entry points at every budget, as before they scaled with it (decision 0038;
    # sparse_top_k is the count at ranking.ENTRY_BUDGET, 2,000 tokens)
    *(
        (f"graph: 20 entry points, {budget} tokens", {"sparse_top_k": 20 * 2000 // budget}, budget)
        for budget in BUDGETS
    ),
    # the walk exact, and a lighter push threshold, at every budget (decision 0039)
    *(
        (f"graph: ppr_epsilon {eps:g}, {budget} tokens", {"ppr_epsilon": eps}, budget)
        for eps in (0.0, 2e-6)
        for budget in BUDGETS
    ),
    *((f"graph: lean, {name}", params, HEADLINE_BUDGET) for name, params in GRAPH_LEAN),
    # the rest of HeterographConfig's query defaults, one at a time, on all three sets
    *(
        (f"graph: {name} {value}", {name: value}, HEADLINE_BUDGET)
        for name, values in (
            ("exact_match_weight", (0.25, 1.0)),
            ("vector_match_weight", (0.5, 2.0)),
            ("sparse_match_weight", (1.0, 3.0)),
            ("entry_top_k", (5,)),
            ("ppr_alpha", (0.3, 0.7)),
            ("ppr_iters", (1, 3)),
            ("text_share", (0.25,)),
            ("token_exponent", (1.0,)),
            ("bridge_weight", (0.0, 0.6)),
            ("bridge_max_units", (64,)),
            ("match_query_ngrams", (True,)),
        )
        for value in values
    ),
)


#: Variants of the biased hierarchy modes (query parameters, ``HierarchyConfig``): the share
#: ``bias_share`` and whether only competing candidates take it (``compete``).
BIAS_SWEEP: tuple[tuple[str, dict[str, Any]], ...] = (
    ("biased: defaults", {}),
    ("biased: compete off (EraRAG's share)", {"compete": False}),
    ("biased: bias_share 0.5", {"bias_share": 0.5}),
    ("biased: bias_share 0.9", {"bias_share": 0.9}),
)
BIAS_MODES = ("detailed", "summarized")
#: The sweeps ``--sweeps`` may name.
SWEEPS = ("fusion", "graph", "bias")


def run_bias_sweep(engine: Any, questions: Questions, chunk_map: Any, key: str) -> dict[str, Any]:
    """``BIAS_MODES`` under each ``BIAS_SWEEP`` variant at the headline budget."""
    out: dict[str, Any] = {}
    modes = [m for m in BIAS_MODES if m in engine.modes]
    for label, params in BIAS_SWEEP:
        out[label] = {
            m: run_mode(engine, questions, m, HEADLINE_BUDGET, chunk_map, params)["overall"]
            for m in modes
        }
        log(f"sweep {label}: " + ", ".join(f"{m} {out[label][m][key]:.3f}" for m in modes))
    return out


def run_graph_sweep(engine: Any, questions: Questions, chunk_map: Any, key: str) -> dict[str, Any]:
    """``graph`` under each ``GRAPH_SWEEP`` variant at its budget."""
    out: dict[str, Any] = {}
    for label, params, budget in GRAPH_SWEEP:
        res = run_mode(engine, questions, "graph", budget, chunk_map, params)
        out[label] = {"graph": res["overall"]}
        log(f"sweep {label}: graph {res['overall'][key]:.3f}")
    return out


def run_sweep(
    engine: Any, questions: Questions, chunk_map: Any, key: str, flat: dict[str, Any]
) -> dict[str, Any]:
    """``SWEEP_MODES`` under each ``SWEEP`` variant at the headline budget (``key``: the
    dataset's headline measure, logged; ``flat``: the headline budget's results, whose
    ``naive`` and ``bm25`` questions say where each variant's dense weight went,
    ``weights_by_winner``)."""
    from graphstrata.engine.config import FusionConfig

    out: dict[str, Any] = {}
    modes = [m for m in SWEEP_MODES if m in engine.modes]
    for label, overrides in SWEEP:
        out[label] = {}
        for mode in modes:
            engine.config.fusion = dataclasses.replace(FusionConfig(), **overrides)
            try:
                res = run_mode(engine, questions, mode, HEADLINE_BUDGET, chunk_map)
            finally:
                engine.config.fusion = FusionConfig()
            out[label][mode] = {
                **res["overall"],
                "weights_by_winner": retrieval_compare.weights_by_winner(
                    flat, res["questions"], key
                ),
            }
        log(f"sweep {label}: " + ", ".join(f"{m} {out[label][m][key]:.3f}" for m in modes))
    return out


# ------------------------------------------------------------------ report
def cell(agg: dict[str, Any], key: str) -> str:
    value = agg.get(key)
    if value is None:
        return "–"
    if key == "answer_contained":
        return f"{value:.3f} ({agg['answer_contained_n']})"
    if key == "tokens":
        return f"{value:.0f}"
    if key.startswith("search_ms"):
        return f"{value:.1f}"
    return f"{value:.3f}"


def kinds_cell(by_kind: dict[str, float] | None) -> str:
    if not by_kind:
        return "–"
    return " ".join(f"{k} {v:.0f}" for k, v in by_kind.items())


HEADER = [
    "mode",
    "n",
    "doc R",
    "fact R text",
    "fact R chunk",
    "evidence R",
    "R@5",
    "MRR@10",
    "answer (n)",
    "tokens",
    "tokens by kind",
    "dups",
    "search p50 ms",
    "search p99 ms",
]


def row(mode: str, agg: dict[str, Any], by_kind: dict[str, float] | None = None) -> list[str]:
    return [
        mode,
        str(agg["questions"]),
        *(
            cell(agg, k)
            for k in (
                "doc_recall",
                "fact_recall_text",
                "fact_recall_chunk",
                "evidence_recall",
                "passage_recall@5",
                "mrr@10",
            )
        ),
        cell(agg, "answer_contained"),
        cell(agg, "tokens"),
        kinds_cell(by_kind),
        f"{agg['duplicates']:.2f}" if "duplicates" in agg else "–",
        cell(agg, "search_ms_p50"),
        cell(agg, "search_ms_p99"),
    ]


def index_line(dataset: str, data: dict[str, Any]) -> list[str]:
    lines = []
    for record, stats in zip(data["records"], data["stats"], strict=True):
        nodes = ", ".join(f"{k} {v}" for k, v in sorted(stats["nodes"].items()))
        report = record["report"]
        served = sorted(m for m, g in data["served"].items() if data["stats"][g] is stats)
        lines.append(
            f"- **{dataset}** [{', '.join(record['identity']['components'])}]: "
            f"{stats['documents']} documents, nodes {nodes}; embedder "
            f"{stats['embedder']['name']}, LLM {stats['llm']}; built in "
            f"{report['seconds']:.0f} s ({record['built_at']}, load "
            f"{record.get('load_average', {}).get('after', '?')}; embedded "
            f"{record.get('embed_cache', {}).get('misses', '?')} texts, "
            f"{record.get('embed_cache', {}).get('hits', '?')} from the embedding cache); "
            f"serves here: {', '.join(served)}"
            + (
                "; **stale**: built by other build code than this run's (`--reuse-stale`)"
                if record.get("stale")
                else ""
            )
        )
    return lines


def write_markdown(
    all_data: dict[str, dict[str, Any]], budgets: list[int], command: str, embedder: str
) -> str:
    from graphstrata.evaluation import markdown_table

    lines = [
        "# Retrieval quality",
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine()}; load average (1, 5, 15 min) beside each table: other jobs "
        "shared the cores, so latencies and build times are upper bounds. "
        f"Written {time.strftime('%Y-%m-%d %H:%M')}.  ",
        f"Embedder: `{embedder}` for chunks, summaries and questions (all-MiniLM-L6-v2; "
        "`minilm-onnx` computes the same vectors as the torch default within 1e-5 cosine); "
        "LLM: the built-in extractive one.",
        "",
        "Measures (definitions and tie rules in `graphstrata/evaluation/scoring.py`): "
        "**doc R** = share of gold documents with a retrieved chunk or semantic unit; "
        "**fact R text** = gold evidence sentences found verbatim in one retrieved node; "
        "**fact R chunk** = gold sentences whose source chunk was retrieved; **evidence R** = "
        "evidence-token recall, the share of each gold fact's content words (BM25 terms) in "
        "the retrieved text (the measure of paraphrased gold); **R@5**, **MRR@10** = passage "
        "recall in the first 5 and reciprocal rank of the first gold passage in the first 10 "
        "of the mode's ranked list before packing (a gold passage = a source chunk of a gold "
        "fact; none on paraphrased gold); **answer (n)** = "
        "a gold answer in the retrieved text, over the n questions whose answer is not a "
        "yes/no verdict or 'Insufficient information.'; **tokens** = retrieved tokens used "
        "(mean), **tokens by kind** = the same per node kind (T chunk, L summary, S/A/H/R "
        "graph nodes); **dups** = candidates skipped per question as near-duplicates of "
        "packed text (`FusionConfig.max_overlap`; only the fused modes test it); "
        "**search p50/p99 ms** = the mode's search per question, query "
        "embedding apart. Recall means are over the questions where the measure applies "
        "(MultiHop-RAG's null queries have no gold).",
        "",
        "Indexes:",
        "",
    ]
    for name, data in all_data.items():
        lines += index_line(name, data)
        lines.append(
            f"  questions: {data['questions']}, embedded once each ({data['embed_ms']:.1f} ms "
            "per question in batches of 64)"
        )
        lines += [f"  **{note}**" for note in data.get("failed", [])]
    lines.append("")
    head = HEADLINE_BUDGET if HEADLINE_BUDGET in budgets else budgets[0]
    rows = []
    for name, data in all_data.items():
        for mode in MODES:
            res = data["results"][head].get(mode)
            if res is None:
                rows.append([name, mode, "–", "unavailable", *[""] * (len(HEADER) - 3)])
            else:
                rows.append([name, *row(mode, res["overall"], res["overall"]["tokens_by_kind"])])
    loads = "; ".join(f"{n} {d['loads'][head]}" for n, d in all_data.items())
    lines += [
        f"## All datasets at {head} tokens",
        "",
        f"Load average at the end of each dataset's {head}-token evaluation: {loads}.",
        "",
        markdown_table(["dataset", *HEADER], rows),
        "",
    ]
    for name, data in all_data.items():
        lines += [f"## {name}", ""]
        rows = [
            [str(b), *row(m, r["overall"], r["overall"]["tokens_by_kind"])]
            for b in budgets
            for m, r in data["results"][b].items()
        ]
        lines += [
            "By budget (load average after each budget: "
            + "; ".join(f"{b}: {data['loads'][b]}" for b in budgets)
            + "):",
            "",
            markdown_table(["budget", *HEADER], rows),
            "",
        ]
        type_header = ["mode", "type", *HEADER[1:10], *HEADER[12:]]
        rows = []
        for mode, res in data["results"][head].items():
            for qtype, agg in res["by_type"].items():
                r = row(mode, agg)
                rows.append([mode, qtype, *r[1:10], *r[12:]])
        lines += [
            f"By question type at {head} tokens (load {data['loads'][head]}):",
            "",
            markdown_table(type_header, rows),
            "",
        ]
        key = retrieval_compare.headline(name)
        lines += [
            f"Each mode against the best of naive and bm25 on {key} at that budget: mean "
            "paired difference in points with its 95 % paired bootstrap interval "
            "(`graphstrata/evaluation/compare.py`, 2,000 resamples, seed 0):",
            "",
            markdown_table(
                retrieval_compare.ci_header(name),
                retrieval_compare.ci_rows(name, data["results"]),
            ),
            "",
            *retrieval_compare.weight_lines(name, data["results"][head]),
            "",
            f"Criteria of issue 48 on {name} ({key}):",
            "",
            *retrieval_compare.criteria(name, data["results"], head),
            "",
        ]
    rows = [
        r
        for name, data in all_data.items()
        for r in retrieval_compare.evidence_rows(
            name, data["results"][head], ("hybrid", "collapsed", "graph")
        )
    ]
    lines += [
        f"## Where the budget meets the evidence ({head} tokens)",
        "",
        "Per node kind: tokens packed per question, tokens of hits that hold evidence "
        f"(at least {retrieval_compare.EVIDENCE_SHARE:.0%} of one gold fact's content words) "
        "and their share.",
        "",
        markdown_table(["dataset", "mode", "kind", "tokens", "evidence tokens", "share"], rows),
        "",
    ]
    if any(d["sweep"] for d in all_data.values()):
        lines += sweep_markdown(all_data)
        lines += bias_sweep_markdown(all_data)
        lines += graph_sweep_markdown(all_data)
    return "\n".join(lines).rstrip() + "\n"


def sweep_markdown(all_data: dict[str, dict[str, Any]]) -> list[str]:
    from graphstrata.evaluation import markdown_table

    names = [n for n, d in all_data.items() if SWEEP[0][0] in d["sweep"]]
    if not names:
        return []
    header = ["variant"] + [
        f"{n} {m} {k}"
        for n in names
        for m in SWEEP_MODES
        for k in (retrieval_compare.headline(n), "doc R", "w naive/bm25 better")
    ]
    rows = []
    for label, _ in SWEEP:
        cells = [label]
        for n in names:
            for m in SWEEP_MODES:
                agg = all_data[n]["sweep"].get(label, {}).get(m)
                key = retrieval_compare.headline(n)
                cells += (
                    [
                        cell(agg, key),
                        cell(agg, "doc_recall"),
                        retrieval_compare.weights_cell(agg.get("weights_by_winner", {})),
                    ]
                    if agg
                    else ["–", "–", "–"]
                )
        rows.append(cells)
    loads = "; ".join(f"{n} {all_data[n]['sweep_load']}" for n in names)
    from graphstrata.engine.config import FusionConfig

    defaults = ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(FusionConfig()).items())
    return [
        f"## Fusion choice at {HEADLINE_BUDGET} tokens",
        "",
        "Each row overrides the `FusionConfig` defaults (`graphstrata/engine/config.py`) for "
        "`hybrid` and `collapsed`; `w` is `dense_weight` (the BM25 list gets 1 - w); "
        "`score` = convex combination of min-max normalized scores, re-ranked by query-term "
        "coverage unless `term_decay` is 1 (`core.fusion.coverage_order`; `score` rows keep "
        "the default `term_decay`); every fused row (rrf, score) of `hybrid` takes the "
        "default feedback round (`feedback_docs`: the query vector moved toward the best "
        "fused candidate searches again, `feedback_weight`, `core.fusion.feedback_vector`; "
        "that candidate's heaviest terms join the BM25 query, `feedback_terms` at "
        "`feedback_term_weight`, `SparseIndex.feedback_terms`), "
        "`collapsed` only where `feedback_in_hierarchy` is set; `fixed` = the same weight "
        "for every query; `agreement` / `spread` s=S d=D = the per-query weight "
        "(`core.fusion.query_dense_weight`: `adaptive`, strength `adaptive_strength`, the "
        "`adaptive_depth` best of each list compared), moved from w; the headline measure is "
        "fact R text, evidence R on the paraphrased novels; `w naive/bm25 better` = the "
        "mean dense weight the variant gave the questions where naive beat bm25 / bm25 beat "
        "naive on it (a per-query weight should be higher on the first); "
        f"`defaults` = `FusionConfig()` of this run ({defaults}). "
        f"Load average at the end: {loads}.",
        "",
        markdown_table(header, rows),
        "",
    ]


def bias_sweep_markdown(all_data: dict[str, dict[str, Any]]) -> list[str]:
    """The ``BIAS_SWEEP`` table (datasets whose hierarchy index was swept)."""
    from graphstrata.evaluation import markdown_table

    names = [n for n, d in all_data.items() if BIAS_SWEEP[0][0] in d["sweep"]]
    if not names:
        return []
    header = ["variant"] + [
        f"{n} {m} {k}"
        for n in names
        for m in BIAS_MODES
        for k in (retrieval_compare.headline(n), "tokens by kind")
    ]
    rows = []
    for label, _ in BIAS_SWEEP:
        cells = [label]
        for n in names:
            for m in BIAS_MODES:
                agg = all_data[n]["sweep"].get(label, {}).get(m)
                key = retrieval_compare.headline(n)
                cells += (
                    [cell(agg, key), kinds_cell(agg.get("tokens_by_kind"))] if agg else ["–", "–"]
                )
        rows.append(cells)
    return [
        f"## Biased hierarchy modes at {HEADLINE_BUDGET} tokens",
        "",
        "Each row sets `detailed` and `summarized` query parameters (`HierarchyConfig`): "
        "`bias_share` = share of the budget the favoured side (chunks / summaries) takes "
        "first, `compete` = whether only its candidates that score at least as well as every "
        "candidate below them in the tree take it (decision 0035).",
        "",
        markdown_table(header, rows),
        "",
    ]


def graph_sweep_markdown(all_data: dict[str, dict[str, Any]]) -> list[str]:
    """The ``GRAPH_SWEEP`` table (datasets whose graph index was swept)."""
    from graphstrata.evaluation import markdown_table

    names = [n for n, d in all_data.items() if GRAPH_SWEEP[0][0] in d["sweep"]]
    if not names:
        return []
    header = ["variant"] + [
        f"{n} graph {k}" for n in names for k in (retrieval_compare.headline(n), "doc R")
    ]
    rows = []
    for label, _, _ in GRAPH_SWEEP:
        cells = [label]
        for n in names:
            agg = all_data[n]["sweep"].get(label, {}).get("graph")
            key = retrieval_compare.headline(n)
            cells += [cell(agg, key), cell(agg, "doc_recall")] if agg else ["–", "–"]
        rows.append(cells)
    return [
        "## Graph budget",
        "",
        f"At {HEADLINE_BUDGET} tokens unless the row names a budget. Each row sets `graph` "
        "query parameters (`HeterographConfig`): `text_share` = share "
        "of the budget packed with chunks alone first, `structured_share` = most of the "
        "budget attributes, elements and relationships take, `token_exponent` = the "
        "ranking's tokens exponent, `term_decay` = the query-term coverage of the ranking "
        "(`core.fusion.coverage_rerank`; 1: off).",
        "",
        markdown_table(header, rows),
        "",
    ]


def write_json(all_data: dict[str, dict[str, Any]], command: str, embedder: str) -> dict:
    return {
        "command": command,
        "machine": machine(),
        "embedder": embedder,
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
        "datasets": {
            name: {
                **{k: v for k, v in data.items() if k != "results"},
                "results": {
                    str(b): {
                        m: {k: v for k, v in r.items() if k != "questions"} for m, r in by.items()
                    }
                    for b, by in data["results"].items()
                },
            }
            for name, data in all_data.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--budgets", default=",".join(str(b) for b in BUDGETS))
    parser.add_argument("--limit", type=int, default=None, help="first N questions per dataset")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the indexes")
    parser.add_argument("--embedder", default=None, help="embedder spec (default: packaged)")
    parser.add_argument(
        "--groups",
        default=DEFAULT_GROUPS,
        help="indexes to build: component lists joined by '+' (default: %(default)s)",
    )
    parser.add_argument("--no-sweep", action="store_true", help="skip every sweep")
    parser.add_argument(
        "--sweeps",
        default=",".join(SWEEPS),
        help="sweeps to run at the headline budget, of %(default)s (fusion: hybrid and "
        "collapsed; graph; bias: detailed and summarized)",
    )
    parser.add_argument(
        "--skip-group",
        action="append",
        default=[],
        metavar="DATASET:GROUP",
        help="do not build or evaluate GROUP (e.g. heterograph) on DATASET; its modes are "
        "listed as unavailable (repeatable)",
    )
    parser.add_argument("--build-only", action="store_true", help="build the indexes and stop")
    parser.add_argument(
        "--reuse-stale",
        action="store_true",
        help="reuse indexes built by other build code (marked 'stale' in the tables)",
    )
    parser.add_argument("--out", default=str(RESULTS / "retrieval.md"), help="Markdown output")
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        print(f"skipped: {DATA} not found (the shared evaluation data is absent)")
        return 0
    datasets = [d for d in args.datasets.split(",") if d]
    unknown = [d for d in datasets if not (DATA / d / "qa.jsonl").exists()]
    if unknown:
        parser.error(f"no such dataset under {DATA}: {unknown}")
    budgets = [int(b) for b in args.budgets.split(",") if b]
    sweeps = [] if args.no_sweep else [x for x in args.sweeps.split(",") if x]
    if set(sweeps) - set(SWEEPS):
        parser.error(f"unknown sweeps {sorted(set(sweeps) - set(SWEEPS))}; known: {SWEEPS}")
    groups = [components_for([c for c in g.split(",") if c]) for g in args.groups.split("+") if g]
    for comps in groups:  # the build code as imported now (see ``_CODE_AT_START``)
        _CODE_AT_START[tuple(c.name for c in comps)] = code_sha256(comps)
    command = command_line(__spec__.name, argv or None)
    if args.build_only:
        for d in datasets:
            for comps in groups:
                build_or_reuse(d, comps, args.embedder, args.rebuild, args.reuse_stale)
        return 0
    skipped = {}
    for spec in args.skip_group:
        dataset, _, group = spec.partition(":")
        skipped.setdefault(dataset, set()).add(group)
    all_data = {
        d: evaluate_dataset(
            d,
            budgets,
            args.limit,
            [g for g in groups if ",".join(c.name for c in g) not in skipped.get(d, set())],
            args.embedder,
            args.rebuild,
            sweeps,
            args.reuse_stale,
        )
        for d in datasets
    }
    from graphstrata.bindings.registry import make_embedder

    embedder = str(make_embedder(args.embedder).name)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(write_markdown(all_data, budgets, command, embedder), encoding="utf-8")
    common.write_json(out.with_suffix(".json"), write_json(all_data, command, embedder))
    log(f"wrote {out} and {out.with_suffix('.json')}")
    print(out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
