"""The heterograph component: one operation = the build stages in order, then the write."""

from __future__ import annotations

from typing import ClassVar

from graphstrata.engine.component import (
    ChangeSet,
    Component,
    UpdateContext,
    VersionState,
)
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.heterograph.build.attributes import attributes
from graphstrata.engine.heterograph.build.communities import communities
from graphstrata.engine.heterograph.build.decompose import (
    add_units,
    decompose,
    load_names,
    units_of_removed_chunks,
)
from graphstrata.engine.heterograph.build.enrich import (
    embed_new_nodes,
    link_elements,
    semantic_edges,
)
from graphstrata.engine.heterograph.build.settle import settle
from graphstrata.engine.heterograph.build.work import EMPTY, Work
from graphstrata.engine.heterograph.build.write import write, write_state
from graphstrata.engine.heterograph.query.search import SPARSE_KINDS, GraphParams, HeterographView
from graphstrata.engine.heterograph.schema import G2_KINDS, NAME
from graphstrata.engine.heterograph.state.g2 import G2Graph
from graphstrata.engine.heterograph.state.graph_state import GraphState
from graphstrata.engine.params import ModeParams
from graphstrata.engine.report import describe
from graphstrata.engine.store import Snapshot
from graphstrata.engine.versioned import Versioned


def run_operation(
    ctx: UpdateContext,
    change: ChangeSet,
    whole_graph: bool = False,
    carried: G2Graph | None = None,
) -> G2Graph:
    """The heterograph part of one insert/delete operation, written into ``ctx.delta``.

    Each stage is timed under ``heterograph:<stage>`` in the report; the report also gets
    a note with the importance / community / cluster counters of the operation, and notes
    on unusable LLM answers.

    With ``whole_graph`` (maintenance, ``change`` empty) nothing is decomposed: the
    important entities are selected again over the whole G1 and Leiden runs over the whole
    G2 from the stored partition, the two whole-graph algorithms that writes run on a
    schedule or locally; the attributes and elements of what moved are written again.
    """
    report = ctx.report
    work = Work.start(
        ctx.snapshot, ctx.config.heterograph, change.removed_chunk_ids, ctx.delta.new_node_ids
    )
    cfg = work.config
    with report.stage("heterograph:structure"):
        view = ctx.views.get("graph")
        index = None  # the committed version's names, when its graph view holds them
        if isinstance(view, HeterographView) and view.snapshot is ctx.snapshot:
            index = view.names
        names = load_names(work, index)
        dead_units = units_of_removed_chunks(work, change.removed_chunk_ids)
    touched = EMPTY
    if not whole_graph:
        with report.stage("heterograph:decompose"):
            decomposed, notes = decompose(
                ctx.llm,
                change.added_chunk_texts,
                change.added_chunk_ids,
                int(cfg.decompose_tokens),
            )
            work.notes += notes
        with report.stage("heterograph:structure"):
            new_units = add_units(work, names, change, decomposed)
            touched = settle(work, names, dead_units, new_units)
            report.notes.append(
                f"heterograph: {len(new_units.ids)} semantic units added, {len(dead_units)} removed"
            )
    meta = ctx.snapshot.component_meta(NAME)
    with report.stage("heterograph:attributes"):
        previous = meta.get("last_update", {}).get("attributes", {})
        selected_at = previous.get("selected_at") if "selected_at" in previous else None
        if whole_graph:
            selected_at = None  # select again
        attr_stats = attributes(ctx.llm, work, names, touched, selected_at)
    with report.stage("heterograph:communities"):
        next_key = int(meta.get("next_group_key", 0))
        comm = communities(
            ctx.llm, work, change, next_key, ctx.config.maintenance, whole_graph, carried
        )
    with report.stage("heterograph:embed"):
        embedded = embed_new_nodes(ctx, work)
    with report.stage("heterograph:clusters"):
        clusters = link_elements(ctx, work, comm)
    with report.stage("heterograph:semantic_edges"):
        semantic_edges(ctx, work, change, embedded, ctx.vectors)
    with report.stage("heterograph:write"):
        write(ctx.delta, work, change.removed_chunk_ids)
        last = {
            "attributes": attr_stats,
            "communities": comm.stats,
            "clusters": clusters.stats if clusters is not None else {},
        }
        write_state(ctx.delta, work, names.mentions, comm, clusters, last)
        report.notes.append(f"heterograph: {describe(last)}")
    report.notes.extend(f"heterograph: {n}" for n in work.notes)
    return comm.graph


class HeterographComponent(Component):
    """The NodeRAG heterograph: builds and maintains T/S/N/R/A/H/O nodes; serves ``graph``."""

    name = NAME
    modes = ("graph",)
    sparse_kinds = SPARSE_KINDS
    mode_params: ClassVar[dict[str, type[ModeParams]]] = {"graph": GraphParams}

    def enabled(self, config: IndexConfig) -> bool:
        return bool(config.heterograph.enabled)

    def update(self, ctx: UpdateContext, change: ChangeSet) -> None:
        """One operation's heterograph part (:func:`run_operation`), starting from G2 as
        the write that committed ``ctx.snapshot`` left it, and leaving G2 as this write
        commits it to the next write (``UpdateContext.carry``)."""
        if change.empty:
            return
        carried = ctx.carried.get(self.name)
        graph = run_operation(ctx, change, carried=carried)
        ctx.carry[self.name] = graph

    def maintain(self, ctx: UpdateContext) -> bool:
        """Important entities selected again and Leiden over the whole graph (see
        :func:`run_operation`); their attributes and elements follow."""
        if not ctx.snapshot.nodes.ids_of_kind(*G2_KINDS).size:
            return False
        graph = run_operation(ctx, ChangeSet.nothing(ctx.delta.dim), whole_graph=True)
        ctx.carry[self.name] = graph
        return True

    def state_members(self, snapshot: Snapshot, config: IndexConfig) -> dict[str, Versioned]:
        """The names and walked edges the ``graph`` view reads (``GraphState``)."""
        return {NAME: GraphState.build(snapshot, config.heterograph)}

    def view(self, state: VersionState, config: IndexConfig) -> HeterographView:
        """The search view of one version, on the state's names and walked edges."""
        graph = state.members[NAME]
        assert isinstance(graph, GraphState)
        return HeterographView(
            state.snapshot,
            state.vectors,
            config,
            state.doc_names,
            state.sparse.index(SPARSE_KINDS),
            names=graph.names,
            stored=graph.walk,
        )
