"""EraRAG hierarchy: LSH-layered summaries with local insert and delete.

(docs/architecture.md, "Hierarchy".)

Structure
---------
Layer 0 is the text chunks (kind T). Layer ``l >= 1`` holds summaries (kind L, ``layer = l``).
Every node of a non-top layer has ``parent`` = the L node one layer up that summarizes it; a
*segment* is the set of children of one L node, and its size lies in ``[s_min, s_max]``
(``core.partition``'s guarantees). The *top* layer is the first layer that fits in one
segment (at most ``s_max`` nodes) or layer ``max_layers``; its nodes have ``parent = -1``.
``code`` is a node's LSH code under the index's stored hyperplanes (the same hyperplanes for
every layer and every later operation; they are never regenerated). PARENT_CHILD edges link
each L node to its children, so graph views can walk the hierarchy.

Update (build = insert into an empty hierarchy; EraRAG Algorithm 3, extended to deletes)
-----------------------------------------------------------------------------------------
Per layer, bottom-up:

1. The layer's items are its surviving committed nodes plus the nodes that are new in this
   operation (new chunks; new summaries made one layer down). Items whose parent died (a
   removed chunk's segment, a replaced summary's segment) mark that segment *touched*.
2. ``core.partition.repartition`` places the new items by code and re-examines only the
   segments that gained items or were touched (split / merge); every other segment keeps
   its membership and its summary. By default new items are first partitioned among
   themselves, and each part that reaches ``s_min`` becomes a new segment (a new bucket in
   the paper's words); only the rest join their Hamming-nearest existing segment. LSH
   scatters one document's chunks over many codes, so joining nearest segments one by one
   makes a 5% insert re-summarize about half of all segments; grouping first keeps the work
   in proportion to the change (``HierarchyComponent(group_new_first=False)`` gives the
   plain placement).
3. Each segment whose membership changed gets a NEW summary node (new id, one batched LLM
   call for the whole layer, stage ``summarize_layer_<l>``) that adopts its members; the
   summary it replaces is deleted, and the new one takes its seat in the segment above,
   which becomes changed in turn, so the change climbs the ancestor path only. (The paper
   re-buckets the new node by its code; a re-summarized node's code often moves a few bits,
   which would touch a second segment per layer and make an insert-then-delete leave the
   upper layers reshuffled.) Summaries of brand-new segments (splits, grouped new items, a
   new layer) are placed by code like new chunks. A summary whose text was already
   embedded (in this operation, or by a live chunk or summary) reuses that vector
   (``UpdateContext.embed_nodes``).
4. Stop when a layer has no new and no removed items. When a layer fits in one segment (or
   is layer ``max_layers``) it becomes the top: its nodes lose their parents and any older
   layers above are deleted. When the top layer outgrows one segment, a new layer is
   partitioned and summarized in the same operation (never an empty root).

Members are always ordered by *anchor* (the smallest chunk id below them, i.e. corpus
order), both in the summary prompt and in the partition input, so equal memberships give
equal prompts and the partition result does not depend on the order nodes were created in.

Splits of an equal-code group larger than ``s_max`` order the group by a *tiebreak*: the
projection of each vector on one extra random direction, drawn once from the hyperplane
seed (the "next hyperplane" of the same seeded sequence), stored as component state and
read back afterwards. A fixed direction keeps splits stable under inserts (a new item slots
into the order instead of re-shuffling the group, as a per-group principal direction would).

Search
------
``collapsed``: vector top-k over chunks and all summary layers, greedy-packed under the
token budget (EraRAG Algorithm 2). ``detailed`` / ``summarized`` (§III-D): a share ``p``
(query param ``bias_share``, default ``hierarchy.bias_share``) of the budget is filled from
collapsed's ranking with chunks (detailed) or with the summaries that outscore their own
members found (summarized, ``hierarchy.compete``) first, and the rest of the budget from
every other candidate of that ranking (``view``; decision 0035).
Modules: ``update`` (the tree of one version and the update above), ``view`` (the search
modes and their parameters), ``component`` (the component that ties them to the engine).
"""

from graphstrata.engine.hierarchy.component import HierarchyComponent
from graphstrata.engine.hierarchy.update import HierarchyTree, tiebreak_direction
from graphstrata.engine.hierarchy.view import HierarchyParams, HierarchyView

__all__ = [
    "HierarchyComponent",
    "HierarchyParams",
    "HierarchyTree",
    "HierarchyView",
    "tiebreak_direction",
]
