"""The hierarchy of one version (``HierarchyTree``) and one operation's update of it.

The algorithm is described in the package docstring (docs/architecture.md, "Hierarchy").
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from graphstrata.core import sets
from graphstrata.core.ids import find_positions
from graphstrata.core.lsh import project_codes
from graphstrata.core.partition import partition, repartition
from graphstrata.engine.component import ChangeSet, UpdateContext
from graphstrata.engine.config import HierarchyConfig
from graphstrata.engine.hierarchy.keys import ItemKeys, tiebreaks
from graphstrata.engine.interfaces import LLMError
from graphstrata.engine.prompts import summarize_request
from graphstrata.engine.store import NodeTable
from graphstrata.engine.tokens import count_tokens_batch
from graphstrata.engine.types import EdgeKind, NodeKind

#: The component's name: its key in the manifest and in component state.
COMPONENT = "hierarchy"
DIRECTION_STATE = "tiebreak_direction"
_T = int(NodeKind.T)
_L = int(NodeKind.L)
_NO_ANCHOR = np.iinfo(np.int64).max


# ------------------------------------------------------------------------------ the tree
@dataclass
class HierarchyTree:
    """The committed hierarchy of one version: its T and L nodes, sorted by id.

    ``layer`` is 0 for chunks; ``parent`` is -1 for top nodes (and for a parent id that is
    not a live hierarchy node); ``anchor`` is the smallest chunk id below a node.
    """

    ids: np.ndarray
    layer: np.ndarray
    parent: np.ndarray
    code: np.ndarray
    anchor: np.ndarray
    stored_parent: np.ndarray

    @classmethod
    def from_nodes(cls, nodes: NodeTable) -> HierarchyTree:
        """Read the hierarchy columns of a node table (O(n) numpy)."""
        kind = nodes.kind
        mask = (kind == _T) | (kind == _L)
        every = bool(mask.all())  # without the heterograph: no copy of the columns

        def pick(column: np.ndarray, dtype: type) -> np.ndarray:
            return np.asarray(column if every else column[mask], dtype)

        ids = pick(nodes.ids, np.int64)
        layer = np.array(nodes.layer if every else nodes.layer[mask], np.int64)  # a copy
        layer[pick(kind, np.uint8) == _T] = 0
        stored_parent = pick(nodes.parent, np.int64)
        prow = find_positions(ids, stored_parent)
        has_parent = prow >= 0
        parent = np.where(has_parent, stored_parent, -1)
        anchor = np.where(layer == 0, ids, _NO_ANCHOR)
        top = int(layer.max()) if layer.size else 0
        for lay in range(top):
            child = np.flatnonzero((layer == lay) & has_parent)
            np.minimum.at(anchor, prow[child], anchor[child])
        code = pick(nodes.code, np.uint64)
        return cls(ids, layer, parent, code, anchor, stored_parent)

    @property
    def top_layer(self) -> int:
        """The highest layer (0 when there are only chunks)."""
        return int(self.layer.max()) if self.layer.size else 0

    def rows(self, ids: np.ndarray) -> np.ndarray:
        """Row of each id (-1 when the id is not a hierarchy node)."""
        return find_positions(self.ids, ids)

    def at_layer(self, layer: int) -> np.ndarray:
        """Rows of the nodes of ``layer``."""
        return np.flatnonzero(self.layer == layer)

    def segments(self, layer: int) -> dict[int, np.ndarray]:
        """``{parent id: child ids}`` of the segments of ``layer`` (children in anchor order)."""
        rows = self.at_layer(layer)
        rows = rows[self.parent[rows] >= 0]
        rows = rows[np.lexsort((self.ids[rows], self.anchor[rows]))]
        out: dict[int, list[int]] = {}
        for r in rows:
            out.setdefault(int(self.parent[r]), []).append(int(self.ids[r]))
        return {p: np.asarray(c, dtype=np.int64) for p, c in out.items()}


def _membership_changes(
    seats: np.ndarray, segment: np.ndarray, touched: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Segments whose membership changed, and old segments that no longer exist.

    ``seats`` are the items' segments before (committed parent ids; -1 = not placed),
    ``segment`` after; ``touched`` old segments lost members that are not items any more.
    Computed here from the two assignments rather than taken from the partition's report,
    so it holds whatever the partition did.
    """
    out = sets.unique(segment)
    moved = seats != segment
    lost = seats[moved & (seats >= 0)]
    # A brand-new segment holds only moved items (no seat names it): it is in segment[moved].
    changed = sets.union(sets.union(segment[moved], lost), touched)
    old = sets.union(sets.unique(seats[seats >= 0]), touched)
    return sets.intersection(changed, out), sets.difference(old, out)


def _member_rows(inverse: np.ndarray, wanted: np.ndarray) -> list[np.ndarray]:
    """The item rows in each of the ``wanted`` groups (group numbers into ``inverse``), in
    item order: one stable sort of the wanted groups' items, not a scan of all items per
    group."""
    rank = np.full(int(inverse.max(initial=-1)) + 1, -1, np.int64)
    rank[wanted] = np.arange(wanted.size)
    mine = rank[inverse]
    rows = np.flatnonzero(mine >= 0)
    rows = rows[np.argsort(mine[rows], kind="stable")]
    bounds = np.searchsorted(mine[rows], np.arange(wanted.size + 1))
    return [rows[a:b] for a, b in itertools.pairwise(bounds.tolist())]


def tiebreak_direction(dim: int, n_bits: int, seed: int) -> np.ndarray:
    """The extra projection direction that orders equal-code groups before a split.

    It is row ``n_bits`` of the seeded gaussian sequence whose first ``n_bits`` rows are the
    index's hyperplanes (``core.lsh.sample_hyperplanes``), i.e. one further hyperplane:
    items that are adjacent along it are similar, so cutting the ordered group gives
    coherent parts. Unit length, float32.
    """
    rng = np.random.default_rng(int(seed))
    direction = rng.standard_normal((int(n_bits) + 1, int(dim)))[int(n_bits)]
    return (direction / np.linalg.norm(direction)).astype(np.float32)


# ------------------------------------------------------------------------------ update
@dataclass
class _NewNode:
    """A node written by this operation (a new chunk or a new summary)."""

    kind: int
    layer: int
    text: str
    tokens: int
    docs: list[int] | np.ndarray
    code: int
    tiebreak: float
    anchor: int
    seat: int = -1  # segment id (committed parent id) to join one layer up, -1 = by code
    parent: int = -1


@dataclass
class _Items:
    """The items of one layer during an update, in anchor order."""

    ids: np.ndarray
    codes: np.ndarray
    tiebreak: np.ndarray
    anchors: np.ndarray
    seats: np.ndarray  # committed parent id (or inherited seat), -1 = place by code
    is_new: np.ndarray


@dataclass
class Update:
    """One operation's hierarchy changes, collected before anything is written."""

    ctx: UpdateContext
    cfg: HierarchyConfig
    tree: HierarchyTree
    direction: np.ndarray
    group_new_first: bool
    keys: ItemKeys
    new: dict[int, _NewNode] = field(default_factory=dict)
    reparent: dict[int, int] = field(default_factory=dict)
    dead: set[int] = field(default_factory=set)
    children: dict[int, np.ndarray] = field(default_factory=dict)

    # ---------------------------------------------------------------- driver
    def run(self, change: ChangeSet) -> None:
        """Update every layer bottom-up, then write the changes into the delta."""
        self._add_chunks(change)
        added = [int(i) for i in change.added_chunk_ids]
        gone = np.asarray(change.removed_chunk_ids, dtype=np.int64)
        layer = 0
        while added or gone.size:
            items = self._items(layer, added, gone)
            if len(items.ids) <= self.cfg.s_max or layer >= self.cfg.max_layers:
                self._make_top(layer, items)
                break
            added, gone = self._segment(layer, items, gone)
            layer += 1
        self._write()

    def _add_chunks(self, change: ChangeSet) -> None:
        vectors = np.asarray(change.added_chunk_vectors, dtype=np.float32)
        codes = self._codes(vectors)
        ties = tiebreaks(vectors, self.direction)
        for i, node_id in enumerate(change.added_chunk_ids.tolist()):
            self.new[node_id] = _NewNode(
                kind=_T,
                layer=0,
                text=change.added_chunk_texts[i],
                tokens=int(change.added_chunk_tokens[i]),
                docs=[int(change.added_chunk_docs[i])],
                code=int(codes[i]),
                tiebreak=float(ties[i]),
                anchor=node_id,
            )

    def _codes(self, vectors: np.ndarray) -> np.ndarray:
        if vectors.shape[0] == 0:
            return np.zeros(0, dtype=np.uint64)
        return project_codes(vectors, self.ctx.hyperplanes)

    # ---------------------------------------------------------------- one layer
    def _items(self, layer: int, added: list[int], gone: np.ndarray) -> _Items:
        """Surviving committed nodes of ``layer`` plus its new nodes, in anchor order."""
        tree = self.tree
        rows = tree.at_layer(layer)
        if gone.size:
            rows = rows[~np.isin(tree.ids[rows], gone)]
        old_ids = tree.ids[rows]
        # Codes and tiebreaks of what the stored vectors hash to (the vectors are the source
        # of truth, the stored code column is what they hash to), remembered per id.
        old_codes, old_ties = self.keys.of(old_ids, self.ctx.snapshot.vectors)
        new_nodes = [self.new[i] for i in added]
        ids = np.concatenate([old_ids, np.asarray(added, dtype=np.int64)])
        codes = np.concatenate(
            [old_codes, np.asarray([n.code for n in new_nodes], dtype=np.uint64)]
        )
        ties = np.concatenate(
            [old_ties, np.asarray([n.tiebreak for n in new_nodes], dtype=np.float64)]
        )
        anchors = np.concatenate(
            [tree.anchor[rows], np.asarray([n.anchor for n in new_nodes], dtype=np.int64)]
        )
        seats = np.concatenate(
            [tree.parent[rows], np.asarray([n.seat for n in new_nodes], dtype=np.int64)]
        )
        is_new = np.concatenate([np.zeros(rows.size, bool), np.ones(len(new_nodes), bool)])
        if anchors.size < 2 or bool(np.all(anchors[1:] > anchors[:-1])):
            # Already in order: chunks (anchor = id) arrive in id order, new ids last, so
            # layer 0 (as many items as the corpus has chunks) needs no sort.
            return _Items(ids, codes, ties, anchors, seats, is_new)
        order = np.lexsort((ids, anchors))
        return _Items(
            ids[order], codes[order], ties[order], anchors[order], seats[order], is_new[order]
        )

    def _make_top(self, layer: int, items: _Items) -> None:
        """``layer`` fits in one segment (or is the last allowed): no parents above it."""
        self._set_parents(items, np.full(items.ids.shape[0], -1, dtype=np.int64))
        above = self.tree.ids[self.tree.layer > layer]
        self.dead.update(above.tolist())

    def _segment(self, layer: int, items: _Items, gone: np.ndarray) -> tuple[list[int], np.ndarray]:
        """Re-partition ``layer`` and re-summarize its changed segments.

        Returns the new summary ids (layer + 1) and the committed summaries they replace or
        that lost all members (the ``gone`` of layer + 1).
        """
        cfg = self.cfg
        gone_rows = self.tree.rows(gone)
        touched = sets.unique(self.tree.parent[gone_rows[gone_rows >= 0]])
        touched = touched[touched >= 0]
        # Segment ids at or above this base are brand-new segments (ours or the partition's).
        id_base = max(int(items.seats.max(initial=-1)), int(touched.max(initial=-1))) + 1
        seats = self._group_new(items, id_base) if self.group_new_first else items.seats
        segment = repartition(
            items.codes, seats, cfg.s_min, cfg.s_max, items.tiebreak, touched
        ).segment
        changed_segments, removed = _membership_changes(items.seats, segment, touched)
        uniq, inverse = sets.unique_inverse(segment)
        first = sets.unique_first(inverse)[1]
        # New summary ids in order of each changed segment's first (lowest-anchor) member.
        at = np.searchsorted(uniq, changed_segments)
        at = at[np.argsort(first[at], kind="stable")]
        changed: list[int] = uniq[at].tolist()
        summary_ids = self.ctx.delta.new_node_ids(len(changed))
        parent_of = uniq.astype(np.int64)  # an unchanged segment keeps its summary's id
        parent_of[at] = summary_ids
        self._set_parents(items, parent_of[inverse])
        member_rows = _member_rows(inverse, at)
        members = [items.ids[rows] for rows in member_rows]
        predecessors = [s if s < id_base else -1 for s in changed]
        self._summarize(layer + 1, summary_ids, members, items, member_rows, changed, predecessors)
        replaced = np.asarray([p for p in predecessors if p >= 0], dtype=np.int64)
        next_gone = sets.union(replaced, removed).astype(np.int64)
        self.dead.update(next_gone.tolist())
        return summary_ids.tolist(), next_gone

    def _group_new(self, items: _Items, id_base: int) -> np.ndarray:
        """Seats in which the new items that fill whole segments among themselves hold new
        segments (ids from ``id_base``); the rest stay -1 and join their nearest segment.

        The new items are partitioned alone (same bounds, codes and tiebreak); each part that
        reaches ``s_min`` becomes a segment of its own, so a batch of new documents costs
        about one summary per ``s_max`` new items instead of re-summarizing every existing
        segment its items are scattered over (LSH spreads one document's chunks over many
        codes). When nothing is placed yet (a build, a new layer) this is the plain partition.
        """
        seats = items.seats.copy()
        fresh = np.flatnonzero(seats < 0)
        if fresh.size < self.cfg.s_min or fresh.size == seats.size:
            return seats
        groups = partition(
            items.codes[fresh], self.cfg.s_min, self.cfg.s_max, items.tiebreak[fresh]
        )
        whole = np.bincount(groups)[groups] >= self.cfg.s_min
        seats[fresh[whole]] = id_base + groups[whole]
        return seats

    def _set_parents(self, items: _Items, parents: np.ndarray) -> None:
        """Record each item's parent: on the new row, or as a re-parent of a committed row."""
        for node_id, parent in zip(
            items.ids[items.is_new].tolist(), parents[items.is_new].tolist(), strict=True
        ):
            self.new[node_id].parent = parent
        old = ~items.is_new
        stored = self.tree.stored_parent[self.tree.rows(items.ids[old])]
        moved = stored != parents[old]
        self.reparent.update(
            zip(items.ids[old][moved].tolist(), parents[old][moved].tolist(), strict=True)
        )

    def _summarize(
        self,
        layer: int,
        ids: np.ndarray,
        members: list[np.ndarray],
        items: _Items,
        member_rows: list[np.ndarray],
        changed: list[int],
        predecessors: list[int],
    ) -> None:
        """One LLM batch for the layer's changed segments, then embed and hash the summaries."""
        if not len(ids):
            return
        requests = [summarize_request(t, self.cfg.summary_tokens) for t in self._texts(members)]
        responses = self.ctx.llm.complete(f"summarize_layer_{layer}", requests)
        texts = [r.text.strip() for r in responses]
        self.ctx.llm.record_yield("summarize", [int(bool(t)) for t in texts], texts)
        for s, text in zip(changed, texts, strict=True):
            if not text:
                raise LLMError(
                    f"{self.ctx.llm.name} returned an empty summary for a segment of layer "
                    f"{layer - 1} (segment {s}); nothing was committed"
                )
        # Reuse reaches chunks too: an extractive summary often repeats a child's text.
        vectors = self.ctx.embed_nodes(
            ids, _L, texts, stage="embed_summaries", reuse_kinds=(_L, _T)
        )
        codes = self._codes(vectors)
        ties = tiebreaks(vectors, self.direction)
        tokens = count_tokens_batch(texts)
        pred_rows = self.tree.rows(np.asarray(predecessors, dtype=np.int64))
        docs = self._docs(members)
        for j, node_id in enumerate(ids.tolist()):
            member_ids = members[j]
            seat = int(self.tree.parent[pred_rows[j]]) if pred_rows[j] >= 0 else -1
            self.new[node_id] = _NewNode(
                kind=_L,
                layer=layer,
                text=texts[j],
                tokens=int(tokens[j]),
                docs=docs[j],
                code=int(codes[j]),
                tiebreak=float(ties[j]),
                anchor=int(items.anchors[member_rows[j]].min()),
                seat=seat,
            )
            self.children[node_id] = member_ids

    def _texts(self, members: list[np.ndarray]) -> list[list[str]]:
        """The texts of each segment's members, the committed ones read in one lookup."""
        flat = {i for m in members for i in m.tolist() if i not in self.new}
        committed = sorted(flat)
        lookup = dict(zip(committed, self.ctx.snapshot.nodes.text_of(committed), strict=True))
        return [
            [self.new[i].text if i in self.new else lookup[i] for i in m.tolist()] for m in members
        ]

    def _docs(self, members: list[np.ndarray]) -> list[np.ndarray]:
        """Sorted doc keys each segment's summary cites: those its members cite, at most
        ``summary_docs_max`` (``cited_docs``). The committed members' doc lists are read in
        one lookup for the layer: a lookup per summary cost ~0.5 ms of fixed overhead over
        the node table's Arrow chunks, 11 ms of a write at 100k chunks under
        line_profiler."""
        if not members:
            return []
        flat = np.concatenate(members).astype(np.int64)
        owner = np.repeat(np.arange(len(members)), [m.size for m in members])
        is_new = np.fromiter((i in self.new for i in flat.tolist()), bool, flat.size)
        nodes = self.ctx.snapshot.nodes
        keys, at = nodes.doc_lists_at(nodes.rows(flat[~is_new]))
        # ``at`` ascends, and the members are concatenated in segment order.
        bounds = np.searchsorted(owner[~is_new][at], np.arange(len(members) + 1))
        new_docs: list[list[np.ndarray]] = [[] for _ in members]
        for j, i in zip(owner[is_new].tolist(), flat[is_new].tolist(), strict=True):
            new_docs[j].append(np.asarray(self.new[i].docs, np.int64))
        return [
            cited_docs(
                np.concatenate([keys[bounds[j] : bounds[j + 1]], *new_docs[j]]),
                self.cfg.summary_docs_max,
            )
            for j in range(len(members))
        ]

    # ---------------------------------------------------------------- writing
    def _write(self) -> None:
        delta = self.ctx.delta
        # New chunks keep the engine's ids: our later row (with code and parent) replaces the
        # engine's row within the commit.
        new_ids = np.asarray(sorted(self.new), dtype=np.int64)
        if new_ids.size:
            nodes = [self.new[i] for i in new_ids.tolist()]
            delta.add_nodes(
                ids=new_ids,
                kind=np.asarray([n.kind for n in nodes], dtype=np.uint8),
                text=[n.text for n in nodes],
                tokens=np.asarray([n.tokens for n in nodes], dtype=np.int32),
                docs=[n.docs for n in nodes],
                layer=np.asarray([n.layer for n in nodes], dtype=np.uint8),
                code=np.asarray([n.code for n in nodes], dtype=np.uint64),
                parent=np.asarray([n.parent for n in nodes], dtype=np.int64),
            )
        summary_ids = np.asarray(sorted(self.children), dtype=np.int64)
        if summary_ids.size:
            src = np.concatenate(
                [np.full(self.children[i].size, i, np.int64) for i in summary_ids.tolist()]
            )
            dst = np.concatenate([self.children[i] for i in summary_ids.tolist()])
            delta.add_edges(src, dst, int(EdgeKind.PARENT_CHILD))
        moved = sorted(i for i in self.reparent if i not in self.dead)
        if moved:
            delta.replace_rows(
                self.ctx.snapshot.nodes.take(moved),
                parent=np.asarray([self.reparent[i] for i in moved], dtype=np.int64),
            )
        if self.dead:
            delta.delete_nodes(np.asarray(sorted(self.dead), dtype=np.int64))


def cited_docs(member_docs: np.ndarray, most: int) -> np.ndarray:
    """The doc keys a summary cites, ascending: every key of its members' doc lists
    (``member_docs``, concatenated), or with more than ``most`` (> 0) the ``most`` keys the
    most members cite, ties by smaller key (the older document)."""
    keys, inverse = sets.unique_inverse(np.asarray(member_docs, np.int64))
    if most <= 0 or keys.size <= most:
        return keys
    counts = np.bincount(inverse, minlength=keys.size)
    return np.sort(keys[np.lexsort((keys, -counts))[:most]])


def stored_direction(ctx: UpdateContext) -> np.ndarray:
    """The stored tiebreak direction; drawn (once, on the first update) from the seed."""
    stored = ctx.snapshot.state(COMPONENT, DIRECTION_STATE)
    if stored is not None:
        return np.asarray(stored, dtype=np.float32)
    hp = ctx.snapshot.manifest["hyperplanes"]
    direction = tiebreak_direction(int(hp["dim"]), int(hp["n_bits"]), int(hp["seed"]))
    ctx.delta.put_state(COMPONENT, DIRECTION_STATE, direction)
    return direction
