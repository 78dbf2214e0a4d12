"""``maintain``: whole-graph Leiden and important entities after local writes, committed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder
from graphstrata.core.communities import leiden, with_singletons
from graphstrata.core.ids import find_positions
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.heterograph.schema import G2_EDGES, G2_KINDS, NAME, ST_LEIDEN
from graphstrata.engine.types import NodeKind
from tests.helpers.cli import run

pytestmark = pytest.mark.integration
QUESTION = "Who sold the Orrin Guild ferry?"


def _g2(index: Index):
    """G2 on dense positions and its stored partition."""
    snap = index.engine.state.snapshot
    ids = snap.nodes.ids_of_kind(*G2_KINDS)
    kinds = snap.edges.column("kind").to_numpy()
    sel = np.isin(kinds, np.asarray(G2_EDGES, np.uint8))
    src = np.searchsorted(ids, snap.edges.column("src").to_numpy()[sel])
    dst = np.searchsorted(ids, snap.edges.column("dst").to_numpy()[sel])
    stored_ids, labels = snap.node_state(NAME, ST_LEIDEN)
    return ids, src, dst, labels[np.searchsorted(stored_ids, ids)]


def _modularity(n, src, dst, membership) -> float:
    import igraph as ig

    graph = ig.Graph(n=n, edges=np.column_stack([src, dst]).tolist())
    return float(graph.modularity(membership.tolist()))


def test_maintain_runs_leiden_whole_and_selects_again(tmp_path, sample_docs):
    cfg = IndexConfig()
    cfg.heterograph.attributes = "on"  # maintenance selects the important entities again
    index = Index.create(tmp_path / "ix", cfg, embedder=HashingEmbedder(64))
    docs = list(sample_docs)
    index.insert(docs[:18])
    for doc in docs[18:24]:  # local Leiden on each write
        index.insert([doc])
    ids, _, _, before = _g2(index)
    version = index.engine.version
    report = index.maintain()
    assert report.version == version + 1
    meta = index.engine.state.snapshot.component_meta(NAME)["last_update"]
    assert meta["communities"]["leiden_full"] is True
    assert meta["attributes"]["selected"] is True
    # The stored partition is the whole-graph run from the one the writes left, on G2 as
    # maintenance leaves it: the new selection of important entities may add or drop
    # attributes (A); the units, entities and relationships stay.
    ids2, src2, dst2, after = _g2(index)
    snap = index.engine.state.snapshot
    g1 = snap.nodes.ids_of_kind(int(NodeKind.S), int(NodeKind.N), int(NodeKind.R))
    np.testing.assert_array_equal(ids[np.isin(ids, g1)], g1)
    cfg = index.engine.config.heterograph
    pos = find_positions(ids, ids2)  # the partition the writes left, on G2 now
    init = with_singletons(np.where(pos >= 0, before[np.maximum(pos, 0)], -1), int(before.max()))
    ones = np.ones(src2.size)
    want = leiden(ids2.size, src2, dst2, ones, seed=int(cfg.seed), initial=init)
    q_after = _modularity(ids2.size, src2, dst2, after)
    assert q_after == pytest.approx(_modularity(ids2.size, src2, dst2, want), abs=1e-9)
    assert q_after >= _modularity(ids2.size, src2, dst2, init) - 1e-9
    assert index.query(QUESTION, mode="graph").nodes
    # Nothing to maintain without a heterograph: no new version.
    cfg = IndexConfig()
    cfg.heterograph.enabled = False
    flat = Index.create(tmp_path / "flat", cfg, embedder=HashingEmbedder(64))
    flat.insert(docs[:3])
    assert flat.maintain().version == flat.engine.version == 1


def test_maintain_from_the_cli(tmp_path):
    from tests.helpers import REPO

    out = tmp_path / "ix"
    run("index", str(REPO / "examples" / "sample"), "--out", str(out), "--json")
    report = json.loads(run("maintain", str(out), "--json").stdout)
    assert report["operation"] == "maintain" and report["version"] == 2
    assert "heterograph:communities" in report["stages"]
