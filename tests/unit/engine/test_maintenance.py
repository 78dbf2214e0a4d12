"""``FoldPolicy`` and ``IndexConfig.maintenance``: the one fold rule, its defaults, and the
section recorded in (and read back from) the manifest."""

from __future__ import annotations

import dataclasses
import json

import pytest

from graphstrata.engine.config import ConfigError, IndexConfig
from graphstrata.engine.policies import FoldPolicy, MaintenanceConfig
from graphstrata.engine.store.files import seal, write_atomic
from tests.helpers.maintenance import maintenance


def test_the_limit_is_the_share_of_the_base_between_the_minimum_and_the_cap():
    policy = FoldPolicy(share=0.125, minimum=4096, cap=16384)
    assert policy.limit(0) == 4096  # an empty base: the minimum
    assert policy.limit(32768) == 4096  # the share (4,096) equals the minimum
    assert policy.limit(80_000) == 10_000  # the share
    assert policy.limit(10**9) == 16384  # capped
    assert FoldPolicy(share=0.25).limit(10) == 2.5  # not rounded: compared as is
    assert FoldPolicy(minimum=7).limit(10**12) == 7  # no share: a fixed count
    assert FoldPolicy(share=2.0, minimum=1).limit(10) == 20


def test_an_overlay_folds_past_the_limit_or_at_it_when_inclusive():
    exceeds = FoldPolicy(share=0.25, minimum=8)
    assert not exceeds.should_fold(8, 0) and exceeds.should_fold(9, 0)
    assert not exceeds.should_fold(25, 100) and exceeds.should_fold(26, 100)
    reaches = dataclasses.replace(exceeds, inclusive=True)
    assert not reaches.should_fold(7, 0) and reaches.should_fold(8, 0)
    assert not reaches.should_fold(24, 100) and reaches.should_fold(25, 100)
    # A fractional limit: an integer overlay exceeds 2.5 from 3 on and reaches it from 3 on.
    assert not FoldPolicy(share=0.25).should_fold(2, 10)
    assert FoldPolicy(share=0.25).should_fold(3, 10)
    assert not FoldPolicy(share=0.25, inclusive=True).should_fold(2, 10)
    # Nothing allowed: any overlay folds; inclusive: even an empty one.
    assert FoldPolicy().should_fold(1) and not FoldPolicy().should_fold(0)
    assert FoldPolicy(inclusive=True).should_fold(0)


def test_the_defaults_are_the_thresholds_the_engine_was_measured_with():
    """Each default reproduces the module constant it replaced at every size (the old rule
    as it was written, against the policy)."""
    m = MaintenanceConfig()
    for base in (0, 1, 7, 63, 100, 4095, 4096, 32767, 32768, 100_001, 10**6 + 3):
        for overlay in {0, 1, base // 8, base // 8 + 1, base // 4, base // 4 + 1, 4096, 4097}:
            fresh = min(max(4096, 0.125 * base), 16384)  # FRESH_MIN, _SHARE, _CAP
            assert m.vector_fresh.should_fold(overlay, base) == (overlay > fresh)
            removed = max(64, base // 8)  # REMOVED_MAX, REMOVED_SHARE
            assert m.vector_removed.should_fold(overlay, base) == (overlay > removed)
            stale = max(2048, 0.25 * base)  # CACHE_MIN_ROWS, CACHE_STALE_SHARE
            assert m.cache_stale.should_fold(overlay, base) == (overlay >= stale)
            dead = 0.25 * max(base, 1)  # postings MAX_DEAD_SHARE
            assert m.postings_dead.should_fold(overlay, max(base, 1)) == (overlay > dead)
            extra = (1 / 16) * max(base, 1)  # walk_graph COMPACT_EXTRA_SHARE
            assert m.walk_graph_extra.should_fold(overlay, max(base, 1)) == (overlay > extra)
            assert m.walk_graph_dead.should_fold(overlay, base) == (overlay > base / 8)
            g2 = max((1 / 16) * base, 4096.0)  # g2 MIN_EXTRA_ENTRIES
            assert m.g2_extra.should_fold(overlay, base) == (overlay > g2)
            rows = max(base, 1)  # node_state: patches' rows reach the mapping's
            assert m.node_state_rows.should_fold(overlay, base) == (overlay >= rows)
    for count in range(200):
        assert m.postings_segments.should_fold(count) == (count > 16)  # MAX_SEGMENTS
        assert m.node_state_patches.should_fold(count) == (count >= 128)  # MAX_PATCHES
        assert m.edges_parts.should_fold(count) == (count > 64)  # MAX_LAZY_PARTS
    assert m.edges_dead.limit(0) == 1 << 16  # MAX_LAZY_DEAD
    assert m.layered_dict.should_fold(4095, 0) is False and m.layered_dict.should_fold(4096, 0)
    assert m.layered_dict.should_fold(25_000, 100_000) and not m.layered_dict.should_fold(
        24_999, 100_000
    )
    assert (m.vector_exact_below, m.vector_oversample, m.vector_widen) == (4096, 16, 4)
    assert m.vector_graph_build_min == 32768
    assert (m.store_merge_fanin, m.store_merge_max_rows) == (8, 262_144)
    assert (m.table_chunk_merge_factor, m.table_kind_set_versions) == (2, 16)


def test_invalid_policies_are_config_errors():
    for bad in (
        {"vector_fresh": {"share": -0.1}},
        {"vector_fresh": {"minimum": -1}},
        {"vector_fresh": {"cap": 10}},  # below its minimum of 4,096
        {"store_merge_fanin": 0},
        {"vector_widen": 0},
    ):
        with pytest.raises(ConfigError, match="maintenance"):
            IndexConfig(maintenance=maintenance(**bad)).validate()
    with pytest.raises(ConfigError, match="unknown"):
        IndexConfig.from_dict({"maintenance": {"vector_fresh": {"ratio": 0.5}}})


def test_the_section_round_trips_through_the_manifest(make_index, sample_docs):
    from graphstrata.bindings.api import Index

    policy = maintenance(
        vector_fresh={"minimum": 100, "cap": 200}, store_merge_fanin=3, cache_stale={"share": 0.5}
    )
    index = make_index(IndexConfig(maintenance=policy))
    index.insert(sample_docs[:5])
    recorded = json.loads((index.path / "manifest.json").read_text())["config"]["maintenance"]
    assert recorded["vector_fresh"] == {
        "share": 0.125,
        "minimum": 100,
        "cap": 200,
        "inclusive": False,
    }
    reopened = Index.open(index.path)
    engine = reopened.engine
    assert engine.config.maintenance == policy
    assert engine.store.maintenance == policy
    assert engine.state.vectors.maintenance == policy
    assert engine.state.sparse.maintenance == policy
    stats = reopened.stats()["maintenance"]
    assert stats == policy.policies() and stats["store_merge_fanin"] == 3


def test_an_index_recorded_without_the_section_opens_with_the_defaults(make_index, sample_docs):
    """Indexes created before the section existed have no ``maintenance`` in their config."""
    from graphstrata.bindings.api import Index

    index = make_index()
    index.insert(sample_docs[:5])
    for path in (index.path / "manifest.json", *index.path.glob("manifests/v*.json")):
        manifest = json.loads(path.read_text())
        del manifest["config"]["maintenance"]
        write_atomic(path, seal(manifest))
    reopened = Index.open(index.path)
    assert "maintenance" not in reopened.engine.store.manifest["config"]
    assert reopened.engine.config.maintenance == MaintenanceConfig()
    assert reopened.engine.store.maintenance == MaintenanceConfig()
    assert reopened.stats()["maintenance"] == MaintenanceConfig().policies()
    reopened.insert(sample_docs[5:8])  # and writes on
    assert len(reopened.query("Halvorsen Observatory", mode="naive").nodes) > 0
