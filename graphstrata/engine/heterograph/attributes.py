"""Stage 3, attributes (A): a summary of each important entity.

Important entities = k-core ∪ sampled betweenness on G1 (S, N, R and their decomposition
edges; NodeRAG's Algorithm 1, :func:`~graphstrata.engine.heterograph.graph.important_entities`).
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

from graphstrata.core import sets
from graphstrata.core.ids import contains, positions_in
from graphstrata.engine.component import MeteredLLM
from graphstrata.engine.heterograph.decompose import Names
from graphstrata.engine.heterograph.graph import group_by, important_entities, unique_pairs
from graphstrata.engine.heterograph.schema import G1_EDGES, A, N, R, S
from graphstrata.engine.heterograph.work import EMPTY, Work
from graphstrata.engine.prompts import attribute_request
from graphstrata.engine.types import EdgeKind

#: Context budgets of one attribute prompt (newest facts first). NodeRAG sends everything,
#: which for a hub entity of a news corpus is tens of thousands of tokens.
ATTRIBUTE_FACT_TOKENS = 1500
ATTRIBUTE_RELATION_TOKENS = 500

#: ``entity -> (S ids, R ids)`` an attribute is written from.
Facts = dict[int, tuple[list[int], list[int]]]


def _within(work: Work, ids: np.ndarray, budget: int, before: bool) -> list[int]:
    """The leading ``ids`` that fit ``budget`` tokens (at least one), sorted."""
    if ids.size == 0:
        return []
    nodes = work.nodes
    # A hub entity has thousands of facts and the budget holds a few dozen: count tokens
    # in growing blocks until the budget is passed, not for every fact.
    counted: list[np.ndarray] = []
    total, end, step = 0, 0, 64
    while end < ids.size and total <= budget:
        part = ids[end : end + step]
        tokens = nodes.tokens[nodes.rows(part)] if before else work.tokens_of(part)
        counted.append(np.asarray(tokens, np.int64))
        total += int(counted[-1].sum())
        end += part.size
        step *= 2
    fits = np.cumsum(np.concatenate(counted)) <= budget
    fits[0] = True  # at least one fact, even a long one
    return sorted(ids[:end][fits].tolist())


def facts(work: Work, entities: np.ndarray, before: bool) -> Facts:
    """The (S ids, R ids) an attribute of each entity is written from, newest first within
    the token budgets; ``before`` reads the committed graph instead of the changed one."""
    if before:
        sn = work.committed_edges(int(EdgeKind.UNIT_ENTITY))
        nr = work.committed_edges(int(EdgeKind.ENTITY_RELATION))
        wanted = sets.unique(entities)
        sel = contains(wanted, sn[1])
        sn = (sn[0][sel], sn[1][sel])
        sel = contains(wanted, nr[0])
        nr = (nr[0][sel], nr[1][sel])
    else:
        sn = work.live_edges_at(int(EdgeKind.UNIT_ENTITY), entities, end=1)
        nr = work.live_edges_at(int(EdgeKind.ENTITY_RELATION), entities, end=0)
    units = group_by(sn[1], sn[0])
    rels = group_by(nr[0], nr[1])
    out = {}
    for e in entities.tolist():
        s_ids = sets.unique(units.get(e, EMPTY))[::-1]
        r_ids = sets.unique(rels.get(e, EMPTY))[::-1]
        out[e] = (
            _within(work, s_ids, ATTRIBUTE_FACT_TOKENS, before),
            _within(work, r_ids, ATTRIBUTE_RELATION_TOKENS, before),
        )
    return out


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
    """Find the important entities; write, refresh or drop their attributes.

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
        :func:`~graphstrata.engine.heterograph.settle.settle`).
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
    # Current attributes: N -> A (committed, alive).
    a_src, a_dst = work.committed_edges(int(EdgeKind.ENTITY_ATTRIBUTE))
    has: dict[int, list[int]] = {}
    for n, a in zip(a_src.tolist(), a_dst.tolist(), strict=True):
        if n not in work.dead and a not in work.dead:
            has.setdefault(n, []).append(a)
    g1_ids = work.live_ids(S, N, R)  # its size is what the schedule compares
    size = int(g1_ids.size)
    share = float(cfg.importance_refresh_share)
    due = selected_at is None or not has or abs(size - selected_at) >= share * max(selected_at, 1)
    selection: dict[str, Any] = {}
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
        old = facts(work, candidates, before=True)
        new = facts(work, candidates, before=False)
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
    written_from = {**new, **(facts(work, unread, before=False) if unread.size else {})}
    requests = []
    for e in targets:
        units, rels = written_from[e]
        requests.append(
            attribute_request(
                names.name_of(work, e),
                work.text_of(units),
                [ln for t in work.text_of(rels) for ln in t.split("\n")],
                int(cfg.attribute_tokens),
            )
        )
    answers = llm.complete("attribute", requests)
    written = [(e, " ".join(a.text.split())) for e, a in zip(targets, answers, strict=True)]
    written = [(e, t) for e, t in written if t]
    if len(written) < len(targets):
        work.notes.append(f"{len(targets) - len(written)} empty attribute answers skipped")
    ids = work.new_ids(len(written))
    for aid, (e, text) in zip(ids, written, strict=True):
        units, rels = written_from[e]
        work.new_kind[aid] = A
        work.text[aid] = text
        work.docs[aid] = work.cited_docs(units + rels)
    work.edges.add(int(EdgeKind.ENTITY_ATTRIBUTE), [e for e, _ in written], ids)
    stats["written"] = len(written)
    return stats
