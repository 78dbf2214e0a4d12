"""The engine's versioned state: everything that outlives one version, with one owner.

One rule: a structure derived from a committed version and kept for the next (the vector
indexes, the doc names, the text reuse index, the BM25 parts, what a write hands to the next
write) belongs to the :class:`EngineState`. The state is built from a snapshot
(:meth:`EngineState.opened`: open, refresh, compaction) or advanced from the previous one
with the commit's delta (:meth:`EngineState.advanced`); each member folds by its named
policy (``IndexConfig.maintenance``) and the commit saves its caches
(``engine.read_caches.save_caches``). Components, views and modes keep nothing between
calls: a view is built per version from the state (``Component.view``), and what a write
leaves for the next write of the same process goes through ``UpdateContext.carry`` into
the state it commits (:attr:`EngineState.carried`).

Every advancing member follows ``engine.versioned.Versioned``: ``advanced(snapshot, delta,
maintenance)`` returns a new object and leaves the previous one untouched for the readers
still pinned to its version. A component declares the members its views read
(``Component.state_members``: the heterograph's names and walk graph); they are built and
advanced with the others. The vector index is advanced before the commit instead
(``VectorIndex.updated``: the commit writes its caches), from the delta's vectors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphstrata.engine.component import Component, ComponentView, DocNames, TextIndex
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.modes.naive import NaiveView
from graphstrata.engine.sparse.index import KindIndex, SparseParts
from graphstrata.engine.store import Delta, Snapshot
from graphstrata.engine.vectors import VectorIndex
from graphstrata.engine.versioned import Versioned

__all__ = ["EngineState", "Versioned", "sparse_kinds"]


@dataclass
class EngineState:
    """One committed version as the engine serves it; never changed once published.

    Attributes
    ----------
    snapshot:
        The committed version's tables.
    vectors:
        Its vector indexes (``VectorIndex``).
    doc_names, text_index:
        Doc key -> doc_id, and the text reuse index of the embedded kinds; built once per
        version and shared by every view and operation on it.
    sparse:
        The BM25 collections of the kinds the components search, built on first use.
    members:
        The components' own per-version state, by name (``Component.state_members``).
    carried:
        What the write that committed this version left for the next write, by component
        name (the heterograph's G2, the hierarchy's item keys); empty after an open.
    views:
        The components' views by mode.
    """

    snapshot: Snapshot
    vectors: VectorIndex
    doc_names: DocNames
    text_index: TextIndex
    sparse: SparseParts
    members: Mapping[str, Versioned] = field(default_factory=dict)
    carried: Mapping[str, Any] = field(default_factory=dict)
    views: dict[str, ComponentView] = field(default_factory=dict)

    @property
    def version(self) -> int:
        """The committed version number."""
        return self.snapshot.version

    @classmethod
    def opened(
        cls,
        snapshot: Snapshot,
        vectors: VectorIndex,
        config: IndexConfig,
        components: Sequence[Component],
        seeded: dict[int, KindIndex] | None = None,
    ) -> EngineState:
        """The state of ``snapshot`` built from it (``seeded``: BM25 parts a compaction
        made for it already)."""
        kinds = sparse_kinds(components)
        sparse = SparseParts.seeded(snapshot, config.maintenance, kinds, seeded or {})
        members: dict[str, Versioned] = {}
        for comp in components:
            members.update(comp.state_members(snapshot, config))
        state = cls(snapshot, vectors, DocNames(snapshot), TextIndex(snapshot), sparse, members)
        state._add_views(config, components, None, None)
        return state

    def advanced(
        self,
        snapshot: Snapshot,
        delta: Delta,
        vectors: VectorIndex,
        config: IndexConfig,
        components: Sequence[Component],
        carried: Mapping[str, Any],
        seeded: dict[int, KindIndex] | None = None,
    ) -> EngineState:
        """The state of ``snapshot``, which ``delta`` committed on this version: every
        member advanced (``vectors`` already, before the commit), each component's view
        derived from its view here, ``carried`` what the write left for the next one."""
        policy = config.maintenance
        state = EngineState(
            snapshot,
            vectors,
            self.doc_names.advanced(snapshot, delta, policy),
            self.text_index.advanced(snapshot, delta, policy),
            self.sparse.advanced(snapshot, delta, policy, seeded=seeded),
            {name: m.advanced(snapshot, delta, policy) for name, m in self.members.items()},
            dict(carried),
        )
        state._add_views(config, components, self, delta)
        return state

    def _add_views(
        self,
        config: IndexConfig,
        components: Sequence[Component],
        previous: EngineState | None,
        delta: Delta | None,
    ) -> None:
        """Each component's view of this version (advanced from ``previous``'s after a
        commit), by mode; ``naive`` is the engine's own."""
        self.views["naive"] = NaiveView(self.snapshot, self.vectors, self.doc_names)
        for comp in components:
            before = previous.views.get(comp.modes[0]) if previous and comp.modes else None
            if before is not None and delta is not None:
                view = comp.advance(before, self, config, delta)
            else:
                view = comp.view(self, config)
            for mode in comp.modes:
                self.views[mode] = view


def sparse_kinds(components: Sequence[Component]) -> list[int]:
    """The node kinds the components search by BM25 (``Component.sparse_kinds``)."""
    return sorted({int(k) for comp in components for k in comp.sparse_kinds})
