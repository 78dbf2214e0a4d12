"""Stage 3, attributes (A): a summary of each important entity.

Important entities = k-core ∪ sampled betweenness on G1 (S, N, R and their decomposition
edges; NodeRAG's Algorithm 1, :func:`~graphstrata.core.communities.important_entities`).
An attribute is (re)written only for entities that became important, or whose facts
changed; entities that stopped being important lose theirs. The selection itself needs the
whole G1 (k-core, betweenness), so it is redone on a schedule: when G1 has grown or shrunk
by ``HeterographConfig.importance_refresh_share`` since the last selection; in between, the
entities that have attributes stay the important ones. Each selection converges the index
to what a static build would hold (docs/architecture.md, "Heterograph").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphstrata.core.ids import contains, positions_in
from graphstrata.engine.component import MeteredLLM
from graphstrata.engine.heterograph.build.decompose import Names
from graphstrata.core.communities import group_by, important_entities, unique_pairs
from graphstrata.engine.heterograph.schema import G1_EDGES, A, N, R, S
from graphstrata.engine.heterograph.build.work import EMPTY, EdgeList, Work
from graphstrata.engine.prompts import attribute_request
from graphstrata.engine.types import EdgeKind

#: Context budgets of one attribute prompt (newest facts first). NodeRAG sends everything,
#: which for a hub entity of a news corpus is tens of thousands of tokens.
ATTRIBUTE_FACT_TOKENS = 1500
ATTRIBUTE_RELATION_TOKENS = 500

#: ``entity -> (S ids, R ids)`` an attribute is written from.
Facts = dict[int, tuple[list[int], list[int]]]


def facts(work: Work, entities: np.ndarray) -> tuple[Facts, Facts]:
    """The (S ids, R ids) an attribute of each entity is written from, newest first within
    the token budgets: on the committed graph, and on the graph after this operation."""
    sn_before, sn_after = work.edges_at(int(EdgeKind.UNIT_ENTITY), entities, end=1)
    nr_before, nr_after = work.edges_at(int(EdgeKind.ENTITY_RELATION), entities, end=0)
    return (
        _facts_of(work, entities, sn_before, nr_before, before=True),
        _facts_of(work, entities, sn_after, nr_after, before=False),
    )


def facts_after(work: Work, entities: np.ndarray) -> Facts:
    """The facts of ``entities`` on the graph after this operation only (:func:`facts`)."""
    sn = work.live_edges_at(int(EdgeKind.UNIT_ENTITY), entities, end=1)
    nr = work.live_edges_at(int(EdgeKind.ENTITY_RELATION), entities, end=0)
    return _facts_of(work, entities, sn, nr, before=False)


def _facts_of(work: Work, entities: np.ndarray, sn: EdgeList, nr: EdgeList, before: bool) -> Facts:
    """The facts of ``entities`` from their unit -> entity edges ``sn`` and entity ->
    relationship edges ``nr``; ``before`` counts tokens of the committed rows."""
    units = group_by(*unique_pairs(sn[1], sn[0]))  # each entity's distinct units, ascending
    rels = group_by(*unique_pairs(nr[0], nr[1]))
    order = entities.tolist()
    lists = [units.get(e, EMPTY)[::-1] for e in order] + [rels.get(e, EMPTY)[::-1] for e in order]
    budgets = [ATTRIBUTE_FACT_TOKENS] * len(order) + [ATTRIBUTE_RELATION_TOKENS] * len(order)
    kept = work.leading_within_all(lists, budgets, before)
    return {e: (kept[i], kept[len(order) + i]) for i, e in enumerate(order)}


def _select(work: Work, g1_ids: np.ndarray) -> tuple[set[int], dict[str, Any]]:
    """NodeRAG's important entities on the whole G1 after this operation (its live S, N, R
    ids ``g1_ids``, ascending), and counters."""
    cfg = work.config
    n_ids = work.live_ids(N)
    src, dst = work.live_edges(G1_EDGES)
    _sn_s, sn_n = unique_pairs(*work.live_edges([int(EdgeKind.UNIT_ENTITY)]))
    support = np.zeros(g1_ids.size, np.int64)
    np.add.at(support, positions_in(g1_ids, sn_n), 1)
    is_entity = np.isin(g1_ids, n_ids)
    imp = important_entities(
        g1_ids, is_entity, support, src, dst, cfg.betweenness_sources, cfg.seed
    )
    stats = {"k_core": imp.k_core, "by_core": imp.by_core, "by_betweenness": imp.by_betweenness}
    return set(imp.entities.tolist()), stats


def attributes(
    llm: MeteredLLM, work: Work, names: Names, touched: np.ndarray, selected_at: int | None
) -> dict[str, Any]:
    """Find the important entities; write, refresh or drop their attributes (with
    ``HeterographConfig.attributes`` off: drop every attribute, select nothing).

    Parameters
    ----------
    llm:
        Stage ``attribute`` (one batch).
    work:
        Receives new A nodes with their N→A edges, and deletes outdated ones.
    names:
        Display names of the entities.
    touched:
        Live entities whose facts the operation may have changed (from
        :func:`~graphstrata.engine.heterograph.build.settle.settle`).
    selected_at:
        G1's size at the last selection (``None``: there was none).

    Returns
    -------
    dict
        Counters for the report: ``important``, ``selected`` (whether this operation
        selected them), ``selected_at``, ``k_core``, ``by_core``, ``by_betweenness`` (of the
        selection, when made), ``written``, ``refreshed``, ``dropped``.
    """
    cfg = work.config
    # Current attributes: N -> A (committed, alive), grouped in one pass (a Python loop
    # over every attribute edge, 2.9k at 100k chunks, was 10 ms per write under
    # line_profiler; its wall time without the profiler was not measured).
    a_src, a_dst = work.committed_edges(int(EdgeKind.ENTITY_ATTRIBUTE))
    dead = work.dead_array()
    alive = ~(contains(dead, a_src) | contains(dead, a_dst))
    has = {n: a.tolist() for n, a in group_by(a_src[alive], a_dst[alive]).items()}
    selection: dict[str, Any] = {}
    important: set[int]
    if not cfg.writes_attributes:
        # No entity is important, so every attribute there is goes; nothing is selected
        # (the k-core and betweenness pass is most of this stage's time without an LLM).
        due, important = False, set()
    else:
        g1_ids = work.live_ids(S, N, R)  # its size is what the schedule compares
        size = int(g1_ids.size)
        share = float(cfg.importance_refresh_share)
        due = (
            selected_at is None or not has or abs(size - selected_at) >= share * max(selected_at, 1)
        )
        if due:
            important, selection = _select(work, g1_ids)
            selected_at = size
        else:  # between selections the entities with attributes stay the important ones
            important = set(has)
    touched_set = set(touched.tolist())
    candidates = np.asarray(sorted(important & touched_set & set(has)), dtype=np.int64)
    changed: set[int] = set()
    new: Facts = {}
    if candidates.size:
        old, new = facts(work, candidates)
        changed = {e for e in candidates.tolist() if old[e] != new.get(e)}
    targets = sorted((important - set(has)) | changed)
    dropped = sorted(set(has) - important)
    for e in [*changed, *dropped]:
        work.dead.update(has[e])
    stats: dict[str, Any] = {
        "important": len(important),
        "selected": due,
        "selected_at": selected_at,
        **selection,
        "written": 0,
        "refreshed": len(changed),
        "dropped": len(dropped),
    }
    if not targets:
        return stats
    # The facts of the changed entities were just read (deleting attributes, above, changes
    # no unit or relationship edge); only the newly important ones are read here.
    unread = np.asarray([e for e in targets if e not in new], dtype=np.int64)
    written_from = {**new, **(facts_after(work, unread) if unread.size else {})}
    # Every text the prompts quote, read in one lookup (a lookup per list cost ~0.2 ms of
    # Arrow overhead: 11 ms of a write at 100k chunks under line_profiler, where hubs'
    # attributes are refreshed).
    quoted = list(dict.fromkeys(i for e in targets for part in written_from[e] for i in part))
    text = dict(zip(quoted, work.text_of(quoted), strict=True))
    requests = [
        attribute_request(
            name,
            [text[i] for i in written_from[e][0]],
            [ln for i in written_from[e][1] for ln in text[i].split("\n")],
            int(cfg.attribute_tokens),
        )
        for e, name in zip(targets, names.names_of(work, targets), strict=True)
    ]
    answers = llm.complete("attribute", requests)
    written = [(e, " ".join(a.text.split())) for e, a in zip(targets, answers, strict=True)]
    llm.record_yield("attribute", [int(bool(t)) for _, t in written], [a.text for a in answers])
    written = [(e, t) for e, t in written if t]
    if len(written) < len(targets):
        work.notes.append(f"{len(targets) - len(written)} empty attribute answers skipped")
    ids = work.new_ids(len(written))
    sources = [written_from[e][0] + written_from[e][1] for e, _ in written]
    cited = work.cited_docs_by(  # one pass for all: 0.5 ms a call (line_profiler, 100k)
        np.repeat(np.asarray(ids, np.int64), [len(x) for x in sources]),
        np.asarray([i for x in sources for i in x], np.int64),
    )
    for aid, (_e, answer) in zip(ids, written, strict=True):
        work.new_kind[aid] = A
        work.text[aid] = answer
        work.docs[aid] = cited.get(aid, [])
    work.edges.add(int(EdgeKind.ENTITY_ATTRIBUTE), [e for e, _ in written], ids)
    stats["written"] = len(written)
    return stats
