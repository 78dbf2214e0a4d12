"""Stage 4, communities: Leiden on G2 and the high-level elements (H) and titles (O).

Leiden (modularity, seeded) runs on G2 = G1 + A, started from the previous membership and
run until no node moves (from a converged partition a small change moves few nodes); only
the communities the write touched are re-optimised, the others contracted to one node each
(:func:`~graphstrata.core.communities.leiden_local`). A
community whose members moved by more than ``community_change_share`` (Jaccard distance to
the members its elements were last written from), or whose elements used text of a deleted
document, gets new elements; the others keep theirs (docs/architecture.md, "Heterograph").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from graphstrata.core import sets
from graphstrata.core.ids import EdgesWithin, contains, find_positions
from graphstrata.core.matching import label_sizes
from graphstrata.engine.component import ChangeSet, MeteredLLM
from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.heterograph.state.g2 import CONTENT_KINDS, G2Graph, StateChanges, table_edges
from graphstrata.core.communities import (
    EdgeArrays,
    EdgeSource,
    group_by,
    leiden_local,
    with_singletons,
)
from graphstrata.engine.heterograph.build.groups import ElementGroups, match_pairs, pairs_of
from graphstrata.engine.heterograph.parse import Element, parse_elements
from graphstrata.engine.heterograph.schema import (
    G2_EDGES,
    G2_KINDS,
    ST_LEIDEN,
    H,
    O,
)
from graphstrata.engine.heterograph.build.work import EMPTY, Work
from graphstrata.engine.prompts import community_request
from graphstrata.engine.types import EdgeKind

#: A community needs this many semantic units / attributes to get high-level elements;
#: smaller ones (an isolated unit, a lone entity pair) have nothing to synthesize.
MIN_COMMUNITY_UNITS = 3
#: At most this many high-level elements are kept per community answer.
MAX_ELEMENTS_PER_COMMUNITY = 5
#: Context budget of one community prompt (newest facts first).
COMMUNITY_CONTEXT_TOKENS = 3000
#: Leiden backend ("igraph" or "leidenalg"); see benchmarks/results/heterograph.md.
LEIDEN_BACKEND = "igraph"
#: A write whose touched communities hold more than this share of G2 runs Leiden whole:
#: the contraction would save little.
LOCAL_LEIDEN_MAX_SHARE = 0.5


@dataclass
class Communities:
    """The partition after this operation, and the element groups it keeps or writes.

    Attributes
    ----------
    g2_ids:
        Sorted ids of the live S, N, R, A nodes.
    membership:
        Leiden community of each of ``g2_ids``.
    groups:
        The element groups after the operation (kept and new).
    content:
        Community label -> its S and A members, for the communities that got new elements.
    new_elements:
        Community label -> the new H ids written for it.
    kept:
        Community label -> the group key whose elements it keeps, for the communities the
        operation paired (:func:`~graphstrata.engine.heterograph.build.groups.match_pairs`).
    next_group_key:
        The next unused group key.
    stats:
        Counters for the report.
    graph:
        G2 as this operation leaves it, for the next write of the process (``g2``).
    changes:
        How ``membership`` and ``groups.group_of`` differ from the committed state, when
        the operation started from a carried G2 (else found by the state's write).
    """

    g2_ids: np.ndarray
    membership: np.ndarray
    groups: ElementGroups
    content: dict[int, np.ndarray]
    new_elements: dict[int, list[int]]
    kept: dict[int, int]
    next_group_key: int
    stats: dict[str, Any]
    graph: G2Graph
    changes: StateChanges | None = None


def _touched(work: Work, g2_ids: np.ndarray, is_new: np.ndarray, cut: np.ndarray) -> np.ndarray:
    """Positions of the live G2 nodes whose edges this operation changed: new nodes, the
    ends of new G2 edges, and the live ends of edges that died with a deleted node."""
    new_ends = [e for kind in G2_EDGES for e in work.edges.of(kind)]
    found = find_positions(g2_ids, np.concatenate(new_ends))
    return sets.unique(np.concatenate([np.flatnonzero(is_new), found[found >= 0], cut]))


def _changed_labels(
    membership: np.ndarray, init: np.ndarray, is_new: np.ndarray, dead_labels: np.ndarray
) -> np.ndarray:
    """Sorted labels of the communities whose members this operation changed: those a node
    joined or left (new nodes included) and those a deleted node was in."""
    moved = (membership != init) | is_new
    return sets.unique(np.concatenate([membership[moved], init[moved], dead_labels]))


def _initial_labels(
    work: Work, g2_ids: np.ndarray
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """The committed partition on ``g2_ids``, with a fresh singleton label for each node it
    does not hold (None without a committed partition), which nodes those are, and the
    labels of the nodes this operation deletes."""
    labels = work.node_state_on(ST_LEIDEN, G2_KINDS, g2_ids)
    if labels is None:
        return None, np.ones(g2_ids.size, bool), EMPTY
    dead_labels = work.node_state_on(ST_LEIDEN, G2_KINDS, work.dead_array())
    return _started(labels, EMPTY if dead_labels is None else dead_labels[dead_labels >= 0])


def _started(
    labels: np.ndarray, dead_labels: np.ndarray
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """:func:`_initial_labels` from the committed labels (-1: a new node) and those of the
    deleted nodes."""
    is_new = labels < 0
    # Fresh labels start above every label of a committed live node: those kept and those
    # this operation deletes (stored ids of nodes deleted earlier do not count).
    top = max(int(labels.max()) if labels.size else -1, int(dead_labels.max(initial=-1)))
    if top < 0:  # no committed live node has a label
        return None, np.ones(labels.size, bool), EMPTY
    return with_singletons(labels, top), is_new, dead_labels


def _stale_groups(work: Work, groups: ElementGroups, removed_doc_keys: np.ndarray) -> np.ndarray:
    """Groups whose elements were written from text of a removed document (a group's H and
    O nodes cite the same documents: one node per group is read)."""
    if not removed_doc_keys.size or not groups.node_ids.size:
        return EMPTY
    keys, first = sets.unique_first(groups.node_keys)
    docs, owner = work.nodes.doc_lists_at(work.nodes.rows(groups.node_ids[first]))
    return sets.unique(keys[owner[contains(sets.unique(removed_doc_keys), docs)]])


def communities(
    llm: MeteredLLM,
    work: Work,
    change: ChangeSet,
    next_group_key: int,
    maintenance: MaintenanceConfig,
    whole_graph: bool = False,
    carried: G2Graph | None = None,
) -> Communities:
    """Leiden from the previous membership; (re)generate H/O where membership moved.

    Parameters
    ----------
    llm:
        Stages ``community`` and ``community_retry``.
    work:
        Receives the new H and O nodes with their H→O edges; the elements of dropped or
        regenerated groups are deleted.
    change:
        Its ``removed_doc_keys`` make the groups written from them stale.
    next_group_key:
        The first unused group key (from the component metadata).
    maintenance:
        Its ``g2_extra`` and ``g2_dead`` policies compact the carried G2.
    whole_graph:
        Run Leiden over the whole graph (from the previous membership) and pair every
        community with the groups, even where the change is local (maintenance).
    carried:
        G2 as the committed version holds it, handed on by the write that committed it
        (``Communities.graph``); None: read from the tables.
    """
    cfg = work.config
    step = carried.step(work, maintenance) if carried is not None and not whole_graph else None
    source: EdgeSource
    edges: EdgesWithin | None = None
    if step is None:  # read from the tables
        g2_ids = work.live_ids(*G2_KINDS)
        edges = table_edges(work, g2_ids)
        init, is_new, dead_labels = _initial_labels(work, g2_ids)
        source = EdgeArrays(edges.src, edges.dst, np.ones(edges.src.size, np.float64))
        strength, cut = edges.degree.astype(np.float64), edges.cut
        committed = ElementGroups.committed(work, g2_ids)
        is_content = contains(work.live_ids(*CONTENT_KINDS), g2_ids)
    else:
        g2_ids, source, strength, cut = step.ids, step, step.degree, step.cut
        init, is_new, dead_labels = _started(step.labels, step.dead_labels)
        committed = ElementGroups.committed(work, g2_ids, step.group_of)
        is_content = step.content
    membership, region = leiden_local(
        int(g2_ids.size),
        source,
        seed=int(cfg.seed),
        initial=init,
        touched=_touched(work, g2_ids, is_new, cut),
        backend=LEIDEN_BACKEND,
        max_region_share=LOCAL_LEIDEN_MAX_SHARE if cfg.local_leiden and not whole_graph else 0.0,
        strength=strength,
    )
    n_labels = int(membership.max()) + 1 if membership.size else 0
    sizes = label_sizes(membership, n_labels)
    content_sizes = label_sizes(membership[is_content], n_labels)
    eligible = np.flatnonzero(content_sizes >= MIN_COMMUNITY_UNITS).astype(np.int64)
    stale = _stale_groups(work, committed, change.removed_doc_keys)
    changed = None
    if init is not None and not region.full and not whole_graph:
        changed = _changed_labels(membership, init, is_new, dead_labels)
    if step is None:
        pairs = pairs_of(membership, committed.group_of)
    else:
        relabelled = step.relabelled(membership)
        pairs = step.pairs_after(membership, relabelled)
    match = match_pairs(
        pairs,
        sizes,
        eligible,
        committed.node_keys,
        float(cfg.community_change_share),
        stale=stale,
        changed=changed,
    )
    released = sets.unique(np.asarray(match.dropped, np.int64))
    work.dead.update(committed.nodes_of(released).tolist())
    regenerated = np.asarray([label for label, _ in match.regenerate], np.int64)
    regenerated_content = contains(regenerated, membership) & is_content
    content = group_by(membership[regenerated_content], g2_ids[regenerated_content])
    elements = write_elements(llm, work, regenerated.tolist(), content)
    group_of = committed.group_of.copy()
    group_of[contains(released, group_of)] = -1
    node_keep = ~contains(released, committed.node_keys)
    node_ids, node_keys = [committed.node_ids[node_keep]], [committed.node_keys[node_keep]]
    new_elements: dict[int, list[int]] = {}
    written = np.asarray(sorted(elements), np.int64)  # labels that got elements
    for label in written.tolist():
        ids = elements[label]
        node_ids.append(np.asarray(ids, np.int64))
        node_keys.append(np.full(len(ids), next_group_key + len(new_elements), np.int64))
        new_elements[label] = [i for i in ids if work.new_kind.get(i) == H]
    # Keys in label order, as the groups are written; a new group holds all the members.
    in_written = contains(written, membership)
    group_of[in_written] = next_group_key + np.searchsorted(written, membership[in_written])
    next_group_key += int(written.size)
    all_ids, all_keys = np.concatenate(node_ids), np.concatenate(node_keys)
    order = np.argsort(all_ids, kind="stable")
    stats = {
        "leiden_region_nodes": region.region_nodes,
        "leiden_fixed_communities": region.fixed_communities,
        "leiden_full": region.full,
        "communities": int(np.count_nonzero(sizes)),
        "eligible": int(eligible.size),
        "matched": match.matched,
        "kept": len(match.kept),
        "regenerated": len(elements),
        "retired": len(match.dropped),
        "stale": int(stale.size),
    }
    changes = None
    if step is not None:
        graph, changes = step.after(membership, relabelled, group_of, pairs, maintenance)
    else:
        assert edges is not None
        graph = G2Graph.build(g2_ids, edges, membership, group_of, is_content)
    return Communities(
        g2_ids=g2_ids,
        membership=membership,
        groups=ElementGroups(group_of, all_ids[order], all_keys[order]),
        content=content,
        new_elements=new_elements,
        kept=match.kept,
        next_group_key=next_group_key,
        stats=stats,
        graph=graph,
        changes=changes,
    )


def write_elements(
    llm: MeteredLLM, work: Work, labels: list[int], content: dict[int, np.ndarray]
) -> dict[int, list[int]]:
    """One LLM batch for the communities' elements (+ one retry); H, O and H–O edges.

    Returns ``{community label: [h, o, h, o, ...]}`` for the communities that got elements.
    """
    if not labels:
        return {}
    # Each prompt quotes the newest members that fit its budget (at least one).
    newest = [np.sort(content[label])[::-1] for label in labels]
    chosen = work.leading_within_all(newest, [COMMUNITY_CONTEXT_TOKENS] * len(labels))
    used = dict(zip(labels, chosen, strict=True))
    max_tokens = int(work.config.element_tokens)
    requests = [community_request(work.text_of(used[c]), max_tokens) for c in labels]
    answers = llm.complete("community", requests)
    final = [a.text for a in answers]
    parsed = [parse_elements(a, MAX_ELEMENTS_PER_COMMUNITY) for a in final]
    retry = [i for i, p in enumerate(parsed) if p is None]
    if retry:
        again = llm.complete("community_retry", [requests[i] for i in retry])
        for i, a in zip(retry, again, strict=True):
            final[i] = a.text
            parsed[i] = parse_elements(a.text, MAX_ELEMENTS_PER_COMMUNITY)
        skipped = sum(1 for i in retry if parsed[i] is None)
        work.notes.append(f"{len(retry)} community answers unusable, retried; {skipped} skipped")
    llm.record_yield("community", [len(p or ()) for p in parsed], final)
    # Every community's cited documents in one pass: a lookup per community scanned the
    # operation's rewritten docs each time, which in a build is every new node (2.6 of the
    # 8.4 s of the 30k-chunk build's communities stage under cProfile; 11 ms a call there
    # against 5 ms at 10k).
    kept = [i for i, p in enumerate(parsed) if p]
    sources = [used[labels[i]] for i in kept]
    cited = work.cited_docs_by(
        np.repeat(np.asarray(kept, np.int64), [len(s) for s in sources]),
        np.asarray([i for s in sources for i in s], np.int64),
    )
    out: dict[int, list[int]] = {}
    for i in kept:
        out[labels[i]] = _element_nodes(work, parsed[i] or [], cited.get(i, []))
    return out


def _element_nodes(work: Work, elements: list[Element], docs: list[int]) -> list[int]:
    """New H and O nodes of ``elements`` (interleaved ids), with their H→O edges."""
    ids = work.new_ids(2 * len(elements))
    h_ids, o_ids = ids[0::2], ids[1::2]
    for h, o, el in zip(h_ids, o_ids, elements, strict=True):
        work.new_kind[h], work.text[h], work.docs[h] = H, el.description, docs
        work.new_kind[o], work.text[o], work.docs[o] = O, el.title, docs
    work.edges.add(int(EdgeKind.ELEMENT_TITLE), h_ids, o_ids)
    return ids
