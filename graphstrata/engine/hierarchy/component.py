"""The hierarchy as an engine component: its modes, parameters, update and view."""

from __future__ import annotations

from typing import ClassVar

from graphstrata.engine.component import ChangeSet, Component, UpdateContext, VersionState
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.hierarchy.keys import ItemKeys
from graphstrata.engine.hierarchy.update import (
    COMPONENT,
    HierarchyTree,
    Update,
    stored_direction,
)
from graphstrata.engine.hierarchy.view import (
    SPARSE_KINDS,
    CollapsedParams,
    HierarchyParams,
    HierarchyView,
)
from graphstrata.engine.params import ModeParams


class HierarchyComponent(Component):
    """EraRAG's layered summary hierarchy (see the package docstring).

    Parameters
    ----------
    group_new_first:
        Insert policy; None takes ``HierarchyConfig.group_new_first`` of the index.
    """

    name = COMPONENT
    modes = ("collapsed", "detailed", "summarized")
    sparse_kinds = SPARSE_KINDS
    mode_params: ClassVar[dict[str, type[ModeParams]]] = {
        "collapsed": CollapsedParams,
        "detailed": HierarchyParams,
        "summarized": HierarchyParams,
    }

    def __init__(self, group_new_first: bool | None = None):
        #: Insert policy for new items (see ``Update._group_new``): True = new items that
        #: can fill whole segments among themselves form new segments and only the rest join
        #: their Hamming-nearest segment; False = every new item joins its nearest existing
        #: segment (the kernel's plain incremental placement, as in the paper's Algorithm 3).
        #: None: take ``HierarchyConfig.group_new_first`` recorded with the index.
        self.group_new_first = group_new_first

    def enabled(self, config: IndexConfig) -> bool:
        """``hierarchy.enabled`` of the config."""
        return bool(config.hierarchy.enabled)

    def update(self, ctx: UpdateContext, change: ChangeSet) -> None:
        """Re-partition and re-summarize what the chunk change touches (package docstring)."""
        held = ctx.carried.get(self.name)
        if change.empty:
            if held is not None:
                ctx.carry[self.name] = held
            return
        direction = stored_direction(ctx)
        # The writers' memo of item keys, handed from write to write through the state
        # (``keys.ItemKeys``; ids' keys never change, so every version may share it).
        if isinstance(held, ItemKeys) and held.matches(ctx.hyperplanes, direction):
            keys = held
        else:
            keys = ItemKeys(ctx.hyperplanes, direction)
        ctx.carry[self.name] = keys
        update = Update(
            ctx=ctx,
            cfg=ctx.config.hierarchy,
            tree=HierarchyTree.from_nodes(ctx.snapshot.nodes),
            direction=direction,
            keys=keys,
            group_new_first=(
                ctx.config.hierarchy.group_new_first
                if self.group_new_first is None
                else self.group_new_first
            ),
        )
        update.run(change)

    def view(self, state: VersionState, config: IndexConfig) -> HierarchyView:
        """The search view of one version."""
        sparse = state.sparse.index(SPARSE_KINDS)
        return HierarchyView(state.snapshot, state.vectors, config, state.doc_names, sparse)
