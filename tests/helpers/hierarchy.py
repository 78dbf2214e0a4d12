"""A small hierarchy-only index, and the hierarchy's invariants read from its node table."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from graphstrata.bindings.api import Index
from graphstrata.bindings.llm.extractive import ExtractiveLLM
from graphstrata.core.lsh import project_codes
from graphstrata.engine.config import FusionConfig, IndexConfig
from graphstrata.engine.hierarchy import HierarchyComponent, HierarchyTree
from graphstrata.engine.index import Engine
from graphstrata.engine.prompts import summarize_request
from graphstrata.engine.tokens import count_tokens
from graphstrata.engine.types import EdgeKind, NodeKind

T, L = int(NodeKind.T), int(NodeKind.L)


def small_config(s_min: int = 3, s_max: int = 5, max_layers: int = 5) -> IndexConfig:
    """Hierarchy only, small segment bounds (three layers on the sample), dense ranking."""
    config = IndexConfig()
    config.heterograph.enabled = False
    # A cap the sample's upper summaries pass, so that ``check_hierarchy`` checks it.
    config.hierarchy = dataclasses.replace(
        config.hierarchy, s_min=s_min, s_max=s_max, max_layers=max_layers, summary_docs_max=3
    )
    # The search tests check EraRAG's own ranking (Algorithm 2: dense only, plain greedy
    # packing); the fused default (dense + BM25, duplicates skipped) is tested at the end.
    config.fusion = FusionConfig(method="dense", max_overlap=2.0)
    return config


def new_index(
    path: Path,
    embedder: Any,
    config: IndexConfig | None = None,
    llm: Any = None,
    group_new_first: bool = True,
) -> Index:
    """An index whose only component is the hierarchy (with the given insert policy)."""
    component = HierarchyComponent(group_new_first=group_new_first)
    engine = Engine.create(
        path, config or small_config(), embedder, llm or ExtractiveLLM(), components=[component]
    )
    return Index(engine)


# ------------------------------------------------------------------------------ invariants
def hierarchy_rows(index: Index) -> dict[str, Any]:
    """The hierarchy as plain arrays, read from the node table (independently of the code)."""
    snap = index.engine.state.snapshot
    nodes = snap.nodes
    mask = (nodes.kind == T) | (nodes.kind == L)
    ids = nodes.ids[mask]
    kind = nodes.kind[mask]
    layer = np.where(kind == T, 0, nodes.layer[mask]).astype(int)
    parent = nodes.parent[mask]
    return {"snap": snap, "ids": ids, "kind": kind, "layer": layer, "parent": parent}


def anchors(h: dict[str, Any]) -> dict[int, int]:
    """Smallest chunk id below each node (corpus order of the children)."""
    out = {int(i): int(i) for i, k in zip(h["ids"], h["kind"], strict=True) if k == T}
    for lay in range(1, int(h["layer"].max(initial=0)) + 1):
        for i, p, ly in zip(h["ids"], h["parent"], h["layer"], strict=True):
            if ly == lay - 1 and p >= 0:
                out[int(p)] = min(out.get(int(p), 1 << 62), out[int(i)])
    return out


def feasible(m: int, s_min: int, s_max: int) -> bool:
    """Can ``m`` items be cut into parts of ``s_min..s_max`` items?"""
    return -(-m // s_max) * s_min <= m


def check_hierarchy(index: Index, config: IndexConfig) -> None:
    """Every structural promise of the hierarchy, checked on the committed version."""
    cfg = config.hierarchy
    h = hierarchy_rows(index)
    snap, ids, layer, parent = h["snap"], h["ids"], h["layer"], h["parent"]
    nodes = snap.nodes
    top = int(layer.max(initial=0))
    by_id = {int(i): r for r, i in enumerate(ids)}
    counts = np.bincount(layer, minlength=top + 1)
    # the top layer: fits in one segment (or is the last allowed layer), no parents
    assert np.all(parent[layer == top] == -1)
    assert counts[top] <= cfg.s_max or top == cfg.max_layers
    for lay in range(top):
        # a lower layer that fits in one segment would have been the top
        assert counts[lay] > cfg.s_max, f"layer {lay} has {counts[lay]} nodes below a layer"
    children: dict[int, list[int]] = {}
    for i, p, ly in zip(ids.tolist(), parent.tolist(), layer.tolist(), strict=True):
        if ly < top:
            assert p >= 0, f"node {i} of layer {ly} < top {top} has no parent"
            assert layer[by_id[p]] == ly + 1 and h["kind"][by_id[p]] == L
            children.setdefault(p, []).append(i)
    # every summary has children; segments within bounds on every layer below the top
    l_ids = ids[h["kind"] == L].tolist()
    assert set(children) == set(l_ids)
    for p, members in children.items():
        lay = int(layer[by_id[p]]) - 1
        # s_max is hard; s_min holds whenever the layer can be cut in bounds at all (the
        # partition relaxes it only for e.g. 13..15 items with bounds 8..12)
        low = cfg.s_min if feasible(int(counts[lay]), cfg.s_min, cfg.s_max) else 1
        assert low <= len(members) <= cfg.s_max, f"segment of {p}: {len(members)} items"
    # summaries: text = summary of exactly their children (corpus order); docs = union,
    # or past summary_docs_max the most-cited (ties: smaller key)
    anchor = anchors(h)
    llm = ExtractiveLLM()
    for p, members in children.items():
        members = sorted(members, key=lambda i: (anchor[i], i))
        texts = nodes.text_of(members)
        (expected,) = llm.complete([summarize_request(texts, cfg.summary_tokens)])
        (text,) = nodes.text_of([p])
        assert text == expected.text.strip()
        assert int(nodes.tokens[nodes.rows([p])[0]]) == count_tokens(text)
        cited = Counter(d for ds in nodes.docs_of(members) for d in ds)
        ranked = sorted(cited, key=lambda d: (-cited[d], d))
        most = cfg.summary_docs_max or len(ranked)
        assert nodes.docs_of([p])[0] == sorted(ranked[:most])
    # codes are the stored hyperplanes' codes of the stored vectors; a bit may differ only
    # where the projection is within float32 rounding of zero (BLAS may sum a row in
    # another order when it is hashed in another batch), not float16's (~1e-4, the CI
    # failure fixed by ``Delta.add_vectors``)
    vectors = snap.vectors.get(ids)
    differ = nodes.code[nodes.rows(ids)] ^ project_codes(vectors, snap.hyperplanes)
    projections = vectors.astype(np.float64) @ snap.hyperplanes.astype(np.float64).T
    for r in np.flatnonzero(differ).tolist():
        bits = [b for b in range(projections.shape[1]) if int(differ[r]) >> b & 1]
        assert np.all(np.abs(projections[r, bits]) < 1e-5), f"node {ids[r]}: bits {bits}"
    # one PARENT_CHILD edge per (parent, child), and no other
    edges = snap.edges
    pc = edges.filter(np.asarray(edges.column("kind").to_numpy() == int(EdgeKind.PARENT_CHILD)))
    pairs = list(zip(pc.column("src").to_pylist(), pc.column("dst").to_pylist(), strict=True))
    expected_pairs = {(p, c) for p, cs in children.items() for c in cs}
    assert len(pairs) == len(set(pairs)) and set(pairs) == expected_pairs
    # the vector index holds exactly the live summaries
    assert index.engine.state.vectors.count([L]) == len(l_ids)


def signature(index: Index) -> list[Any]:
    """The hierarchy up to node ids: per layer, each segment as (summary, member texts)."""
    h = hierarchy_rows(index)
    nodes = h["snap"].nodes
    tree = HierarchyTree.from_nodes(nodes)
    out: list[Any] = []
    for lay in range(tree.top_layer + 1):
        segs = tree.segments(lay)
        out.append(
            sorted((nodes.text_of([p])[0], tuple(nodes.text_of(c))) for p, c in segs.items())
        )
    out.append(sorted(nodes.text_of(tree.ids[tree.at_layer(tree.top_layer)])))
    return out
