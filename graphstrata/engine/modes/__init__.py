"""Search shared by every mode: candidates, citations, packing, sparse postings, fusion.

``packing`` turns ranked ids into budget-packed hits (``pack_distinct_hits`` skips
near-duplicates), ``naive`` is the dense baseline, ``bm25`` the sparse one, ``hybrid`` fuses
the two over chunks (and lends ``fused_candidates`` to the hierarchy modes);
``sparse_index.SparseIndex`` (on ``postings.KindIndex``) is the one BM25 index of a version,
advanced per commit. ``bm25`` and ``hybrid`` are components of their own; ``registry`` lists
every component the engine serves modes from (docs/architecture.md, "Search modes and
parameters").
"""

from graphstrata.engine.modes.naive import NaiveView
from graphstrata.engine.modes.packing import DocNames, make_hits, pack_hits, vector_candidates

__all__ = ["DocNames", "NaiveView", "make_hits", "pack_hits", "vector_candidates"]
