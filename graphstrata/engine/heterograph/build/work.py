"""The state one heterograph operation shares between its stages.

:class:`Work` is created once per operation (:meth:`Work.start`) from the committed
snapshot and the chunk change. Every stage reads the committed graph through it and records
its changes in it (new and rewritten node rows, new edges, nodes to delete); only the last
stage, :func:`graphstrata.engine.heterograph.build.write.write`, turns them into the delta.
Each stage's own results are return values (docs/architecture.md, "Heterograph").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from graphstrata.core import sets
from graphstrata.core.ids import contains, find_positions
from graphstrata.engine.config import HeterographConfig
from graphstrata.core.communities import group_by
from graphstrata.engine.heterograph.schema import NAME
from graphstrata.engine.store import NodeTable, Snapshot
from graphstrata.engine.store.edges import EdgeTable
from graphstrata.engine.tokens import count_tokens_batch

EMPTY = np.zeros(0, np.int64)
#: :meth:`Work.leading_within` counts tokens in blocks, the first this long, each next one
#: twice as long, until the budget is passed: a hub entity has thousands of facts and a hub
#: community thousands of members, a prompt's budget a few dozen.
FIRST_TOKEN_BLOCK = 64

#: ``(src, dst)`` id arrays of one edge kind.
EdgeList = tuple[np.ndarray, np.ndarray]


@dataclass
class EdgeBuffer:
    """New edges of one operation, per kind, written to the delta at the end."""

    parts: dict[int, list[EdgeList]] = field(default_factory=dict)

    def add(
        self, kind: int, src: Iterable[int] | np.ndarray, dst: Iterable[int] | np.ndarray
    ) -> None:
        """Append edges ``src[i] -> dst[i]`` of ``kind`` (nothing when empty)."""
        s = np.asarray(list(src) if not isinstance(src, np.ndarray) else src, dtype=np.int64)
        d = np.asarray(list(dst) if not isinstance(dst, np.ndarray) else dst, dtype=np.int64)
        if s.size:
            self.parts.setdefault(int(kind), []).append((s, d))

    def of(self, kind: int) -> EdgeList:
        """Every new edge of ``kind`` so far."""
        parts = self.parts.get(int(kind), [])
        if not parts:
            return EMPTY, EMPTY
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


class CommittedEdges:
    """The committed heterograph edges of one kind at a time, selected on first request.

    A write reads a few structural kinds; the semantic edges (over 80% of all at 10k
    chunks) are neither filtered nor split out for it, and a kind is filtered for the
    nodes deleted since the edges were last filtered only when read (``store.edges``).
    """

    def __init__(self, edges: EdgeTable):
        self._edges = edges
        self._of: dict[int, EdgeList] = {}

    def of(self, kind: int) -> EdgeList:
        """``(src, dst)`` of the committed edges of ``kind``, in table order."""
        kind = int(kind)
        found = self._of.get(kind)
        if found is None:
            found = self._edges.kind_edges(kind)
            self._of[kind] = found
        return found

    def at(self, kind: int, ids: np.ndarray, end: int) -> EdgeList:
        """The edges of :meth:`of` whose ``end`` (0: source, 1: destination) is one of
        ``ids``, in the same order, read without the kind's other edges
        (``EdgeTable.kind_edges_at``)."""
        return self._edges.kind_edges_at(int(kind), ids, end)


@dataclass
class Work:
    """One operation's read access to the committed heterograph, and its pending changes.

    Attributes
    ----------
    snapshot:
        The committed version the operation starts from.
    config:
        The heterograph's configuration.
    allocate:
        Allocates fresh node ids (``Delta.new_node_ids``); ids are never reused.
    snap_edges:
        Committed heterograph edges per kind (:class:`CommittedEdges`).
    dead:
        Committed (or new) nodes the operation deletes; starts with the removed chunks.
    new_kind, text, docs:
        Kind of each new node; text and doc keys of each new or rewritten node.
    replaced:
        Committed nodes whose row is rewritten (text and/or docs).
    edges:
        New edges.
    notes:
        Notes on unusable LLM answers, for the operation report.
    """

    snapshot: Snapshot
    config: HeterographConfig
    allocate: Callable[[int], np.ndarray]
    snap_edges: CommittedEdges
    dead: set[int]
    new_kind: dict[int, int] = field(default_factory=dict)
    text: dict[int, str] = field(default_factory=dict)
    docs: dict[int, list[int]] = field(default_factory=dict)
    replaced: set[int] = field(default_factory=set)
    edges: EdgeBuffer = field(default_factory=EdgeBuffer)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def start(
        cls,
        snapshot: Snapshot,
        config: HeterographConfig,
        removed_chunk_ids: np.ndarray,
        allocate: Callable[[int], np.ndarray],
    ) -> Work:
        """The work of an operation on ``snapshot`` that removes ``removed_chunk_ids``."""
        return cls(
            snapshot=snapshot,
            config=config,
            allocate=allocate,
            snap_edges=CommittedEdges(snapshot.edge_table),
            dead={int(i) for i in removed_chunk_ids},
        )

    # ------------------------------------------------------------------ committed graph
    @property
    def nodes(self) -> NodeTable:
        """The committed node table."""
        return self.snapshot.nodes

    def committed_edges(self, kind: int) -> EdgeList:
        """Committed edges of ``kind`` (dead ends included)."""
        return self.snap_edges.of(kind)

    def state(self, name: str) -> np.ndarray | None:
        """A committed state array of the heterograph (``None`` when absent)."""
        return self.snapshot.state(NAME, name)

    def node_state(self, name: str, kinds: Sequence[int]) -> EdgeList | None:
        """``(ids, values)`` of a per-node state for the committed live nodes of ``kinds``
        (ids ascending; ``None`` when never stored)."""
        stored = self._stored_node_state(name, kinds)
        if stored is None:
            return None
        ids, values = stored
        live = contains(self.nodes.ids_of_kind(*kinds), ids)
        return ids[live], values[live]

    def node_state_on(
        self, name: str, kinds: Sequence[int], ids: np.ndarray, fill: int = -1
    ) -> np.ndarray | None:
        """The values of a per-node state for ``ids`` (ascending), ``fill`` for an id
        without one (``None`` when never stored).

        One lookup of ``ids`` in the stored ids: no pass to drop the stored ids of nodes
        deleted since, which :meth:`node_state` makes (issue 17).
        """
        stored = self._stored_node_state(name, kinds)
        if stored is None:
            return None
        if not stored[0].size:
            return np.full(np.shape(ids), fill, np.int64)
        pos = find_positions(stored[0], ids)
        return np.where(pos >= 0, stored[1][np.maximum(pos, 0)], np.int64(fill))

    def _stored_node_state(self, name: str, kinds: Sequence[int]) -> EdgeList | None:
        # The committed mapping, ids ascending; it may hold ids of nodes deleted since. An
        # index written before per-node state (``Delta.put_node_state``) kept it as an
        # array aligned with the live nodes of ``kinds``: read as such while it matches
        # their number.
        stored = self.snapshot.node_state(NAME, name)
        if stored is not None:
            return stored
        aligned = self.state(name)
        ids = self.nodes.ids_of_kind(*kinds)
        if aligned is None or aligned.shape[0] != ids.shape[0]:
            return None
        return ids, aligned.astype(np.int64)

    # ------------------------------------------------------------------ after the operation
    def new_ids(self, n: int) -> list[int]:
        """``n`` fresh node ids."""
        return [int(i) for i in self.allocate(n).tolist()]

    def dead_array(self) -> np.ndarray:
        """:attr:`dead` as an ascending int64 array (what ``core.ids.contains`` takes)."""
        if not self.dead:
            return EMPTY
        return np.sort(np.fromiter(self.dead, dtype=np.int64, count=len(self.dead)))

    def live_edges(self, kinds: Sequence[int]) -> EdgeList:
        """Edges of ``kinds`` after this operation (committed ones with live ends + new)."""
        dead = self.dead_array()
        srcs, dsts = [], []
        for k in kinds:
            s, d = self.committed_edges(k)
            if s.size and dead.size:
                keep = ~(contains(dead, s) | contains(dead, d))
                s, d = s[keep], d[keep]
            ns, nd = self.edges.of(k)
            if ns.size and dead.size:
                keep = ~(contains(dead, ns) | contains(dead, nd))
                ns, nd = ns[keep], nd[keep]
            srcs += [s, ns]
            dsts += [d, nd]
        return np.concatenate(srcs), np.concatenate(dsts)

    def live_edges_at(self, kind: int, ids: np.ndarray, end: int) -> EdgeList:
        """The edges of ``live_edges([kind])`` whose ``end`` (0: source, 1: destination) is
        one of ``ids``, in the same order (:meth:`edges_at`)."""
        return self.edges_at(kind, ids, end)[1]

    def edges_at(self, kind: int, ids: np.ndarray, end: int) -> tuple[EdgeList, EdgeList]:
        """The committed edges of ``kind`` whose ``end`` (0: source, 1: destination) is one
        of ``ids``, and the live ones after this operation, in the order of
        ``committed_edges`` and ``live_edges([kind])``.

        The edges at ``ids`` are selected first and only they are checked for dead ends:
        filtering every edge of the kind for the dead took 15-35 ms per call at 100k chunks
        (issue 17). The committed selection is what the live one starts from, so a caller
        wanting both (attributes compare an entity's facts before and after) selects once.
        """
        wanted = sets.unique(np.asarray(ids, np.int64))
        dead = self.dead_array()
        committed = self.snap_edges.at(kind, wanted, end)
        srcs, dsts = [EMPTY], [EMPTY]
        new_src, new_dst = self.edges.of(kind)
        if new_src.size:
            at = contains(wanted, (new_src, new_dst)[end])
            new_src, new_dst = new_src[at], new_dst[at]
        for s, d in (committed, (new_src, new_dst)):
            if dead.size:
                keep = ~(contains(dead, s) | contains(dead, d))
                s, d = s[keep], d[keep]
            srcs.append(s)
            dsts.append(d)
        return committed, (np.concatenate(srcs), np.concatenate(dsts))

    def live_ids(self, *kinds: int) -> np.ndarray:
        """Sorted ids of the live nodes of ``kinds`` after this operation."""
        old = self.nodes.ids_of_kind(*kinds)
        new = np.sort(np.asarray([i for i, k in self.new_kind.items() if k in kinds], np.int64))
        if self.dead:
            dead = self.dead_array()
            old, new = old[~contains(dead, old)], new[~contains(dead, new)]
        ids = np.concatenate([old, new])
        # New ids are allocated above every committed one, so the two sorted parts
        # concatenate in order (an O(N) unique was 0.6 s of a 50k-chunk insert).
        if old.size and new.size and new[0] <= old[-1]:
            return sets.unique(ids)
        return ids

    def text_of(self, ids: Iterable[int]) -> list[str]:
        """Text of each node (as rewritten by this operation, else committed)."""
        ids = [int(i) for i in ids]
        missing = [i for i in ids if i not in self.text]
        found = dict(zip(missing, self.nodes.text_of(missing), strict=True)) if missing else {}
        return [self.text[i] if i in self.text else found[i] for i in ids]

    def docs_of(self, ids: Iterable[int]) -> list[list[int]]:
        """Doc keys of each node (as rewritten by this operation, else committed)."""
        ids = [int(i) for i in ids]
        missing = [i for i in ids if i not in self.docs]
        found = dict(zip(missing, self.nodes.docs_of(missing), strict=True)) if missing else {}
        return [self.docs[i] if i in self.docs else list(found[i]) for i in ids]

    def tokens_of(self, ids: Iterable[int]) -> np.ndarray:
        """Token count of each node's text (as rewritten by this operation, else committed)."""
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

    def token_counts(self, ids: np.ndarray, before: bool) -> np.ndarray:
        """int64 token counts of ``ids``: of the committed rows (``before``), else as this
        operation rewrote them (:meth:`tokens_of`)."""
        if before:
            return np.asarray(self.nodes.tokens[self.nodes.rows(ids)], np.int64)
        return np.asarray(self.tokens_of(ids), np.int64)

    def leading_within(self, ids: np.ndarray, budget: int, before: bool = False) -> list[int]:
        """The leading ``ids`` (a prompt's order of preference, e.g. newest first) whose
        token counts fit ``budget`` (at least one), sorted.

        Only a prefix is counted (``FIRST_TOKEN_BLOCK``, then blocks twice as long, until
        the budget is passed): counting every member of each community of a build to keep
        its newest 3,000 tokens was 2.4 of the 5.9 s of the 10k-chunk build's communities
        stage under cProfile (a one-off script, not kept), and communities grow with
        the corpus (issue 17).
        """
        if ids.size == 0:
            return []
        counted: list[np.ndarray] = []
        total, end, step = 0, 0, FIRST_TOKEN_BLOCK
        while end < ids.size and total <= budget:
            part = ids[end : end + step]
            counted.append(self.token_counts(part, before))
            total += int(counted[-1].sum())
            end += part.size
            step *= 2
        fits = np.cumsum(np.concatenate(counted)) <= budget
        fits[0] = True  # at least one, even a long one
        return sorted(ids[:end][fits].tolist())

    def leading_within_all(
        self, id_lists: list[np.ndarray], budgets: list[int], before: bool = False
    ) -> list[list[int]]:
        """:meth:`leading_within` of each list, the first block of every list counted in one
        lookup (a lookup per list was ~0.15 ms under line_profiler: ~10 ms of a write at
        100k chunks, issue 17)."""
        heads = [ids[:FIRST_TOKEN_BLOCK] for ids in id_lists]
        counted = self.token_counts(np.concatenate([EMPTY, *heads]), before)
        out: list[list[int]] = []
        start = 0
        for ids, head, budget in zip(id_lists, heads, budgets, strict=True):
            tokens = counted[start : start + head.size]
            start += head.size
            if ids.size > head.size and int(tokens.sum()) <= budget:  # read on: rare
                out.append(self.leading_within(ids, budget, before))
            elif not ids.size:
                out.append([])
            else:
                fits = np.cumsum(tokens) <= budget
                fits[0] = True  # at least one, even a long one
                out.append(sorted(head[fits].tolist()))
        return out

    def cited_docs_by(self, owners: np.ndarray, ids: np.ndarray) -> dict[int, list[int]]:
        """``{owner: sorted union of the doc keys of its ids}`` for ``ids[i]`` owned by
        ``owners[i]``, in one pass.

        The touched hub entities of a write at 100k chunks have tens of thousands of
        supporting units between them; their doc lists are gathered once, in Arrow, and
        reduced per owner by one sort, not one lookup per entity (issue 17).
        """
        owners = np.asarray(owners, np.int64)
        ids = np.asarray(ids, np.int64)
        # Membership in the operation's rewritten docs by one vectorized lookup: a Python
        # test per id was 7 ms of a write at 100k chunks by cProfile, 16 ms under line_profiler
        # (hubs' supporters, issue 17).
        rewritten = np.fromiter(self.docs, np.int64, count=len(self.docs))
        fresh = contains(np.sort(rewritten), ids)
        keys, by = [EMPTY], [EMPTY]
        if (~fresh).any():
            flat, parent = self.nodes.doc_lists_at(self.nodes.rows(ids[~fresh]))
            keys.append(flat)
            by.append(owners[~fresh][parent])
        for owner, i in zip(owners[fresh].tolist(), ids[fresh].tolist(), strict=True):
            keys.append(np.asarray(self.docs[i], np.int64))
            by.append(np.full(len(self.docs[i]), owner, np.int64))
        key, owner_of = np.concatenate(keys), np.concatenate(by)
        out: dict[int, list[int]] = {int(o): [] for o in sets.unique(owners).tolist()}
        if key.size:
            order = np.lexsort((key, owner_of))
            key, owner_of = key[order], owner_of[order]
            first = np.ones(key.size, bool)
            first[1:] = (key[1:] != key[:-1]) | (owner_of[1:] != owner_of[:-1])
            for o, docs in group_by(owner_of[first], key[first]).items():
                out[o] = docs.tolist()
        return out
