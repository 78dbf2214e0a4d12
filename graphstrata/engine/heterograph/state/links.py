"""The ``graph`` view's typed links on the walk's slots, advanced by a commit.

The search follows four kinds of stored edge one hop (chunk -> its units, unit -> its
entities, entity -> its attributes, title -> its element) and reads two per-node columns
(the units mentioning an entity, the chunk of a unit). They live on the walk CSR's slots
(``walk_graph``), not on positions: a commit appends its new links to a small sorted extra
part and updates the columns from its new edges and the units it deleted, and a link to a
dead slot is dropped when it is followed. Rebuilding them on positions from every
structural edge took ~25 ms of each write at 100k chunks under line_profiler: renumbering
~1.4M edges, then a sort per kind (issue 17). They are written on positions again when the
CSR is compacted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphstrata.engine.types import EdgeKind

_EMPTY = np.zeros(0, np.int64)
_CHUNK_UNIT = int(EdgeKind.CHUNK_UNIT)  # T -> S
_UNIT_ENTITY = int(EdgeKind.UNIT_ENTITY)  # S -> N
_ENTITY_ATTRIBUTE = int(EdgeKind.ENTITY_ATTRIBUTE)  # N -> A
_ELEMENT_TITLE = int(EdgeKind.ELEMENT_TITLE)  # H -> O, followed from O


def _by_source(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(src, kind="stable")
    return src[order].astype(np.int64), dst[order].astype(np.int64)


def _follow(src: np.ndarray, dst: np.ndarray, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo = np.searchsorted(src, sources, side="left")
    hi = np.searchsorted(src, sources, side="right")
    counts = hi - lo
    total = int(counts.sum())
    if total == 0:
        return _EMPTY, _EMPTY
    # Entry j of source i is lo[i] + j: one arange over every entry, offset per source.
    starts = np.repeat(lo - (np.cumsum(counts) - counts), counts)
    return dst[starts + np.arange(total)], np.repeat(sources, counts)


@dataclass(frozen=True)
class SlotLinks:
    """The links of one kind on slots, sorted by source: a base and a small extra part.

    Attributes
    ----------
    src, dst:
        The base links (as of the last compaction or build), sorted by ``src``.
    extra_src, extra_dst:
        The links added since, sorted by ``extra_src``.
    """

    src: np.ndarray
    dst: np.ndarray
    extra_src: np.ndarray
    extra_dst: np.ndarray

    @classmethod
    def of(cls, src: np.ndarray, dst: np.ndarray) -> SlotLinks:
        """Links ``src[i] -> dst[i]``, all in the base."""
        return cls(*_by_source(src, dst), _EMPTY, _EMPTY)

    def added(self, src: np.ndarray, dst: np.ndarray) -> SlotLinks:
        """These links and ``src[i] -> dst[i]`` (merged into the extra part: O(extra))."""
        if not src.size:
            return self
        if not self.src.size and not self.extra_src.size:
            return SlotLinks.of(src, dst)  # a build: everything in the base
        extra = _by_source(
            np.concatenate([self.extra_src, src]), np.concatenate([self.extra_dst, dst])
        )
        return SlotLinks(self.src, self.dst, *extra)

    def follow(
        self, sources: np.ndarray, alive: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(targets, origins)``: every link leaving ``sources`` to an ``alive`` slot
        (all, when ``alive`` is None), with the source it left."""
        t1, o1 = _follow(self.src, self.dst, sources)
        targets, origins = t1, o1
        if self.extra_src.size:
            t2, o2 = _follow(self.extra_src, self.extra_dst, sources)
            targets, origins = np.concatenate([t1, t2]), np.concatenate([o1, o2])
        if alive is not None and targets.size:
            live = alive[targets]
            targets, origins = targets[live], origins[live]
        return targets, origins

    def renumbered(self, new_of_slot: np.ndarray) -> SlotLinks:
        """The links between slots that ``new_of_slot`` maps (>= 0), renumbered, in one base."""
        src = np.concatenate([self.src, self.extra_src])
        dst = np.concatenate([self.dst, self.extra_dst])
        s, d = new_of_slot[src], new_of_slot[dst]
        keep = (s >= 0) & (d >= 0)
        return SlotLinks.of(s[keep], d[keep])


@dataclass(frozen=True)
class StructuralLinks:
    """The links the search follows and the per-slot columns derived from them.

    Attributes
    ----------
    chunk_units, unit_entities, entity_attributes, title_elements:
        T -> S, S -> N, N -> A and O -> H links on slots.
    units_of:
        int64 per slot: how many live units (S -> N links) mention it.
    chunk_of:
        int64 per slot: the chunk slot of a unit (-1 for other kinds). A unit's one chunk
        link is written with it and the unit dies with its chunk (``decompose``), so the
        column is set once per unit and never cleared.
    """

    chunk_units: SlotLinks
    unit_entities: SlotLinks
    entity_attributes: SlotLinks
    title_elements: SlotLinks
    units_of: np.ndarray
    chunk_of: np.ndarray

    @classmethod
    def build(cls, src: np.ndarray, dst: np.ndarray, kind: np.ndarray, n: int) -> StructuralLinks:
        """From walked edges ``src -> dst`` of ``kind`` between ``n`` live slots."""
        return cls.empty(n).added(n, _EMPTY, src, dst, kind)

    @classmethod
    def empty(cls, n: int) -> StructuralLinks:
        """No link between ``n`` slots."""
        none = SlotLinks.of(_EMPTY, _EMPTY)
        return cls(none, none, none, none, np.zeros(n, np.int64), np.full(n, -1, np.int64))

    def added(
        self, n: int, died: np.ndarray, src: np.ndarray, dst: np.ndarray, kind: np.ndarray
    ) -> StructuralLinks:
        """These links on ``n`` slots (the old ones first), the ``died`` slots dead, and the
        walked edges ``src -> dst`` of ``kind`` between live slots added (``died``: slots
        live until now)."""
        grow = n - int(self.units_of.size)
        units_of = np.concatenate([self.units_of, np.zeros(grow, np.int64)])
        chunk_of = np.concatenate([self.chunk_of, np.full(grow, -1, np.int64)])
        if died.size:  # a dead unit no longer mentions its entities (edges die with an end)
            mentioned, _ = self.unit_entities.follow(died, None)
            np.subtract.at(units_of, mentioned, 1)
        at = {k: kind == k for k in (_CHUNK_UNIT, _UNIT_ENTITY, _ENTITY_ATTRIBUTE, _ELEMENT_TITLE)}
        cu, ue = at[_CHUNK_UNIT], at[_UNIT_ENTITY]
        np.add.at(units_of, dst[ue], 1)  # O(new links), not a count over every slot
        chunk_of[dst[cu]] = src[cu]
        title = at[_ELEMENT_TITLE]
        return StructuralLinks(
            self.chunk_units.added(src[cu], dst[cu]),
            self.unit_entities.added(src[ue], dst[ue]),
            self.entity_attributes.added(src[at[_ENTITY_ATTRIBUTE]], dst[at[_ENTITY_ATTRIBUTE]]),
            self.title_elements.added(dst[title], src[title]),
            units_of,
            chunk_of,
        )

    def renumbered(self, new_of_slot: np.ndarray, alive: np.ndarray) -> StructuralLinks:
        """On the slots ``new_of_slot`` maps (the ``alive`` ones, in order), links to the
        others dropped."""
        chunk = self.chunk_of[alive]
        mapped = np.where(chunk >= 0, new_of_slot[np.maximum(chunk, 0)], -1)
        return StructuralLinks(
            self.chunk_units.renumbered(new_of_slot),
            self.unit_entities.renumbered(new_of_slot),
            self.entity_attributes.renumbered(new_of_slot),
            self.title_elements.renumbered(new_of_slot),
            self.units_of[alive],
            mapped,
        )
