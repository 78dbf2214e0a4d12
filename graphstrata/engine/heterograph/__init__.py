"""NodeRAG heterograph (paper §2, Appendix C) kept incrementally in the index.

(docs/architecture.md, "Heterograph".) One operation (inserts and deletes together) runs
these stages, each touching only what the change reaches; each is a function of its own
module, sharing one :class:`~graphstrata.engine.heterograph.build.work.Work` and returning its
results:

1. ``decompose``: the new chunks (T) → semantic units (S), entities (N), relationships (R),
   one LLM batch (+ one retry batch for unusable answers).
2. ``settle``: the support (``docs``) of every touched N and R; unsupported ones go.
3. ``attributes``: attributes (A) of the important entities (NodeRAG's Algorithm 1,
   re-selected when G1 has changed by ``importance_refresh_share``).
4. ``communities``: Leiden on G2 from the previous membership, over the nodes the change
   touched and the neighbours of those that move; high-level elements (H) and their titles
   (O) for the communities that moved, paired with the element groups (``groups``) where
   the change reached (``graphstrata maintain`` runs both over the whole graph).
5. ``enrich``: embeddings of S, A, H; H → member links by K-means cluster (Algorithm 2);
   semantic edges between embedded nodes.
6. ``write``: nodes, edges, per-node state patches and state arrays (``schema``) into the
   delta.

``component`` runs them in order; ``lookups`` answers what new entities and relationships
merge into from the committed graph; ``groups`` pairs communities with their element
groups; ``search`` serves the ``graph`` mode, with ``names`` (the name index a commit
advances), ``walk_graph`` (the walk's edges and CSR, advanced likewise, into the recycled
memory of ``buffers``) and ``ranking``; ``graph`` holds the graph algorithms (local Leiden
included) and ``parse`` reads the LLM answers.
"""

from graphstrata.engine.heterograph.component import HeterographComponent
from graphstrata.engine.heterograph.query.search import GraphParams, HeterographView

__all__ = ["GraphParams", "HeterographComponent", "HeterographView"]
