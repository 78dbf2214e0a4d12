"""What the heterograph stores: its node kinds, edge kinds and state keys.

(docs/architecture.md, "Heterograph".) Edges are written in one direction per kind (T→S,
S→N, S→R, N→R, N→A, H→member, H→O, new→neighbour); search treats them as undirected.
Between operations the component keeps state (keys ``ST_*``): per-node values (Leiden
label, element group of a G2 node and of an H/O node, K-means cluster) as ``node id ->
value`` mappings (``Delta.put_node_state`` / ``Snapshot.node_state``), which a commit writes
as a patch of the rows that changed (``engine.store.node_state``; the mention rows of multi-line
relationships too, under keys of their own); the centroids as a whole array (``Delta.put_state`` / ``Snapshot.state``).
"""

from __future__ import annotations

from graphstrata.engine.types import EMBEDDED_KINDS, RETRIEVABLE_KINDS, EdgeKind, NodeKind

#: Component name (manifest metadata, state keys).
NAME = "heterograph"

T, S, N, R, A, H, O = (  # noqa: E741
    int(NodeKind.T),
    int(NodeKind.S),
    int(NodeKind.N),
    int(NodeKind.R),
    int(NodeKind.A),
    int(NodeKind.H),
    int(NodeKind.O),
)

# --------------------------------------------------------------------------- node kinds
#: NodeRAG's node kinds (L belongs to the hierarchy).
HETERO_KINDS: tuple[NodeKind, ...] = (
    NodeKind.T,
    NodeKind.S,
    NodeKind.N,
    NodeKind.R,
    NodeKind.A,
    NodeKind.H,
    NodeKind.O,
)
#: Heterograph kinds with an embedding (T, S, A, H); semantic edges join these.
HETERO_EMBEDDED: tuple[int, ...] = tuple(int(k) for k in EMBEDDED_KINDS if k in HETERO_KINDS)
#: Heterograph kinds a graph search may return (T, S, A, H, R; NodeRAG's filter).
HETERO_RETRIEVABLE: tuple[int, ...] = tuple(int(k) for k in RETRIEVABLE_KINDS if k in HETERO_KINDS)
#: Kinds the build embeds itself (T vectors come from the engine).
BUILD_EMBEDDED: tuple[int, ...] = tuple(k for k in HETERO_EMBEDDED if k != T)
#: Vector entry points of a graph search are searched among these kinds.
VECTOR_ENTRY_KINDS: tuple[int, ...] = BUILD_EMBEDDED
#: Nodes of G2, the graph Leiden runs on.
G2_KINDS: tuple[int, ...] = (S, N, R, A)
#: Nodes K-means clusters (the members a high-level element may link to, and H itself).
CLUSTER_KINDS: tuple[int, ...] = (S, A, H)

# --------------------------------------------------------------------------- edge kinds
#: Edge kinds of the heterograph (search builds its CSR from these).
HETERO_EDGE_KINDS: tuple[int, ...] = (
    int(EdgeKind.CHUNK_UNIT),
    int(EdgeKind.UNIT_ENTITY),
    int(EdgeKind.UNIT_RELATION),
    int(EdgeKind.ENTITY_RELATION),
    int(EdgeKind.ENTITY_ATTRIBUTE),
    int(EdgeKind.ELEMENT_MEMBER),
    int(EdgeKind.ELEMENT_TITLE),
    int(EdgeKind.SEMANTIC),
)
#: G1 of NodeRAG's Algorithm 1 (the decomposition edges, for importance).
G1_EDGES: tuple[int, ...] = (
    int(EdgeKind.UNIT_ENTITY),
    int(EdgeKind.UNIT_RELATION),
    int(EdgeKind.ENTITY_RELATION),
)
#: G2 = G1 + attributes (for Leiden).
G2_EDGES: tuple[int, ...] = (*G1_EDGES, int(EdgeKind.ENTITY_ATTRIBUTE))

# --------------------------------------------------------------------------- state keys
#: Per S/N/R/A node (node state): community of the last Leiden run (labels kept stable).
ST_LEIDEN = "leiden_labels"
#: Per S/N/R/A node (node state): group whose elements were written from it (-1: none).
ST_GROUP_OF = "element_group_of"
#: Per H/O node (node state): the element group it belongs to.
ST_GROUP_NODE = "element_group_node"
#: The same as two parallel int64 arrays (H/O ids, group keys), as written before
#: ``ST_GROUP_NODE``: read while an index has no ``ST_GROUP_NODE`` yet, no longer written.
ST_GROUP_NODE_IDS, ST_GROUP_NODE_KEYS = "group_node_ids", "group_node_keys"
#: float32 [K, dim]: the K-means centroids.
ST_KMEANS_CENTROIDS = "kmeans_centroids"
#: Per S/A/H node (node state): K-means cluster.
ST_KMEANS = "kmeans_labels"
#: Which unit asserted which line of a relationship with two or more lines (a one-line
#: relationship's supporters all assert its line, so it needs no record), as two mappings
#: (node state) from a mention key (``lookups.mention_keys``: the relationship and the row's
#: place among its rows, below 0) to the unit and to the line hash.
ST_MENTION_UNIT, ST_MENTION_LINE = "mention_unit", "mention_line"
#: The same as parallel arrays of unit id, relationship id and line hash, as written
#: before: read while an index has no ``ST_MENTION_UNIT`` yet, no longer written.
ST_MENTION_S, ST_MENTION_R, ST_MENTION_HASH = "mention_s", "mention_r", "mention_hash"
