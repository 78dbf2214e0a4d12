"""The hierarchy as an engine component: its modes, parameters, update and view."""

from __future__ import annotations

from typing import ClassVar

from graphstrata.engine.component import ChangeSet, Component, DocNames, UpdateContext
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.hierarchy.keys import ItemKeys
from graphstrata.engine.hierarchy.update import (
    COMPONENT,
    HierarchyTree,
    Update,
    stored_direction,
)
from graphstrata.engine.hierarchy.view import CollapsedParams, HierarchyParams, HierarchyView
from graphstrata.engine.params import ModeParams
from graphstrata.engine.store import Snapshot
from graphstrata.engine.vectors import VectorIndex


class HierarchyComponent(Component):
    """EraRAG's layered summary hierarchy (see the package docstring).

    Parameters
    ----------
    group_new_first:
        Insert policy; None takes ``HierarchyConfig.group_new_first`` of the index.
    """

    name = COMPONENT
    modes = ("collapsed", "detailed", "summarized")
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
        if change.empty:
            return
        direction = stored_direction(ctx)
        view = ctx.views.get(self.modes[0])
        keys = (
            view.item_keys(ctx.hyperplanes, direction)
            if isinstance(view, HierarchyView)
            else ItemKeys(ctx.hyperplanes, direction)
        )
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

    def view(
        self, snapshot: Snapshot, vectors: VectorIndex, config: IndexConfig, doc_names: DocNames
    ) -> HierarchyView:
        """The search view of one version."""
        return HierarchyView(snapshot, vectors, config, doc_names)
