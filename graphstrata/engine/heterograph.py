"""NodeRAG heterograph (paper §2, Appendix C) kept incrementally in the index.

One operation (inserts and deletes together) runs these stages, each touching only what the
change reaches:

1. **Decomposition**: the new chunks (T) → semantic units (S), entities (N), relationships
   (R), one LLM batch (+ one retry batch for unusable answers). Entities merge on
   :func:`normalize_name`; relationships on their (unordered) endpoint pair, the node text
   keeping one line ``"A — relation — B"`` per distinct relation. Deleted chunks take their S
   with them; an N or R is kept while some live S mentions it, and its ``docs`` are exactly
   the documents of those S.
2. **Attributes (A)**: important entities = k-core ∪ sampled betweenness on G1 (S, N, R and
   their decomposition edges; Algorithm 1). An attribute is (re)written only for entities
   that became important, or whose facts changed; entities that stopped being important
   lose theirs, so an incremental index converges to what a static build would hold.
3. **Communities (H, O)**: Leiden (modularity, seeded) on G2 = G1 + A, started from the
   previous membership and run until no node moves (from a converged partition a small
   change moves few nodes). A community whose members moved by more than
   ``community_change_share`` (Jaccard distance to the members its elements were last
   written from), or whose elements used text of a deleted document, gets new elements;
   the others keep theirs. H is linked to its O, and to the S/A/H members of its community
   that share its K-means cluster (Algorithm 2; K-means is refit when K doubles, new nodes
   are assigned to the nearest centroid in between).
4. **Enrichment**: T–S edges; embeddings of S, A, H (T come from the engine); each new
   embedded node linked to its ``semantic_neighbours`` nearest embedded T/S/A/H nodes by an
   exact blocked GEMM (weight 1 per edge; a duplicate of an existing edge adds 1).

Edges are written in one direction per kind (T→S, S→N, S→R, N→R, N→A, H→member, H→O,
new→neighbour); search treats them as undirected. Between operations the component keeps
small state arrays (see ``ST_*``): per-node arrays hold 4 bytes a node and no ids, being
aligned with the committed version's nodes.

Every LLM stage is one batch (``decompose``, ``attribute``, ``community``, and a retry batch
for unusable JSON answers); the operation report carries calls and tokens per stage, and a
note with the importance / community / cluster counters of the operation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from graphstrata.engine.component import ChangeSet, Component, ComponentView, UpdateContext
from graphstrata.engine.config import HeterographConfig, IndexConfig
from graphstrata.engine.heterograph_graph import (
    HETERO_EDGE_KINDS,
    cluster_count,
    group_by,
    important_entities,
    initial_membership,
    kmeans_assign,
    kmeans_fit,
    leiden,
    match_communities,
    nearest_neighbours,
    unique_pairs,
)
from graphstrata.engine.heterograph_parse import (
    Element,
    Unit,
    normalize_name,
    parse_decomposition,
    parse_elements,
    stable_hash,
)
from graphstrata.engine.heterograph_search import GraphParams, HeterographView
from graphstrata.engine.params import ModeParams
from graphstrata.engine.prompts import attribute_request, community_request, decompose_request
from graphstrata.engine.store import Snapshot
from graphstrata.engine.tokens import count_tokens_batch
from graphstrata.engine.types import EdgeKind, NodeKind
from graphstrata.engine.vectors import VectorIndex

NAME = "heterograph"

#: A community needs this many semantic units / attributes to get high-level elements;
#: smaller ones (an isolated unit, a lone entity pair) have nothing to synthesize.
MIN_COMMUNITY_UNITS = 3
#: At most this many high-level elements are kept per community answer.
MAX_ELEMENTS_PER_COMMUNITY = 5
#: Context budgets of one attribute / community prompt (newest facts first). NodeRAG sends
#: everything, which for a hub entity of a news corpus is tens of thousands of tokens.
ATTRIBUTE_FACT_TOKENS = 1500
ATTRIBUTE_RELATION_TOKENS = 500
COMMUNITY_CONTEXT_TOKENS = 3000
#: Leiden backend ("igraph" or "leidenalg"); see benchmarks/results/heterograph.md.
LEIDEN_BACKEND = "igraph"

#: G1 of Algorithm 1 (decomposition edges) and G2 (+ attributes) for Leiden.
G1_EDGES = (int(EdgeKind.UNIT_ENTITY), int(EdgeKind.UNIT_RELATION), int(EdgeKind.ENTITY_RELATION))
G2_EDGES = (*G1_EDGES, int(EdgeKind.ENTITY_ATTRIBUTE))

_T, _S, _N, _R, _A, _H, _O = (
    int(NodeKind.T),
    int(NodeKind.S),
    int(NodeKind.N),
    int(NodeKind.R),
    int(NodeKind.A),
    int(NodeKind.H),
    int(NodeKind.O),
)
_EMPTY = np.zeros(0, np.int64)

# State arrays (Delta.put_state / Snapshot.state). Per-node arrays are aligned with the
# committed version's live nodes of the listed kinds, in id order, so they hold no ids:
# 4 bytes a node, rewritten by each operation.
ST_LEIDEN = "leiden_labels"  # int32, S/N/R/A: community of the last Leiden run
ST_GROUP_OF = "element_group_of"  # int32, S/N/R/A: group whose elements were written from it
ST_GROUP_NODE_IDS, ST_GROUP_NODE_KEYS = "group_node_ids", "group_node_keys"  # H/O -> group
ST_KMEANS_CENTROIDS = "kmeans_centroids"  # float32 [K, dim]
ST_KMEANS = "kmeans_labels"  # int32, S/A/H: K-means cluster
# Which unit asserted which line of a relationship with two or more lines (a one-line
# relationship's supporters all assert its line, so it needs no record).
ST_MENTION_S, ST_MENTION_R, ST_MENTION_HASH = "mention_s", "mention_r", "mention_hash"
G2_KINDS = (int(NodeKind.S), int(NodeKind.N), int(NodeKind.R), int(NodeKind.A))
CLUSTER_KINDS = (int(NodeKind.S), int(NodeKind.A), int(NodeKind.H))


def relation_line(source: str, relation: str, target: str) -> str:
    """The text of one relation inside a relationship node."""
    return f"{source} — {relation} — {target}" if relation else f"{source} — {target}"


class HeterographComponent(Component):
    """The NodeRAG heterograph: builds and maintains T/S/N/R/A/H/O nodes; serves ``graph``."""

    name = NAME
    modes = ("graph",)
    mode_params: ClassVar[dict[str, type[ModeParams]]] = {"graph": GraphParams}

    def enabled(self, config: IndexConfig) -> bool:
        return bool(config.heterograph.enabled)

    def update(self, ctx: UpdateContext, change: ChangeSet) -> None:
        if change.empty:
            return
        _Operation(ctx, change).run()

    def view(self, snapshot: Snapshot, vectors: VectorIndex, config: IndexConfig) -> ComponentView:
        return HeterographView(snapshot, vectors, config)


# ============================================================================================
# One operation
# ============================================================================================


@dataclass
class _EdgeBuffer:
    """New edges of one operation, per kind, written to the delta at the end."""

    parts: dict[int, list[tuple[np.ndarray, np.ndarray]]] = field(default_factory=dict)

    def add(
        self, kind: int, src: Iterable[int] | np.ndarray, dst: Iterable[int] | np.ndarray
    ) -> None:
        s = np.asarray(list(src) if not isinstance(src, np.ndarray) else src, dtype=np.int64)
        d = np.asarray(list(dst) if not isinstance(dst, np.ndarray) else dst, dtype=np.int64)
        if s.size:
            self.parts.setdefault(int(kind), []).append((s, d))

    def of(self, kind: int) -> tuple[np.ndarray, np.ndarray]:
        parts = self.parts.get(int(kind), [])
        if not parts:
            return _EMPTY, _EMPTY
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


class _Operation:
    """The heterograph part of one insert/delete operation."""

    def __init__(self, ctx: UpdateContext, change: ChangeSet):
        self.ctx = ctx
        self.change = change
        self.cfg: HeterographConfig = ctx.config.heterograph
        self.snap = ctx.snapshot
        self.nodes = ctx.snapshot.nodes
        self.report = ctx.report
        self.notes: list[str] = []
        self.meta = ctx.snapshot.component_meta(NAME)
        self.dead: set[int] = set(int(i) for i in change.removed_chunk_ids)
        # New or rewritten node rows of this operation (id -> value), written at the end.
        self.new_kind: dict[int, int] = {}
        self.text: dict[int, str] = {}
        self.docs: dict[int, list[int]] = {}
        self.replaced: set[int] = set()
        self.edges = _EdgeBuffer()
        self._snap_edges = self._load_snapshot_edges()

    # ------------------------------------------------------------------ snapshot access
    def _load_snapshot_edges(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        table = self.snap.edges
        if table.num_rows == 0:
            return {}
        kind = table.column("kind").to_numpy()
        src = table.column("src").to_numpy()
        dst = table.column("dst").to_numpy()
        out = {}
        for k in HETERO_EDGE_KINDS:
            sel = kind == k
            if sel.any():
                out[k] = (src[sel], dst[sel])
        return out

    def snap_edges(self, kind: int) -> tuple[np.ndarray, np.ndarray]:
        return self._snap_edges.get(int(kind), (_EMPTY, _EMPTY))

    def dead_array(self) -> np.ndarray:
        return np.fromiter(self.dead, dtype=np.int64, count=len(self.dead)) if self.dead else _EMPTY

    def live_edges(self, kinds: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Edges of ``kinds`` after this operation (committed ones with live ends + new)."""
        dead = np.sort(self.dead_array())
        srcs, dsts = [], []
        for k in kinds:
            s, d = self.snap_edges(k)
            if s.size and dead.size:
                keep = ~(np.isin(s, dead) | np.isin(d, dead))
                s, d = s[keep], d[keep]
            ns, nd = self.edges.of(k)
            if ns.size and dead.size:
                keep = ~(np.isin(ns, dead) | np.isin(nd, dead))
                ns, nd = ns[keep], nd[keep]
            srcs += [s, ns]
            dsts += [d, nd]
        return np.concatenate(srcs), np.concatenate(dsts)

    def live_ids(self, *kinds: int) -> np.ndarray:
        """Sorted ids of the live nodes of ``kinds`` after this operation."""
        old = self.nodes.ids_of_kind(*kinds)
        new = np.asarray([i for i, k in self.new_kind.items() if k in kinds], dtype=np.int64)
        ids = np.concatenate([old, new])
        if self.dead:
            ids = ids[~np.isin(ids, self.dead_array())]
        return np.unique(ids)

    def text_of(self, ids: Iterable[int]) -> list[str]:
        ids = [int(i) for i in ids]
        missing = [i for i in ids if i not in self.text]
        found = dict(zip(missing, self.nodes.text_of(missing), strict=True)) if missing else {}
        return [self.text[i] if i in self.text else found[i] for i in ids]

    def docs_of(self, ids: Iterable[int]) -> list[list[int]]:
        ids = [int(i) for i in ids]
        missing = [i for i in ids if i not in self.docs]
        found = dict(zip(missing, self.nodes.docs_of(missing), strict=True)) if missing else {}
        return [self.docs[i] if i in self.docs else list(found[i]) for i in ids]

    def tokens_of(self, ids: Iterable[int]) -> np.ndarray:
        ids = [int(i) for i in ids]
        out = np.zeros(len(ids), np.int64)
        missing = [j for j, i in enumerate(ids) if i not in self.text]
        if missing:
            rows = self.nodes.rows([ids[j] for j in missing])
            out[missing] = self.nodes.tokens[rows]
        fresh = [j for j, i in enumerate(ids) if i in self.text]
        if fresh:
            out[fresh] = count_tokens_batch([self.text[ids[j]] for j in fresh])
        return out

    def state(self, name: str) -> np.ndarray | None:
        return self.snap.state(NAME, name)

    def aligned_state(
        self, name: str, kinds: Sequence[int]
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """``(ids, values)`` of a per-node state array written for the committed version's
        live nodes of ``kinds`` (``None`` when absent or not aligned with this version)."""
        values = self.state(name)
        ids = self.nodes.ids_of_kind(*kinds)
        if values is None or values.shape[0] != ids.shape[0]:
            return None
        return ids, values.astype(np.int64)

    # ------------------------------------------------------------------ run
    def run(self) -> None:
        with self.report.stage("heterograph:structure"):
            self._load_names()
            dead_units = self._units_of_removed_chunks()
        with self.report.stage("heterograph:decompose"):
            decomposed = self._decompose()
        with self.report.stage("heterograph:structure"):
            new_units = self._add_units(decomposed)
            touched = self._settle_entities_and_relations(dead_units, new_units)
        with self.report.stage("heterograph:attributes"):
            self._attributes(touched)
        with self.report.stage("heterograph:communities"):
            new_elements, kept = self._communities()
        with self.report.stage("heterograph:embed"):
            self._embed_new_nodes()
        with self.report.stage("heterograph:clusters"):
            self._cluster_and_link(new_elements, kept)
        with self.report.stage("heterograph:semantic_edges"):
            self._semantic_edges()
        with self.report.stage("heterograph:write"):
            self._write()
        if self.notes:
            self.report.notes.extend(f"heterograph: {n}" for n in self.notes)

    # ------------------------------------------------------------------ 1. decomposition
    def _load_names(self) -> None:
        """Entity key -> id, and relationship endpoint pair -> id, from the snapshot."""
        n_ids = self.nodes.ids_of_kind(_N)
        self.entity_by_key: dict[str, int] = {}
        for nid, name in zip(n_ids.tolist(), self.nodes.text_of(n_ids), strict=True):
            self.entity_by_key.setdefault(normalize_name(name), nid)
        self.display: dict[int, str] = {}
        src, dst = self.snap_edges(int(EdgeKind.ENTITY_RELATION))  # N -> R
        self.relation_by_pair: dict[tuple[int, int], int] = {}
        self.endpoints: dict[int, list[int]] = {}
        for n, r in zip(src.tolist(), dst.tolist(), strict=True):
            self.endpoints.setdefault(r, []).append(n)
        for r, ends in self.endpoints.items():
            if len(ends) == 2:
                a, b = sorted(ends)
                self.relation_by_pair[(a, b)] = r
        s, r, h = (self.state(ST_MENTION_S), self.state(ST_MENTION_R), self.state(ST_MENTION_HASH))
        self.mentions: dict[int, list[tuple[int, int]]] = {}
        if s is not None and r is not None and h is not None:
            for unit, rid, line in zip(s.tolist(), r.tolist(), h.tolist(), strict=True):
                self.mentions.setdefault(rid, []).append((unit, line))
        self.new_mentions: dict[int, list[tuple[int, int]]] = {}  # R -> (S, line hash)
        self.new_lines: dict[int, list[str]] = {}

    def _units_of_removed_chunks(self) -> np.ndarray:
        removed = self.change.removed_chunk_ids
        if removed.size == 0:
            return _EMPTY
        t, s = self.snap_edges(int(EdgeKind.CHUNK_UNIT))
        units = np.unique(s[np.isin(t, removed)])
        self.dead.update(int(i) for i in units)
        return units

    def _decompose(self) -> list[list[Unit] | None]:
        """One LLM batch for all new chunks, one retry batch for unusable answers."""
        texts = self.change.added_chunk_texts
        if not texts:
            return []
        max_tokens = int(self.cfg.decompose_tokens)
        answers = self.ctx.llm.complete(
            "decompose", [decompose_request(t, max_tokens) for t in texts]
        )
        units = [parse_decomposition(a.text) for a in answers]
        retry = [i for i, u in enumerate(units) if u is None]
        if retry:
            again = self.ctx.llm.complete(
                "decompose_retry", [decompose_request(texts[i], max_tokens) for i in retry]
            )
            for i, answer in zip(retry, again, strict=True):
                units[i] = parse_decomposition(answer.text)
            skipped = [i for i in retry if units[i] is None]
            self.notes.append(
                f"{len(retry)} chunk decompositions unusable, retried; {len(skipped)} skipped"
                + (
                    f" (chunk ids {self.change.added_chunk_ids[skipped][:10].tolist()})"
                    if skipped
                    else ""
                )
            )
        return units

    def _entity(self, name: str) -> int | None:
        key = normalize_name(name)
        if not key:
            return None
        nid = self.entity_by_key.get(key)
        if nid is None:
            nid = int(self.ctx.delta.new_node_ids(1)[0])
            self.entity_by_key[key] = nid
            self.new_kind[nid] = _N
            self.text[nid] = name
        return nid

    def _name(self, nid: int) -> str:
        if nid not in self.display:
            self.display[nid] = self.text_of([nid])[0]
        return self.display[nid]

    def _relation(self, a: int, b: int) -> int:
        pair = (min(a, b), max(a, b))
        rid = self.relation_by_pair.get(pair)
        if rid is None:
            rid = int(self.ctx.delta.new_node_ids(1)[0])
            self.relation_by_pair[pair] = rid
            self.new_kind[rid] = _R
            self.endpoints[rid] = list(pair)
            self.edges.add(int(EdgeKind.ENTITY_RELATION), pair, [rid, rid])
        return rid

    def _add_units(self, decomposed: list[list[Unit] | None]) -> np.ndarray:
        """New S nodes with their T–S, S–N, S–R edges; N and R created or reused."""
        chunk_ids = self.change.added_chunk_ids.tolist()
        chunk_docs = self.change.added_chunk_docs.tolist()
        n_units = sum(len(u) for u in decomposed if u)
        unit_ids = self.ctx.delta.new_node_ids(n_units).tolist()
        pos = 0
        t_src, s_dst, sn_s, sn_n, sr_s, sr_r = [], [], [], [], [], []
        for chunk, doc, units in zip(chunk_ids, chunk_docs, decomposed, strict=True):
            for unit in units or ():
                sid = unit_ids[pos]
                pos += 1
                self.new_kind[sid] = _S
                self.text[sid] = unit.text
                self.docs[sid] = [int(doc)]
                t_src.append(chunk)
                s_dst.append(sid)
                entities: dict[int, None] = {}
                for name in unit.entities:
                    nid = self._entity(name)
                    if nid is not None:
                        entities[nid] = None
                relations: dict[int, None] = {}
                for source, relation, target in unit.relationships:
                    a, b = self._entity(source), self._entity(target)
                    if a is None or b is None or a == b:
                        continue
                    entities[a] = entities[b] = None
                    rid = self._relation(a, b)
                    relations[rid] = None
                    line = relation_line(self._name(a), relation, self._name(b))
                    self.new_mentions.setdefault(rid, []).append((sid, stable_hash(line)))
                    lines = self.new_lines.setdefault(rid, [])
                    if line not in lines:
                        lines.append(line)
                sn_s += [sid] * len(entities)
                sn_n += list(entities)
                sr_s += [sid] * len(relations)
                sr_r += list(relations)
        self.edges.add(int(EdgeKind.CHUNK_UNIT), t_src, s_dst)
        self.edges.add(int(EdgeKind.UNIT_ENTITY), sn_s, sn_n)
        self.edges.add(int(EdgeKind.UNIT_RELATION), sr_s, sr_r)
        return np.asarray(unit_ids, dtype=np.int64)

    def _supporters(self, kind: int, targets: np.ndarray) -> dict[int, list[int]]:
        """Live S ids mentioning each target (through ``kind`` edges S -> target)."""
        src, dst = self.live_edges([kind])
        sel = np.isin(dst, targets)
        out: dict[int, list[int]] = {int(t): [] for t in targets.tolist()}
        for s, t in zip(src[sel].tolist(), dst[sel].tolist(), strict=True):
            out[t].append(s)
        return out

    def _relation_lines(self, rid: int, old_lines: list[str], units: list[int]) -> list[str]:
        """Lines of a touched relationship still asserted by a live unit, plus new ones;
        records who asserts what when the relationship ends with two or more lines."""
        new_units = {u for u in units if u in self.new_kind}
        old_units = [u for u in units if u not in self.new_kind]
        if len(old_lines) >= 2:
            rows = [(u, h) for u, h in self.mentions.pop(rid, []) if u not in self.dead]
        else:  # every supporter of a one-line relationship asserts that line
            rows = [(u, stable_hash(old_lines[0])) for u in old_units] if old_lines else []
        rows += [(u, h) for u, h in self.new_mentions.get(rid, []) if u in new_units]
        alive = {h for _, h in rows}
        lines = [ln for ln in old_lines if stable_hash(ln) in alive]
        lines += [ln for ln in self.new_lines.get(rid, []) if ln not in lines]
        if len(lines) >= 2:
            self.mentions[rid] = rows
        return lines

    def _settle_entities_and_relations(
        self, dead_units: np.ndarray, new_units: np.ndarray
    ) -> np.ndarray:
        """Recompute support (docs) of every touched N and R; drop unsupported ones.

        Returns the touched entities still alive (their facts changed).
        """
        kinds = (int(EdgeKind.UNIT_ENTITY), int(EdgeKind.UNIT_RELATION))
        touched: dict[int, np.ndarray] = {}
        for kind in kinds:
            src, dst = self.snap_edges(kind)
            old = dst[np.isin(src, dead_units)] if dead_units.size else _EMPTY
            _ns, nd = self.edges.of(kind)
            touched[kind] = np.unique(np.concatenate([old, nd]))
        alive_entities = []
        for kind, targets in touched.items():
            supporters = self._supporters(kind, targets)
            for node, units in supporters.items():
                is_new = node in self.new_kind
                if not units:
                    if not is_new:
                        self.dead.add(node)
                    else:  # created and unsupported in the same operation: never written
                        self.new_kind.pop(node)
                    continue
                docs = sorted({d for ds in self.docs_of(units) for d in ds})
                if kind == int(EdgeKind.UNIT_ENTITY):
                    alive_entities.append(node)
                    if is_new or docs != sorted(self.nodes.docs_of([node])[0]):
                        self.docs[node] = docs
                        if not is_new:
                            self.replaced.add(node)
                    continue
                old_lines = [] if is_new else self.nodes.text_of([node])[0].split("\n")
                lines = self._relation_lines(node, old_lines, units)
                text = "\n".join(lines)
                if is_new or docs != sorted(self.nodes.docs_of([node])[0]) or lines != old_lines:
                    self.docs[node] = docs
                    self.text[node] = text
                    if not is_new:
                        self.replaced.add(node)
        # Attributes of dropped entities go with them.
        a_src, a_dst = self.snap_edges(int(EdgeKind.ENTITY_ATTRIBUTE))
        gone = np.isin(a_src, self.dead_array())
        self.dead.update(int(a) for a in a_dst[gone])
        self.report.notes.append(
            f"heterograph: {len(new_units)} semantic units added, {len(dead_units)} removed"
        )
        return np.asarray(sorted(alive_entities), dtype=np.int64)

    # ------------------------------------------------------------------ 2. attributes
    def _facts(self, entities: np.ndarray, before: bool) -> dict[int, tuple[list[int], list[int]]]:
        """The (S ids, R ids) an attribute of each entity is written from, newest first
        within the token budgets; ``before`` reads the committed graph instead."""
        if before:
            sn = self.snap_edges(int(EdgeKind.UNIT_ENTITY))
            nr = self.snap_edges(int(EdgeKind.ENTITY_RELATION))
        else:
            sn = self.live_edges([int(EdgeKind.UNIT_ENTITY)])
            nr = self.live_edges([int(EdgeKind.ENTITY_RELATION)])
        sel = np.isin(sn[1], entities)
        units = group_by(sn[1][sel], sn[0][sel])
        sel = np.isin(nr[0], entities)
        rels = group_by(nr[0][sel], nr[1][sel])
        out = {}
        for e in entities.tolist():
            s_ids = np.unique(units.get(e, _EMPTY))[::-1]
            r_ids = np.unique(rels.get(e, _EMPTY))[::-1]
            out[e] = (
                self._within(s_ids, ATTRIBUTE_FACT_TOKENS, before),
                self._within(r_ids, ATTRIBUTE_RELATION_TOKENS, before),
            )
        return out

    def _within(self, ids: np.ndarray, budget: int, before: bool) -> list[int]:
        if ids.size == 0:
            return []
        tokens = self.nodes.tokens[self.nodes.rows(ids)] if before else self.tokens_of(ids)
        fits = np.cumsum(tokens) <= budget
        fits[0] = True  # at least one fact, even a long one
        return sorted(ids[fits].tolist())

    def _attributes(self, touched: np.ndarray) -> None:
        s_ids = self.live_ids(_S)
        n_ids = self.live_ids(_N)
        r_ids = self.live_ids(_R)
        g1_ids = np.unique(np.concatenate([s_ids, n_ids, r_ids]))
        src, dst = self.live_edges(G1_EDGES)
        _sn_s, sn_n = unique_pairs(*self.live_edges([int(EdgeKind.UNIT_ENTITY)]))
        support = np.zeros(g1_ids.size, np.int64)
        np.add.at(support, np.searchsorted(g1_ids, sn_n), 1)
        is_entity = np.isin(g1_ids, n_ids)
        imp = important_entities(
            g1_ids, is_entity, support, src, dst, self.cfg.betweenness_sources, self.cfg.seed
        )
        important = set(imp.entities.tolist())
        # Current attributes: N -> A (committed, alive).
        a_src, a_dst = self.snap_edges(int(EdgeKind.ENTITY_ATTRIBUTE))
        has: dict[int, list[int]] = {}
        for n, a in zip(a_src.tolist(), a_dst.tolist(), strict=True):
            if n not in self.dead and a not in self.dead:
                has.setdefault(n, []).append(a)
        touched_set = set(touched.tolist())
        candidates = np.asarray(sorted(important & touched_set & set(has)), dtype=np.int64)
        changed: set[int] = set()
        if candidates.size:
            old = self._facts(candidates, before=True)
            new = self._facts(candidates, before=False)
            changed = {e for e in candidates.tolist() if old[e] != new.get(e)}
        targets = sorted((important - set(has)) | changed)
        dropped = sorted(set(has) - important)
        for e in [*changed, *dropped]:
            self.dead.update(has[e])
        self.attr_stats = {
            "important": len(important),
            "k_core": imp.k_core,
            "by_core": imp.by_core,
            "by_betweenness": imp.by_betweenness,
            "written": 0,
            "refreshed": len(changed),
            "dropped": len(dropped),
        }
        if not targets:
            return
        facts = self._facts(np.asarray(targets, dtype=np.int64), before=False)
        requests = []
        for e in targets:
            units, rels = facts[e]
            requests.append(
                attribute_request(
                    self._name(e),
                    self.text_of(units),
                    [ln for t in self.text_of(rels) for ln in t.split("\n")],
                    int(self.cfg.attribute_tokens),
                )
            )
        answers = self.ctx.llm.complete("attribute", requests)
        written = [(e, " ".join(a.text.split())) for e, a in zip(targets, answers, strict=True)]
        written = [(e, t) for e, t in written if t]
        if len(written) < len(targets):
            self.notes.append(f"{len(targets) - len(written)} empty attribute answers skipped")
        ids = self.ctx.delta.new_node_ids(len(written)).tolist()
        for aid, (e, text) in zip(ids, written, strict=True):
            units, rels = facts[e]
            self.new_kind[aid] = _A
            self.text[aid] = text
            self.docs[aid] = sorted({d for ds in self.docs_of(units + rels) for d in ds})
        self.edges.add(int(EdgeKind.ENTITY_ATTRIBUTE), [e for e, _ in written], ids)
        self.attr_stats["written"] = len(written)

    # ------------------------------------------------------------------ 3. communities
    def _groups(self) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
        """Element groups from state: key -> member ids (alive), key -> its H and O ids."""
        nids, nkeys = self.state(ST_GROUP_NODE_IDS), self.state(ST_GROUP_NODE_KEYS)
        nodes = group_by(nkeys, nids) if nids is not None and nkeys is not None else {}
        members: dict[int, np.ndarray] = {}
        aligned = self.aligned_state(ST_GROUP_OF, G2_KINDS)
        if aligned is not None:
            ids, keys = aligned
            keep = (keys >= 0) & ~np.isin(ids, self.dead_array())
            members = group_by(keys[keep], ids[keep])
        for key in nodes:
            members.setdefault(key, _EMPTY)
        return members, nodes

    def _communities(self) -> tuple[dict[int, list[int]], dict[int, int]]:
        """Leiden from the previous membership; (re)generate H/O where membership moved.

        Returns ``({community label: new H ids}, {community label: kept group key})``.
        """
        g2_ids = self.live_ids(_S, _N, _R, _A)
        src, dst = self.live_edges(G2_EDGES)
        self.g2_ids = g2_ids
        prev = self.aligned_state(ST_LEIDEN, G2_KINDS)
        init = initial_membership(g2_ids, *prev) if prev is not None else None
        membership = leiden(
            int(g2_ids.size),
            np.searchsorted(g2_ids, src),
            np.searchsorted(g2_ids, dst),
            np.ones(src.size, np.float64),
            seed=int(self.cfg.seed),
            initial=init,
            backend=LEIDEN_BACKEND,
        )
        self.membership = membership
        communities = group_by(membership, g2_ids)
        content_kinds = np.isin(g2_ids, self.live_ids(_S, _A))
        content = group_by(membership[content_kinds], g2_ids[content_kinds])
        eligible = {
            c: communities[c] for c, ids in content.items() if ids.size >= MIN_COMMUNITY_UNITS
        }
        group_members, group_nodes = self._groups()
        # Elements written from a deleted document's text are rewritten (or dropped): its
        # content must not outlive it.
        removed = set(self.change.removed_doc_keys.tolist())
        stale = {
            key
            for key, ids in group_nodes.items()
            if removed and any(removed & set(d) for d in self.docs_of(ids[:1]))
        }
        match = match_communities(
            eligible, group_members, float(self.cfg.community_change_share), stale
        )
        for key in match.dropped + [k for _, k in match.regenerate if k is not None]:
            self.dead.update(int(i) for i in group_nodes.get(key, _EMPTY))
        self.group_members = {k: v for k, v in group_members.items() if k in match.kept.values()}
        self.group_nodes = {k: v for k, v in group_nodes.items() if k in match.kept.values()}
        self.content = content
        labels = [label for label, _ in match.regenerate]
        elements = self._write_elements(labels, content)
        next_key = int(self.meta.get("next_group_key", 0))
        new_elements: dict[int, list[int]] = {}
        for label, ids in elements.items():
            key = next_key
            next_key += 1
            self.group_members[key] = communities[label]
            self.group_nodes[key] = np.asarray(ids, dtype=np.int64)
            new_elements[label] = [i for i in ids if self.new_kind.get(i) == _H]
        self.next_group_key = next_key
        self.community_stats = {
            "communities": len(communities),
            "eligible": len(eligible),
            "kept": len(match.kept),
            "regenerated": len(elements),
            "retired": len(match.dropped),
            "stale": len(stale),
        }
        return new_elements, match.kept

    def _community_context(self, ids: np.ndarray) -> list[int]:
        newest = np.sort(ids)[::-1]
        tokens = self.tokens_of(newest)
        fits = np.cumsum(tokens) <= COMMUNITY_CONTEXT_TOKENS
        fits[0] = True
        return sorted(newest[fits].tolist())

    def _write_elements(
        self, labels: list[int], content: dict[int, np.ndarray]
    ) -> dict[int, list[int]]:
        """One LLM batch for the communities' elements (+ one retry); H, O and H–O edges."""
        if not labels:
            return {}
        used = {label: self._community_context(content[label]) for label in labels}
        max_tokens = int(self.cfg.element_tokens)
        requests = [community_request(self.text_of(used[c]), max_tokens) for c in labels]
        answers = self.ctx.llm.complete("community", requests)
        parsed = [parse_elements(a.text, MAX_ELEMENTS_PER_COMMUNITY) for a in answers]
        retry = [i for i, p in enumerate(parsed) if p is None]
        if retry:
            again = self.ctx.llm.complete("community_retry", [requests[i] for i in retry])
            for i, a in zip(retry, again, strict=True):
                parsed[i] = parse_elements(a.text, MAX_ELEMENTS_PER_COMMUNITY)
            skipped = sum(1 for i in retry if parsed[i] is None)
            self.notes.append(
                f"{len(retry)} community answers unusable, retried; {skipped} skipped"
            )
        out: dict[int, list[int]] = {}
        for label, elements in zip(labels, parsed, strict=True):
            if not elements:
                continue
            docs = sorted({d for ds in self.docs_of(used[label]) for d in ds})
            out[label] = self._element_nodes(elements, docs)
        return out

    def _element_nodes(self, elements: list[Element], docs: list[int]) -> list[int]:
        ids = self.ctx.delta.new_node_ids(2 * len(elements)).tolist()
        h_ids, o_ids = ids[0::2], ids[1::2]
        for h, o, el in zip(h_ids, o_ids, elements, strict=True):
            self.new_kind[h], self.text[h], self.docs[h] = _H, el.description, docs
            self.new_kind[o], self.text[o], self.docs[o] = _O, el.title, docs
        self.edges.add(int(EdgeKind.ELEMENT_TITLE), h_ids, o_ids)
        return ids

    # ------------------------------------------------------------------ 4. embeddings
    def _embed_new_nodes(self) -> None:
        """Embed the new S, A, H nodes (each distinct text once)."""
        self.embedded_new: list[int] = []
        for kind in (_S, _A, _H):
            ids = sorted(i for i, k in self.new_kind.items() if k == kind)
            if not ids:
                continue
            texts = [self.text[i] for i in ids]
            unique = list(dict.fromkeys(texts))
            mat = self.ctx.embedder.embed(unique, stage=f"embed_{NodeKind(kind).letter}")
            row = {t: j for j, t in enumerate(unique)}
            vectors = mat[[row[t] for t in texts]]
            id_arr = np.asarray(ids, dtype=np.int64)
            self.ctx.delta.add_vectors(id_arr, kind, vectors)
            self.ctx.remember_vectors(id_arr, vectors)
            self.embedded_new += ids

    # ------------------------------------------------------------------ 5. clusters
    def _cluster_and_link(self, new_elements: dict[int, list[int]], kept: dict[int, int]) -> None:
        """K-means over S/A/H; H -> members sharing its community and its cluster."""
        ids = self.live_ids(_S, _A, _H)
        self.km = None
        if ids.size == 0:
            return
        centroids = self.state(ST_KMEANS_CENTROIDS)
        prev = self.aligned_state(ST_KMEANS, CLUSTER_KINDS)
        k = cluster_count(int(ids.size))
        if centroids is None or prev is None or k >= 2 * centroids.shape[0]:
            # First build, or the corpus grew 4x since the last fit: refit (amortized).
            centroids, labels = kmeans_fit(self.ctx.vectors_of(ids), k, int(self.cfg.seed))
            refit = True
        else:
            prev_ids, prev_labels = prev
            labels = np.empty(ids.size, np.int64)
            pos = np.minimum(np.searchsorted(prev_ids, ids), max(prev_ids.size - 1, 0))
            known = prev_ids[pos] == ids if prev_ids.size else np.zeros(ids.size, bool)
            labels[known] = prev_labels[pos[known]]
            labels[~known] = kmeans_assign(self.ctx.vectors_of(ids[~known]), centroids)
            refit = False
        self.km = (centroids, ids, labels)
        cluster = dict(zip(ids.tolist(), labels.tolist(), strict=True))
        community = dict(zip(self.g2_ids.tolist(), self.membership.tolist(), strict=True))
        h_src: list[int] = []
        h_dst: list[int] = []
        for label, h_ids in new_elements.items():
            members = [int(m) for m in self.content.get(label, _EMPTY)] + h_ids
            by_cluster: dict[int, list[int]] = {}
            for m in members:
                by_cluster.setdefault(cluster[m], []).append(m)
            for h in h_ids:
                for m in by_cluster.get(cluster[h], []):
                    if m != h and (self.new_kind.get(m) != _H or m > h):
                        h_src.append(h)
                        h_dst.append(m)
        # Kept communities: link their elements to the members this operation added.
        new_members = [m for m, kd in self.new_kind.items() if kd in (_S, _A) and m in community]
        kept_h: dict[int, list[int]] = {}
        for label, key in kept.items():
            kept_h[label] = [int(h) for h in self.group_nodes.get(key, _EMPTY) if int(h) in cluster]
        for m in new_members:
            for h in kept_h.get(community[m], []):
                if cluster[h] == cluster[m]:
                    h_src.append(h)
                    h_dst.append(m)
        self.edges.add(int(EdgeKind.ELEMENT_MEMBER), h_src, h_dst)
        self.cluster_stats = {
            "k": int(centroids.shape[0]),
            "refit": refit,
            "member_edges": len(h_src),
        }

    # ------------------------------------------------------------------ 6. semantic edges
    def _semantic_edges(self) -> None:
        """Each new embedded node to its M nearest embedded T/S/A/H nodes (exact GEMM)."""
        new_ids = np.asarray(
            sorted(set(self.embedded_new) | set(self.change.added_chunk_ids.tolist())),
            dtype=np.int64,
        )
        m = int(self.cfg.semantic_neighbours)
        if new_ids.size == 0 or m <= 0:
            return
        dead = self.dead_array()
        base_ids, base_parts = [], []
        vt = self.snap.vectors
        for kind in (_T, _S, _A, _H):
            ids, mat = vt.of_kind(kind)
            if ids.size and dead.size:
                keep = ~np.isin(ids, dead)
                ids, mat = ids[keep], mat[keep]
            base_ids.append(ids)
            base_parts.append(mat)
        new_vecs = self.ctx.vectors_of(new_ids)
        base_ids.append(new_ids)
        base_parts.append(new_vecs)
        src, dst = nearest_neighbours(
            new_vecs, new_ids, np.concatenate(base_parts), np.concatenate(base_ids), m
        )
        self.edges.add(int(EdgeKind.SEMANTIC), src, dst)

    # ------------------------------------------------------------------ write
    def _write(self) -> None:
        delta = self.ctx.delta
        dead = self.dead_array()
        delta.delete_nodes(dead[~np.isin(dead, self.change.removed_chunk_ids)])
        fresh = sorted(i for i in self.new_kind if i not in self.dead)
        if fresh:
            texts = [self.text[i] for i in fresh]
            delta.add_nodes(
                ids=np.asarray(fresh, dtype=np.int64),
                kind=np.asarray([self.new_kind[i] for i in fresh], dtype=np.uint8),
                text=texts,
                tokens=count_tokens_batch(texts),
                docs=[self.docs.get(i, []) for i in fresh],
            )
        replaced = sorted(i for i in self.replaced if i not in self.dead)
        if replaced:
            rows = self.nodes.take(replaced)
            texts = [self.text.get(i) for i in replaced]
            old_texts = self.nodes.text_of(replaced)
            texts = [t if t is not None else o for t, o in zip(texts, old_texts, strict=True)]
            delta.replace_rows(
                rows,
                text=texts,
                tokens=count_tokens_batch(texts),
                docs=[
                    self.docs.get(i, d)
                    for i, d in zip(replaced, self.nodes.docs_of(replaced), strict=True)
                ],
            )
        for kind, parts in self.edges.parts.items():
            src = np.concatenate([p[0] for p in parts])
            dst = np.concatenate([p[1] for p in parts])
            keep = ~(np.isin(src, dead) | np.isin(dst, dead))
            delta.add_edges(src[keep], dst[keep], kind, 1.0)
        self._write_state()

    def _write_state(self) -> None:
        delta = self.ctx.delta
        delta.put_state(NAME, ST_LEIDEN, self.membership.astype(np.int32))
        group_of = np.full(self.g2_ids.size, -1, np.int32)
        for key in sorted(self.group_members):  # later generations win
            ids = self.group_members[key]
            pos = np.minimum(np.searchsorted(self.g2_ids, ids), max(self.g2_ids.size - 1, 0))
            group_of[pos[self.g2_ids[pos] == ids]] = key
        delta.put_state(NAME, ST_GROUP_OF, group_of)
        keys = sorted(self.group_nodes)
        node_ids = [self.group_nodes[k] for k in keys]
        delta.put_state(NAME, ST_GROUP_NODE_IDS, np.concatenate(node_ids) if keys else _EMPTY)
        delta.put_state(
            NAME,
            ST_GROUP_NODE_KEYS,
            np.repeat(np.asarray(keys, np.int64), [m.size for m in node_ids]) if keys else _EMPTY,
        )
        if self.km is not None:
            centroids, _, labels = self.km
            delta.put_state(NAME, ST_KMEANS_CENTROIDS, centroids)
            delta.put_state(NAME, ST_KMEANS, labels.astype(np.int32))
        rows = [
            (unit, rid, line)
            for rid, pairs in self.mentions.items()
            if rid not in self.dead and (rid in self.new_kind or self.nodes.contains([rid])[0])
            for unit, line in pairs
        ]
        m = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
        delta.put_state(NAME, ST_MENTION_S, m[:, 0].copy())
        delta.put_state(NAME, ST_MENTION_R, m[:, 1].copy())
        delta.put_state(NAME, ST_MENTION_HASH, m[:, 2].copy())
        last = {
            "attributes": getattr(self, "attr_stats", {}),
            "communities": getattr(self, "community_stats", {}),
            "clusters": getattr(self, "cluster_stats", {}),
        }
        delta.set_component_meta(NAME, {"next_group_key": self.next_group_key, "last_update": last})
        self.report.notes.append(f"heterograph: {last}")
