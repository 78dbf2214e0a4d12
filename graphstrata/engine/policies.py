"""Maintenance as named policies (``IndexConfig.maintenance``): when each mechanism folds
its extra layer into a new base or merges segments (:class:`FoldPolicy` per mechanism,
:class:`MaintenanceConfig` the section; docs/architecture.md, "Where things go")."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from graphstrata.engine.fields import ConfigError, from_dict

__all__ = ["FoldPolicy", "MaintenanceConfig"]


@dataclass(frozen=True)
class FoldPolicy:
    """When an overlay (what versions added since a base) is folded into a new base.

    The one rule of every incremental mechanism: an overlay of ``overlay`` items over a
    base of ``base_size`` folds once it passes :meth:`limit` (``inclusive``: once it
    reaches it), the limit being ``share`` of the base, at least ``minimum`` and at most
    ``cap``. Folding costs O(base), so a share makes it amortized O(1) per item; the
    minimum keeps a small base from folding every few writes; the cap bounds what each
    search or write pays for the overlay.
    """

    #: Share of the base the overlay may hold.
    share: float = 0.0
    #: Items the overlay may always hold.
    minimum: int = 0
    #: Items the overlay may hold at most (None: no cap); at least ``minimum``.
    cap: int | None = None
    #: Fold when the overlay reaches the limit (True) or only when it exceeds it (False).
    inclusive: bool = False

    def limit(self, base_size: int) -> float:
        """The overlay size allowed over a base of ``base_size`` items:
        ``min(cap, max(minimum, share * base_size))``."""
        bound = max(float(self.minimum), self.share * base_size)
        return bound if self.cap is None else min(float(self.cap), bound)

    def should_fold(self, overlay: int, base_size: int = 0) -> bool:
        """Whether an overlay of ``overlay`` items over ``base_size`` folds now."""
        limit = self.limit(base_size)
        return overlay >= limit if self.inclusive else overlay > limit

    def validate(self, name: str) -> None:
        """Raise ``ConfigError`` on an invalid value (``name``: the policy's field)."""
        if not 0.0 <= self.share < float("inf"):
            raise ConfigError(f"maintenance.{name}.share must be finite and >= 0, got {self.share}")
        if self.minimum < 0:
            raise ConfigError(f"maintenance.{name}.minimum must be >= 0, got {self.minimum}")
        if self.cap is not None and self.cap < self.minimum:
            raise ConfigError(
                f"maintenance.{name}.cap must be >= minimum ({self.minimum}), got {self.cap}"
            )


@dataclass
class MaintenanceConfig:
    """When each incremental mechanism folds what writes added into its base, and the
    vector search tunables that go with the overlays (docs/architecture.md, "Write path").

    Every field is a named :class:`FoldPolicy` (or a count); the defaults are what the
    engine was measured with. Adding a policy is one field here plus the module that
    reads it. None of them changes what a query returns (a fold rebuilds the same
    content), only when a write pays for a fold and what a search pays for an overlay;
    ``vector_exact_below``, ``vector_oversample`` and ``vector_widen`` may change an HNSW
    search's neighbours slightly.
    """

    #: Vectors a kind keeps apart from its HNSW base (searched exactly by a matrix product)
    #: before they are merged into a new base (usearch's copy of the base and their inserts:
    #: one O(n) copy amortized over the writes before it): an eighth of the base, at least
    #: 4,096 and at most 16,384 (16k x 384 by one product is ~2 ms).
    vector_fresh: FoldPolicy = FoldPolicy(share=0.125, minimum=4096, cap=16384)
    #: Dead ids a vector base keeps (filtered out of its results) before it is made anew from
    #: its live vectors: 64, or one in eight of the base if more. Making a base costs O(n)
    #: inserts or an O(n log n) k-NN graph (1.0-2.1 ms per dead vector amortized,
    #: benchmarks/results/scale.md, remake table); evenly spread dead vectors leave a top-k
    #: search ~k/8 dead matches to skip, within ``vector_oversample``.
    vector_removed: FoldPolicy = FoldPolicy(share=0.125, minimum=64)
    #: Below this many vectors a kind is searched exactly (brute force is faster and exact).
    vector_exact_below: int = 4096
    #: A search asks a base for this many matches more than k (at most as many as it has
    #: dead ids) and asks again, ``vector_widen`` times as many each time up to k + all its
    #: dead ids, only for a query whose top matches held more dead ids than that. For an
    #: exact search that equals asking for k + all (tested); an HNSW search asked for
    #: another count may return slightly different neighbours (not measured).
    vector_oversample: int = 16
    vector_widen: int = 4
    #: A new vector base of at least this many vectors is made from its k-NN graph
    #: (``engine.graph_bases``: ``core.search_graph``, written for usearch by
    #: ``core.ann.hnsw_from_graph``) instead of by usearch's inserts. An f16 index of 384-d
    #: vectors leaves the 32 MiB last-level cache between 20k and 40k vectors, after which
    #: an insert's distances read DRAM and its cost climbs (153 us at 20k, 497 us at 100k:
    #: the HNSW table of benchmarks/results/scale.md). Recall@10 of 1,000 rows at ef 64,
    #: one run each: 51,952 MiniLM vectors of MultiHop-RAG sentences 10.2 s wall (19.4 s
    #: CPU on 2 threads), recall 0.9957, against 10.9 s CPU (one thread) and 0.9938
    #: inserted; ``scale.py graph-index`` (hashing vectors): 50k 10.1 s wall (19.7 s CPU),
    #: 0.812, against 12.7 s and 0.734; 400k 99.2 s (189.1 s CPU), 0.601, against 254.4 s
    #: and 0.524.
    vector_graph_build_min: int = 32768
    #: Entries a ``LayeredDict`` (names, titles, doc names, text holders) keeps in its top
    #: layer before a version folds it into a new base dict: a quarter of the base, at least
    #: 4,096 (a version then copies the keys it changed, not every name: 43k names, 16k
    #: titles and 19k doc titles copied per write at 100k chunks took ~11 ms).
    layered_dict: FoldPolicy = FoldPolicy(share=0.25, minimum=4096, inclusive=True)
    #: BM25 postings segments a kind keeps before it is compacted into one (the segments
    #: are joined as a binary counter, so they stay O(log n) anyway).
    postings_segments: FoldPolicy = FoldPolicy(minimum=16)
    #: Tombstoned BM25 slots a kind keeps (a share of its slots) before it is compacted.
    postings_dead: FoldPolicy = FoldPolicy(share=0.25)
    #: Entries of the walk graph CSR's extra layer (a share of the base's entries) before it
    #: is compacted: merging the extra layer on each commit is O(its entries). Three
    #: one-document insert/delete pairs at 100k chunks left 6.4-7.4k extra entries (1.2M
    #: allowed): a compaction every ~1,000 writes at that rate (extrapolated).
    walk_graph_extra: FoldPolicy = FoldPolicy(share=1 / 16)
    #: Dead slots of the walk graph CSR (a share of its slots) before it is compacted (each
    #: is a row the walk skips and an id the slot lookups keep; 355-394 per three pairs at
    #: 100k chunks, 80k allowed).
    walk_graph_dead: FoldPolicy = FoldPolicy(share=1 / 8)
    #: G2's extra layer: the walk graph's share, but always at least 4,096 entries (a small
    #: index's base is small: at the share alone it would be compacted every few writes).
    g2_extra: FoldPolicy = FoldPolicy(share=1 / 16, minimum=4096)
    #: G2's dead slots before it is compacted onto positions.
    g2_dead: FoldPolicy = FoldPolicy(share=1 / 8)
    #: Segments of one tier merged into one of the next (Lucene's ``segmentsPerTier`` is
    #: 10). At eight, a merge of one-document commits at a million chunks reads ~8 MB every
    #: eighth write (0.07-0.11 s of its commit); ninety versions leave at most 3 x 7
    #: segments per table instead of 90.
    store_merge_fanin: int = 8
    #: A run of segments holding more rows than this is not merged: it came from bulk
    #: inserts, which open in few segments anyway (a choice, not a measurement: a
    #: one-document write at a million chunks commits ~300 node rows).
    store_merge_max_rows: int = 262_144
    #: Patches a per-node state chain holds before a commit writes a new base instead
    #: (reading a state reads its base and every patch).
    node_state_patches: FoldPolicy = FoldPolicy(minimum=128, inclusive=True)
    #: Rows of a per-node state chain's patches (a share of the whole mapping) at which a
    #: commit writes a new base instead: once the patches hold as many rows as a base would.
    node_state_rows: FoldPolicy = FoldPolicy(share=1.0, minimum=1, inclusive=True)
    #: Lazily read edge parts (semantic edges) an edge table keeps apart before they are
    #: filtered into one ...
    edges_parts: FoldPolicy = FoldPolicy(minimum=64)
    #: ... and dead node ids it keeps to filter them with.
    edges_dead: FoldPolicy = FoldPolicy(minimum=1 << 16)
    #: Rows written since a cache file (vector bases, BM25 postings; a share of the index's
    #: rows) at which a commit writes it again: a quarter, at least 2,048 (not tuned), so
    #: small writes write little and an open maps a file close to its version.
    cache_stale: FoldPolicy = FoldPolicy(share=0.25, minimum=2048, inclusive=True)
    #: A node table combines its trailing Arrow chunks while the chunk before them holds at
    #: most this many times their rows: a binary-counter merge, each appended row copied
    #: O(log N) times. Copying every live row once the table spanned 64 chunks instead cost
    #: 0.31 s at 100k chunks every ~64 writes (issue 17).
    table_chunk_merge_factor: int = 2
    #: Versions a node table's set of ids of some kinds is carried along unasked before it
    #: is dropped (moving the nine sets of a 100k-chunk index took 2.7 ms per write).
    table_kind_set_versions: int = 16

    def validate(self) -> None:
        """Raise ``ConfigError`` on an invalid value."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, FoldPolicy):
                value.validate(f.name)
            elif value < 1:
                raise ConfigError(f"maintenance.{f.name} must be >= 1, got {value}")

    def policies(self) -> dict[str, Any]:
        """Every field as plain values (what ``Engine.stats`` shows)."""
        return dataclasses.asdict(self)

    @classmethod
    def of_config(cls, config: dict[str, Any]) -> MaintenanceConfig:
        """The section of a recorded ``IndexConfig`` dict (the defaults when it has none:
        an index created before the section existed)."""
        return from_dict(cls, config.get("maintenance", {}))
