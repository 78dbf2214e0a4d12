"""Tuning ``graph`` (NodeRAG search) against ``naive`` and ``bm25`` (issue #12, part B).

    python -m benchmarks.quality.graph_tuning --dataset hotpotqa --before --variants ablations
    python -m benchmarks.quality.graph_tuning --dataset multihop_rag --before --variants ablations
    python -m benchmarks.quality.graph_tuning --dataset multihop_rag --docs 150 --variants ablations
    python -m benchmarks.quality.graph_tuning --dataset hotpotqa --rules refined

For one dataset of ``../shared/data`` it builds (or reuses) an index with the heterograph and
the sparse component (the hierarchy is switched off: ``graph`` does not read it), default
``IndexConfig`` otherwise, CPU backends: the extractive LLM with the entity rules named by
``--rules`` (``standard``, the backend's default, or ``refined``; ``ENTITY_RULES``) and the embedder named by
``--embedder`` (default ``minilm-onnx``: the packaged all-MiniLM-L6-v2 on ONNX Runtime, the
same function as the torch model, faster on these cores). Embeddings are cached by text
under ``build/graph-tuning/embed-cache``, so a rebuild after a change of the entity rules
embeds only the texts that changed. An index is rebuilt when the sources it depends on
change (``build_files``: everything but the query side).

Then it runs ``graphstrata.evaluation.evaluate`` at ``--budget`` tokens (default 2,000) for
``naive`` and ``bm25`` (unless ``--no-baselines``), for ``graph`` as it was before issue #12
(``--before``: ``before_view``, on the same index) and for ``graph`` under each named
variant (``VARIANTS``: overrides of ``HeterographConfig`` fields on top of this code's
defaults; ``--variants ablations`` runs ``ABLATIONS``), and writes
``benchmarks/results/graph_tuning-<dataset>[-<N>docs][-<rules>].{md,json}`` (``--out``
changes the stem). Search latency is the mode's own time per question (the engine's
``search_seconds``; the query embedding is apart), p50 and p99 over the questions; other
work on the machine inflates it (the load average is in the table's header).

``--docs N`` (MultiHop-RAG only) builds a subset for quick tuning: questions (null queries
excluded) are taken in a seeded random order while the union of their gold documents stays
within ``N``; the subset is that union, topped up to ``N`` with other documents (none are
needed at 150: the greedy union fills it); every non-null question whose gold documents all
lie in the subset is evaluated (274 at 150).

Skips cleanly (exit 0) when ``../shared/data`` is absent. Indexes live under
``build/graph-tuning/`` (git-ignored); the data is only read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    DATA,
    REPO,
    RESULTS,
    command_line,
    load_text,
    log,
    machine,
    read_jsonl,
    write_json,
)
from benchmarks.quality.retrieval import CachedEmbedder  # the one embedding cache

ROOT = REPO / "build" / "graph-tuning"
MEASURES = ("doc_recall", "fact_recall_text", "fact_recall_chunk", "answer_contained")

#: Named overrides of the ``graph`` defaults (``HeterographConfig`` fields). ``default`` is
#: the shipped configuration; the others each change one thing, for the ablation table.
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    # entry points
    "no_exact": {"exact_match_weight": 0.0},
    "no_vector": {"entry_top_k": 0},
    "no_sparse": {"sparse_top_k": 0},
    "weights_111": {
        "exact_match_weight": 1.0,
        "vector_match_weight": 1.0,
        "sparse_match_weight": 1.0,
    },
    "exact_1": {"exact_match_weight": 1.0},
    "sparse_1": {"sparse_match_weight": 1.0},
    "entry_20": {"entry_top_k": 20},
    "sparse_50": {"sparse_top_k": 50},
    "sparse_all": {"sparse_kinds": "TSAHR"},
    "ngrams": {"match_query_ngrams": True},
    "no_titles": {"title_edge_weight": 0.0},
    # walk
    "alpha_03": {"ppr_alpha": 0.3},
    "alpha_07": {"ppr_alpha": 0.7},
    "iters_1": {"ppr_iters": 1},
    "iters_3": {"ppr_iters": 3},
    "semantic_0": {"semantic_edge_weight": 0.0},
    "semantic_02": {"semantic_edge_weight": 0.2},
    "bridge_0": {"bridge_weight": 0.0},
    "bridge_06": {"bridge_weight": 0.6},
    "bridge_1": {"bridge_weight": 1.0},
    "bridge_src_10": {"bridge_sources": 10},
    "bridge_units_64": {"bridge_max_units": 64},
    # ranking and packing
    "gamma_0": {"token_exponent": 0.0},
    "gamma_05": {"token_exponent": 0.5},
    "gamma_1": {"token_exponent": 1.0},
    "text_25": {"text_share": 0.25},
    "text_100": {"text_share": 1.0},
    "struct_0": {"structured_share": 0.0},
    "struct_01": {"structured_share": 0.1},
    "struct_1": {"structured_share": 1.0},
}
#: The ablation rows of the published tables.
ABLATIONS = (
    "default,no_exact,no_vector,no_sparse,weights_111,exact_1,sparse_1,entry_20,sparse_50,"
    "sparse_all,ngrams,no_titles,alpha_03,alpha_07,iters_1,iters_3,semantic_0,semantic_02,"
    "bridge_0,bridge_06,bridge_1,bridge_src_10,bridge_units_64,gamma_0,gamma_05,gamma_1,"
    "text_25,text_100,struct_0,struct_01,struct_1"
)
#: Fields the view reads when it is built (the walk's CSR), not per query.
VIEW_FIELDS = ("semantic_edge_weight", "title_edge_weight", "sparse_kinds")


# ------------------------------------------------------------------ data
def multihop_subset(n_docs: int, seed: int = 12) -> tuple[list[dict], list[dict], dict]:
    """(documents, questions, description) of a MultiHop-RAG subset (module docstring)."""
    docs = read_jsonl(DATA / "multihop_rag" / "corpus.jsonl")
    qa = [q for q in read_jsonl(DATA / "multihop_rag" / "qa.jsonl") if q.get("gold_doc_ids")]
    rng = random.Random(seed)
    order = list(range(len(qa)))
    rng.shuffle(order)
    chosen: set[str] = set()
    for i in order:
        gold = set(qa[i]["gold_doc_ids"])
        if len(chosen | gold) <= n_docs:
            chosen |= gold
    by_id = {d["doc_id"]: d for d in docs}
    others = [d["doc_id"] for d in docs if d["doc_id"] not in chosen]
    rng.shuffle(others)
    gold_docs = len(chosen)
    chosen |= set(others[: max(0, n_docs - len(chosen))])
    subset = [by_id[d] for d in sorted(chosen) if d in by_id]
    questions = [q for q in qa if set(q["gold_doc_ids"]) <= chosen]
    info = {
        "docs": len(subset),
        "gold_docs": gold_docs,
        "distractors": len(subset) - gold_docs,
        "questions": len(questions),
        "seed": seed,
        "by_type": {
            t: sum(1 for q in questions if q["type"] == t)
            for t in sorted({q["type"] for q in questions})
        },
    }
    return subset, questions, info


def load_dataset(dataset: str, n_docs: int | None) -> tuple[list[dict], list[dict], dict]:
    if dataset == "multihop_rag" and n_docs:
        return multihop_subset(n_docs)
    docs = read_jsonl(DATA / dataset / "corpus.jsonl")
    qa = read_jsonl(DATA / dataset / "qa.jsonl")
    return docs, qa, {"docs": len(docs), "questions": len(qa)}


# ------------------------------------------------------------------ index
def build_files() -> list[Path]:
    """Sources an index's content depends on (the heterograph's ``query/`` is query side
    only)."""
    engine = REPO / "graphstrata" / "engine"
    files = [engine / "ingest" / "chunking.py", engine / "prompts.py"]
    files += [REPO / "graphstrata" / "bindings" / "llm" / "extractive.py"]
    heterograph = engine / "heterograph"
    files += sorted(
        p for p in heterograph.rglob("*.py") if p.relative_to(heterograph).parts[0] != "query"
    )
    files += sorted((REPO / "graphstrata" / "core").glob("*.py"))
    return files


def code_sha256() -> str:
    h = hashlib.sha256()
    for path in build_files():
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def make_config() -> Any:
    from graphstrata.engine.config import IndexConfig

    cfg = IndexConfig()
    cfg.hierarchy.enabled = False
    return cfg


#: HeterographConfig fields the build reads (the others are search defaults, read per query).
BUILD_FIELDS = (
    "enabled",
    "seed",
    "betweenness_sources",
    "semantic_neighbours",
    "community_change_share",
    "attribute_tokens",
    "element_tokens",
    "decompose_tokens",
)


def build_config() -> dict[str, Any]:
    """The part of the config an index's content depends on (search defaults left out)."""
    cfg = make_config().to_dict()
    return {
        "chunking": cfg["chunking"],
        "hierarchy": {"enabled": cfg["hierarchy"]["enabled"]},
        "heterograph": {k: cfg["heterograph"][k] for k in BUILD_FIELDS},
        "vector_dtype": cfg["vector_dtype"],
    }


def make_llm(rules: str) -> Any:
    from graphstrata.bindings.llm.extractive import ExtractiveLLM

    return ExtractiveLLM(entity_rules=rules)


def components() -> list[Any]:
    from graphstrata.engine.heterograph import HeterographComponent
    from graphstrata.engine.modes.bm25 import SparseComponent

    return [HeterographComponent(), SparseComponent()]


def open_or_build(
    dataset: str, docs: list[dict], info: dict, rules: str, embedder: Any, rebuild: bool
) -> tuple[Any, dict]:
    """The index of these documents and rules, built first when absent or stale."""
    from graphstrata.bindings.api import Index
    from graphstrata.engine.index import Engine

    ident = {
        "dataset": dataset,
        "docs": sorted(d["doc_id"] for d in docs),
        "rules": rules,
        "embedder": embedder.name,
        "config": build_config(),
    }
    key = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:10]
    path = ROOT / f"{dataset}-{len(docs)}-{rules}-{key}"
    record_path = path.with_suffix(".build.json")
    code = code_sha256()
    record = json.loads(record_path.read_text()) if record_path.exists() else None
    llm = make_llm(rules)
    if record and record.get("code") == code and not rebuild and (path / "manifest.json").exists():
        log(f"{dataset}: reusing {path.relative_to(REPO)}")
        return Index(Engine.open(path, embedder, llm, components=components())), record
    if record and record.get("code") != code:
        log(f"{dataset}: build code changed since {path.name} was built; rebuilding")
    record_path.unlink(missing_ok=True)
    if path.exists():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    log(f"{dataset}: building {len(docs)} documents into {path.relative_to(REPO)}")
    index = Index(Engine.create(path, make_config(), embedder, llm, components=components()))
    last = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] > 30 or done >= total:
            last[0] = now
            log(f"{dataset}: {stage} {done}/{total}")

    hits0, misses0 = embedder.hits, embedder.misses
    report = index.insert(docs, progress=progress)
    record = {
        "code": code,
        "rules": rules,
        "subset": info,
        "seconds": report.seconds,
        "embedded_new": embedder.misses - misses0,
        "embedded_cached": embedder.hits - hits0,
        "built_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "nodes": index.stats()["nodes"],
    }
    record_path.write_text(json.dumps(record, indent=1))
    log(f"{dataset}: built in {report.seconds:.0f} s, nodes {record['nodes']}")
    return index, record


# ------------------------------------------------------------------ the search before #12
#: Search defaults of ``graph`` before issue #12 (NodeRAG's public code).
BEFORE_DEFAULTS: dict[str, Any] = {
    "entry_top_k": 10,
    "cross_top_k": 10,
    "relation_top_k": 30,
    "ppr_alpha": 0.5,
    "ppr_iters": 2,
    "exact_match_weight": 1.0,
    "vector_match_weight": 1.0,
}


def before_view(index: Any) -> Any:
    """The ``graph`` view as it was before issue #12, for the "before" row.

    The logic of ``HeterographView`` at commit 2d12b57
    (``git show 2d12b57:graphstrata/engine/heterograph_search.py``), ported to the current
    module layout: exact entity/title matches (1.0 each) and the vector top-10 over S/A/H
    (1.0 each) seed a shallow PPR (alpha 0.5, t = 2); seeds and the top 10 cross nodes of
    each kind (30 relationships), an entity's attributes and a title's element, ranked by
    PPR score and packed greedily. Run it on the same index as the current search.
    """
    from graphstrata.core.budget import pack
    from graphstrata.core.graph import csr_from_edges
    from graphstrata.core.ppr import shallow_ppr
    from graphstrata.core.topk import top_k_by_kind
    from graphstrata.engine.component import ComponentView
    from graphstrata.engine.heterograph.parse import normalize_name, parse_query_entities
    from graphstrata.engine.heterograph.schema import (
        HETERO_EDGE_KINDS,
        HETERO_KINDS,
        HETERO_RETRIEVABLE,
        VECTOR_ENTRY_KINDS,
        N,
        O,
    )
    from graphstrata.engine.heterograph.state.links import SlotLinks
    from graphstrata.engine.modes import make_hits, vector_candidates
    from graphstrata.engine.prompts import query_entities_request
    from graphstrata.engine.types import EdgeKind, NodeKind

    state = index.engine.state
    cfg = BEFORE_DEFAULTS

    class BeforeView(ComponentView):
        def __init__(self) -> None:
            snap = state.snapshot
            self.ids, self.kinds = snap.nodes.ids, snap.nodes.kind
            table = snap.edges
            kind = table.column("kind").to_numpy()
            sel = np.isin(kind, np.asarray(HETERO_EDGE_KINDS, dtype=np.uint8))
            src = np.searchsorted(self.ids, table.column("src").to_numpy()[sel]).astype(np.int64)
            dst = np.searchsorted(self.ids, table.column("dst").to_numpy()[sel]).astype(np.int64)
            weight = table.column("weight").to_numpy()[sel].astype(np.float32)
            kind = kind[sel]
            self.csr = csr_from_edges(src, dst, weight, int(self.ids.size))
            attr = kind == int(EdgeKind.ENTITY_ATTRIBUTE)
            self.attr = SlotLinks.of(src[attr], dst[attr])
            title = kind == int(EdgeKind.ELEMENT_TITLE)
            self.title = SlotLinks.of(dst[title], src[title])
            names: dict[str, list[int]] = {}
            texts = snap.nodes.texts
            for p in np.nonzero(np.isin(self.kinds, np.asarray([N, O], np.uint8)))[0].tolist():
                key = normalize_name(texts[p])
                if key:
                    names.setdefault(key, []).append(p)
            self.names = {k: np.asarray(v, np.int64) for k, v in names.items()}

        def search(self, mode: str, query: Any) -> list[Any]:
            ents: list[str] = []
            if query.llm is not None:
                (answer,) = query.llm.complete(
                    "query_entities", [query_entities_request(query.text)]
                )
                ents = parse_query_entities(answer.text)
            keys = [normalize_name(e) for e in ents]
            matched = [self.names[k] for k in keys if k in self.names]
            exact = np.unique(np.concatenate(matched)) if matched else np.zeros(0, np.int64)
            ids, _ = vector_candidates(
                state.vectors, query.vector, VECTOR_ENTRY_KINDS, cfg["entry_top_k"]
            )
            pos = np.minimum(np.searchsorted(self.ids, ids), self.ids.size - 1)
            vec = pos[self.ids[pos] == ids].astype(np.int64)
            seeds = np.concatenate([exact, vec])
            weights = np.concatenate(
                [np.full(exact.size, cfg["exact_match_weight"]), np.full(vec.size, 1.0)]
            )
            if seeds.size == 0:
                return []
            uniq, inv = np.unique(seeds, return_inverse=True)
            w = np.zeros(uniq.size)
            np.add.at(w, inv, weights)
            touched, scores = shallow_ppr(
                *self.csr, uniq, w, alpha=cfg["ppr_alpha"], iters=cfg["ppr_iters"]
            )
            k = {int(kd): cfg["cross_top_k"] for kd in HETERO_KINDS}
            k[int(NodeKind.R)] = cfg["relation_top_k"]
            cross = np.asarray(top_k_by_kind(touched, scores, self.kinds[touched], k), np.int64)
            score = np.zeros(self.ids.size)
            score[touched] = scores
            picked = np.unique(np.concatenate([uniq, cross]))
            kinds = self.kinds[picked]
            via_n, from_n = self.attr.follow(picked[kinds == N], None)
            via_o, from_o = self.title.follow(picked[kinds == O], None)
            linked = np.concatenate([via_n, via_o])
            np.maximum.at(score, linked, score[np.concatenate([from_n, from_o])])
            cand = np.unique(np.concatenate([picked, linked]))
            cand = cand[np.isin(self.kinds[cand], np.asarray(HETERO_RETRIEVABLE, np.uint8))]
            ranked = cand[np.argsort(-score[cand], kind="stable")]
            tokens = state.snapshot.nodes.tokens[ranked]
            chosen = pack(score[ranked], tokens, int(query.budget_tokens))
            return make_hits(
                state.snapshot, state.doc_names, self.ids[ranked[chosen]], score[ranked[chosen]]
            )

    return BeforeView()


# ------------------------------------------------------------------ evaluation
def summarize(mode_result: Any) -> dict[str, Any]:
    overall = mode_result.overall
    ms = [float(q["search_ms"]) for q in mode_result.questions]
    row = {m: overall.get(m) for m in MEASURES}
    row.update(
        questions=overall["questions"],
        tokens=overall["tokens"],
        search_p50=float(np.percentile(ms, 50)),
        search_p99=float(np.percentile(ms, 99)),
        search_mean=float(np.mean(ms)),
    )
    return row


def kinds_share(index: Any, items: list[dict], budget: int, n: int = 40) -> dict[str, float]:
    """Share of the retrieved tokens per node kind over the first ``n`` questions."""
    tokens: dict[str, int] = {}
    for q in items[:n]:
        for h in index.query(q["question"], mode="graph", budget_tokens=budget).nodes:
            tokens[h.kind] = tokens.get(h.kind, 0) + h.tokens
    total = sum(tokens.values()) or 1
    return {k: round(v / total, 3) for k, v in sorted(tokens.items())}


def use_code_defaults(index: Any) -> None:
    """Give the open index the search defaults of this code (``HeterographConfig()``).

    An index records the config it was built with, search defaults included, and a view
    reads the recorded values; ``default`` here must mean the shipped defaults, so every
    field outside ``BUILD_FIELDS`` is reset and the graph view rebuilt.
    """
    import dataclasses

    from graphstrata.engine.config import HeterographConfig

    cfg = index.engine.config.heterograph
    for f in dataclasses.fields(HeterographConfig):
        if f.name not in BUILD_FIELDS:
            setattr(cfg, f.name, getattr(HeterographConfig(), f.name))
    swap_graph_view(index)


def run_before(index: Any, items: list[dict], budget: int) -> dict[str, Any]:
    """The "before" row: ``graph`` with the search before issue #12, on this index."""
    from graphstrata.evaluation import evaluate

    state = index.engine.state
    current = state.views["graph"]
    state.views["graph"] = before_view(index)
    try:
        result = evaluate(index, items, ["graph"], budget)
        row = summarize(result.modes["graph"])
        row["kinds"] = kinds_share(index, items, budget)
    finally:
        state.views["graph"] = current
    log(f"graph:before: {fmt(row)}")
    return row


def run_variants(
    index: Any, items: list[dict], budget: int, variants: list[str], baselines: bool
) -> dict[str, Any]:
    from graphstrata.evaluation import evaluate

    use_code_defaults(index)
    cfg = index.engine.config.heterograph
    original = {k: getattr(cfg, k) for k in vars(cfg)}
    rows: dict[str, Any] = {}
    if baselines:
        result = evaluate(index, items, ["naive", "bm25"], budget)
        for mode in ("naive", "bm25"):
            rows[mode] = summarize(result.modes[mode])
            log(f"{mode}: {fmt(rows[mode])}")
    for name in variants:
        overrides = VARIANTS[name]
        for k, v in overrides.items():
            if not hasattr(cfg, k):
                raise SystemExit(f"variant {name}: HeterographConfig has no field {k!r}")
            setattr(cfg, k, v)
        rebuilt = any(k in VIEW_FIELDS for k in overrides)
        if rebuilt:
            swap_graph_view(index)
        try:
            result = evaluate(index, items, ["graph"], budget)
            rows[f"graph:{name}"] = summarize(result.modes["graph"])
            rows[f"graph:{name}"]["kinds"] = kinds_share(index, items, budget)
        finally:
            for k, v in original.items():
                setattr(cfg, k, v)
            if rebuilt:
                swap_graph_view(index)
        log(f"graph:{name}: {fmt(rows[f'graph:{name}'])}")
    return rows


def swap_graph_view(index: Any) -> None:
    """Rebuild the open version's graph view from the (changed) config, keeping its BM25."""
    from graphstrata.engine.heterograph import HeterographView

    state = index.engine.state
    old = state.views["graph"]
    state.views["graph"] = HeterographView(
        state.snapshot,
        state.vectors,
        index.engine.config,
        state.doc_names,
        sparse=old.sparse,
    )


def fmt(row: dict[str, Any]) -> str:
    return (
        f"docR {row['doc_recall']:.3f} factT {row['fact_recall_text']:.3f} "
        f"factC {row['fact_recall_chunk']:.3f} ans {row['answer_contained']:.3f} "
        f"p50 {row['search_p50']:.1f} p99 {row['search_p99']:.1f} ms"
    )


def targets(rows: dict[str, Any]) -> list[str]:
    """Issue #12's targets for ``graph:default``: >= max(naive, bm25) + 3 points of fact
    recall (text) and of document recall; search p50 <= 10 ms, p99 <= 40 ms."""
    graph = rows.get("graph:default")
    if graph is None or "naive" not in rows or "bm25" not in rows:
        return []
    out = ["", "Targets (issue #12) for `graph:default`:", ""]
    for key, label in (("fact_recall_text", "fact R text"), ("doc_recall", "doc R")):
        goal = max(rows["naive"][key], rows["bm25"][key]) + 0.03
        verdict = "met" if graph[key] >= goal else "NOT met"
        out.append(f"- {label} >= {goal:.3f}: {graph[key]:.3f}, {verdict}")
    for key, goal in (("search_p50", 10.0), ("search_p99", 40.0)):
        verdict = "met" if graph[key] <= goal else "NOT met"
        out.append(f"- search {key[-3:]} <= {goal:.0f} ms: {graph[key]:.2f} ms, {verdict}")
    return out


def write_results(stem: str, payload: dict[str, Any], command: str) -> None:
    write_json(RESULTS / f"{stem}.json", payload)
    rows = payload["rows"]
    lines = [
        f"# graph tuning: {payload['dataset']}",
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine()}; load average {load_text(1, ', ')}"
        " (shared cores: latencies are upper bounds). "
        f"Written {time.strftime('%Y-%m-%d %H:%M')}.",
        "",
        f"Index: {payload['index']}; entity rules `{payload['rules']}`; embedder "
        f"{payload['embedder']}; subset {json.dumps(payload['subset'])}; nodes "
        f"{json.dumps(payload['nodes'])}.",
        "",
        f"Budget {payload['budget']} tokens. Measures as in `graphstrata/evaluation/scoring.py`"
        "; search p50/p99 in ms without the query embedding; kinds = share of retrieved tokens "
        "per kind (first 40 questions).",
        "",
        "| row | n | doc R | fact R text | fact R chunk | answer | tokens | p50 ms | p99 ms | kinds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        kinds = " ".join(f"{k} {v:.2f}" for k, v in r.get("kinds", {}).items())
        lines.append(
            f"| {name} | {r['questions']} | {r['doc_recall']:.3f} | {r['fact_recall_text']:.3f} "
            f"| {r['fact_recall_chunk']:.3f} | {r['answer_contained']:.3f} | {r['tokens']:.0f} "
            f"| {r['search_p50']:.2f} | {r['search_p99']:.2f} | {kinds} |"
        )
    lines += targets(rows)
    lines += ["", "Rows:", ""]
    if "graph:before" in rows:
        lines.append(
            "- `graph:before`: the search before issue #12 on this index (`before_view`: "
            f"NodeRAG's dual search, {json.dumps(BEFORE_DEFAULTS)})"
        )
    for name in payload["variants"]:
        lines.append(
            f"- `{name}`: {json.dumps(VARIANTS[name]) if VARIANTS[name] else 'shipped defaults'}"
        )
    (RESULTS / f"{stem}.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="hotpotqa", choices=["hotpotqa", "multihop_rag"])
    parser.add_argument("--docs", type=int, default=None, help="MultiHop-RAG subset size")
    parser.add_argument(
        "--rules", default="standard", help="extractive entity rules: standard or refined"
    )
    parser.add_argument("--embedder", default="minilm-onnx")
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--variants", default="default", help="comma list, or 'ablations'")
    parser.add_argument("--no-baselines", action="store_true")
    parser.add_argument(
        "--before", action="store_true", help="add the row of the search before issue #12"
    )
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument(
        "--out",
        default=None,
        help="results stem (default graph_tuning-<dataset>[-<N>docs][-<rules>])",
    )
    args = parser.parse_args(argv)
    if not (DATA / args.dataset / "corpus.jsonl").exists():
        log(f"{DATA / args.dataset} is absent: nothing to measure")
        return 0
    from graphstrata.bindings.registry import make_embedder

    named = ABLATIONS if args.variants == "ablations" else args.variants
    variants = [v.strip() for v in named.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; known: {sorted(VARIANTS)}")
    embedder = CachedEmbedder(make_embedder(args.embedder), ROOT / "embed-cache")
    docs, items, info = load_dataset(args.dataset, args.docs)
    if args.limit:
        items = items[: args.limit]
    index, record = open_or_build(args.dataset, docs, info, args.rules, embedder, args.rebuild)
    rows = {}
    if args.before:
        rows["graph:before"] = run_before(index, items, args.budget)
    rows.update(run_variants(index, items, args.budget, variants, not args.no_baselines))
    payload = {
        "dataset": args.dataset,
        "index": index.engine.store.root.name,
        "rules": args.rules,
        "embedder": embedder.name,
        "subset": info,
        "nodes": record.get("nodes"),
        "build": record,
        "budget": args.budget,
        "variants": variants,
        "rows": rows,
    }
    stem = args.out or "-".join(
        ["graph_tuning", args.dataset]
        + ([f"{args.docs}docs"] if args.docs else [])
        + ([args.rules] if args.rules != "standard" else [])
    )
    write_results(stem, payload, command_line(__spec__.name, argv or None))
    log(f"wrote {RESULTS / stem}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
