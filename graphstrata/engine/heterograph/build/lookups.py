"""What decomposition merges on, looked up in the committed graph instead of loaded whole.

An operation merges new entities on their normalized name, new relationships on their
endpoint pair, and rewrites the line mentions of the multi-line relationships it touches.
Loading all three as Python dicts cost a loop over every entity, relationship edge and
mention on each write (0.3 s at 50k chunks, issue 17). Here each is a lookup:

- :class:`EntityKeys` asks the version's name index (the ``graph`` view's
  :class:`~graphstrata.engine.heterograph.state.names.NameIndex`, advanced per commit);
- :class:`RelationPairs` searches the committed entity→relationship edges of the entities
  a write names, sorted by endpoint pair with numpy;
- :class:`MentionTable` reads the committed mention arrays by relationship, and writes
  back the committed rows of untouched relationships as they were, plus the rewritten ones.

Each also holds what the operation adds. Their answers equal the dicts they replace
(tested against the dict-building code).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from graphstrata.core import sets
from graphstrata.engine.heterograph.state.names import NameIndex
from graphstrata.engine.heterograph.schema import N
from graphstrata.engine.store import NodeTable

#: ``(unit id, line hash)`` of each assertion of one relationship.
MentionRows = list[tuple[int, int]]


class EntityKeys:
    """Normalized entity name -> id of the first (lowest-id) entity of that name.

    Parameters
    ----------
    lookup:
        The committed entity of a key, or None.
    """

    def __init__(self, lookup: Callable[[str], int | None]):
        self._lookup = lookup
        self._added: dict[str, int] = {}

    @classmethod
    def of_names(cls, names: NameIndex, nodes: NodeTable) -> EntityKeys:
        """Keys from a version's name index (which holds entities and element titles)."""

        def lookup(key: str) -> int | None:
            ids = names.names.get(key)
            if ids is None:
                return None
            entities = ids[nodes.kind[nodes.rows(ids)] == np.uint8(N)]
            return int(entities[0]) if entities.size else None

        return cls(lookup)

    @classmethod
    def of_pairs(cls, pairs: Iterable[tuple[str, int]]) -> EntityKeys:
        """Keys from ``(key, id)`` pairs in ascending id order (the first id of a key wins)."""
        table: dict[str, int] = {}
        for key, nid in pairs:
            table.setdefault(key, nid)
        return cls(table.get)

    def get(self, key: str) -> int | None:
        """The entity of ``key`` (committed or added), or None."""
        found = self._added.get(key)
        return found if found is not None else self._lookup(key)

    def __setitem__(self, key: str, nid: int) -> None:
        self._added[key] = nid


#: ``(ids, end) -> (src, dst)``: the committed entity→relationship edges whose ``end`` (0:
#: entity, 1: relationship) is one of ``ids``, in table order (``Work.snap_edges.at``).
EdgesAt = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]


class RelationPairs:
    """Sorted endpoint pair -> relationship, for relationships with exactly two endpoints.

    Only the relationships of the entities asked about are indexed (:meth:`prefetch`, or the
    pair's entities on a :meth:`get` of others): a write names a few dozen entities, and
    sorting every relationship of the corpus by endpoint pair took 5-8 ms of each write at
    100k chunks (issue 17, line_profiler). Every relationship with both endpoints ``{a, b}`` is one of
    ``a``'s, so the answer for a pair is the one a full index gives. The edges are read
    at the entities and relationships asked about (``edges_at``), not all of them.

    Parameters
    ----------
    edges_at:
        The committed entity→relationship edges at given entities or relationships.
    """

    def __init__(self, edges_at: EdgesAt):
        self._added: dict[tuple[int, int], int] = {}
        self._edges_at = edges_at
        self._loaded: set[int] = set()
        self._scale = 1
        self._keys = self._rels = np.zeros(0, np.int64)

    def prefetch(self, entities: Iterable[int]) -> None:
        """Index the relationships of ``entities`` (with those already indexed)."""
        wanted = self._loaded | {int(e) for e in entities}
        if len(wanted) == len(self._loaded):
            return
        self._loaded = wanted
        ends = np.sort(np.fromiter(wanted, np.int64, count=len(wanted)))
        rels = sets.unique(self._edges_at(ends, 0)[1])
        src, dst = self._edges_at(rels, 1)  # every endpoint of those relationships
        order = np.argsort(dst, kind="stable")
        rel, ends_of = dst[order], src[order]
        first = np.flatnonzero(np.r_[True, rel[1:] != rel[:-1]]) if rel.size else rel
        counts = np.diff(np.r_[first, rel.size])
        two = first[counts == 2]
        lo = np.minimum(ends_of[two], ends_of[two + 1])
        hi = np.maximum(ends_of[two], ends_of[two + 1])
        # Pairs as one sortable key; ids stay far below 2**31 (allocated one by one).
        self._scale = int(hi.max(initial=0)) + 1
        keys = lo * self._scale + hi
        by_key = np.argsort(keys, kind="stable")
        self._keys, self._rels = keys[by_key], rel[two][by_key]

    def get(self, pair: tuple[int, int]) -> int | None:
        """The relationship between the sorted pair ``pair`` (committed or added), or None."""
        found = self._added.get(pair)
        if found is not None:
            return found
        a, b = pair
        if a not in self._loaded:
            self.prefetch(pair)
        if b >= self._scale or not self._keys.size:
            return None
        key = a * self._scale + b
        # The last relationship of a key wins, as in a dict filled in relationship order.
        pos = int(np.searchsorted(self._keys, key, side="right")) - 1
        return int(self._rels[pos]) if pos >= 0 and self._keys[pos] == key else None

    def __setitem__(self, pair: tuple[int, int], rid: int) -> None:
        self._added[pair] = rid


#: Rows a relationship may have in the mention keys (``mention_keys``) ...
MENTION_ROWS = 1 << 24
#: ... and the ids it may have: the keys stay within int64.
MENTION_MAX_ID = 1 << 38


def mention_keys(rels: np.ndarray) -> np.ndarray:
    """Node-state keys of mention rows grouped by relationship: ``-(r * MENTION_ROWS + j) - 1``
    for the ``j``-th row of relationship ``r`` (below 0, so no node id; ``store.node_state``
    keeps them at compaction). A row keeps its key while its relationship's rows stay.

    Raises
    ------
    ValueError
        On a relationship id or row count beyond the key space.
    """
    rels = np.asarray(rels, np.int64)
    order = np.argsort(rels, kind="stable")
    sorted_rels = rels[order]
    starts = np.searchsorted(sorted_rels, sorted_rels, side="left")
    place = np.empty(rels.size, np.int64)
    place[order] = np.arange(rels.size, dtype=np.int64) - starts
    if rels.size and (int(rels.max()) >= MENTION_MAX_ID or int(place.max()) >= MENTION_ROWS):
        raise ValueError("mention keys need relationship ids below 2**38 and rows below 2**24")
    return -(rels * MENTION_ROWS + place) - 1


class MentionTable:
    """Relationship -> ``(unit, line hash)`` rows of its committed or rewritten mentions.

    Parameters
    ----------
    units, rels, hashes:
        The committed mention arrays (one row per assertion), any order.
    """

    @classmethod
    def of_keys(cls, keys: np.ndarray, units: np.ndarray, hashes: np.ndarray) -> MentionTable:
        """The table of the two mention mappings (``mention_keys`` -> unit, -> line hash;
        the same keys, ascending), rows of a relationship in their stored order."""
        order = np.argsort(-np.asarray(keys, np.int64), kind="stable")
        code = -np.asarray(keys, np.int64)[order] - 1
        return cls(np.asarray(units)[order], code // MENTION_ROWS, np.asarray(hashes)[order])

    def __init__(self, units: np.ndarray, rels: np.ndarray, hashes: np.ndarray):
        order = np.argsort(np.asarray(rels, np.int64), kind="stable")
        self._units = np.asarray(units, np.int64)[order]
        self._rels = np.asarray(rels, np.int64)[order]
        self._hashes = np.asarray(hashes, np.int64)[order]
        self._changed: dict[int, MentionRows | None] = {}  # None: popped

    def _committed(self, rid: int) -> MentionRows:
        lo = int(np.searchsorted(self._rels, rid, side="left"))
        hi = int(np.searchsorted(self._rels, rid, side="right"))
        units, hashes = self._units[lo:hi].tolist(), self._hashes[lo:hi].tolist()
        return list(zip(units, hashes, strict=True))

    def get(self, rid: int, default: MentionRows | None = None) -> MentionRows | None:
        """The rows of ``rid``, or ``default`` when it has none."""
        if rid in self._changed:
            rows = self._changed[rid]
            return rows if rows is not None else default
        rows = self._committed(rid)
        return rows if rows else default

    def pop(self, rid: int, default: MentionRows) -> MentionRows:
        """The rows of ``rid`` (or ``default``), which it no longer has."""
        rows = self.get(rid, default)
        self._changed[rid] = None
        return rows if rows is not None else default

    def __setitem__(self, rid: int, rows: MentionRows) -> None:
        self._changed[rid] = rows

    def arrays(self, alive: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """int64 ``[m, 3]`` rows ``(unit, relationship, line hash)`` of the live relationships.

        Committed rows of unchanged relationships keep their order; rewritten ones follow.

        Parameters
        ----------
        alive:
            bool per relationship id: is it live after the operation.
        """
        changed = np.fromiter(self._changed, np.int64, count=len(self._changed))
        keep = ~np.isin(self._rels, changed)
        old = np.column_stack([self._units[keep], self._rels[keep], self._hashes[keep]])
        new = [
            (unit, rid, line)
            for rid, rows in self._changed.items()
            if rows is not None
            for unit, line in rows
        ]
        rows = np.concatenate([old, np.asarray(new, np.int64).reshape(-1, 3)])
        return rows[alive(rows[:, 1])] if rows.size else rows.reshape(-1, 3)
