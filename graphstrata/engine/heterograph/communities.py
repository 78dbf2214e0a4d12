"""Stage 4, communities: Leiden on G2 and the high-level elements (H) and titles (O).

Leiden (modularity, seeded) runs on G2 = G1 + A, started from the previous membership and
run until no node moves (from a converged partition a small change moves few nodes); only
the communities the write touched are re-optimised, the others contracted to one node each
(:func:`~graphstrata.engine.heterograph.graph.leiden_local`). A
community whose members moved by more than ``community_change_share`` (Jaccard distance to
the members its elements were last written from), or whose elements used text of a deleted
document, gets new elements; the others keep theirs (docs/architecture.md, "Heterograph").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from graphstrata.core import sets
from graphstrata.core.ids import positions_in
from graphstrata.engine.component import ChangeSet, MeteredLLM
from graphstrata.engine.heterograph.graph import (
    group_by,
    initial_membership,
    leiden_local,
    match_communities,
    stable_labels,
)
from graphstrata.engine.heterograph.parse import Element, parse_elements
from graphstrata.engine.heterograph.schema import (
    G2_EDGES,
    G2_KINDS,
    ST_GROUP_NODE_IDS,
    ST_GROUP_NODE_KEYS,
    ST_GROUP_OF,
    ST_LEIDEN,
    A,
    H,
    O,
    S,
)
from graphstrata.engine.heterograph.work import EMPTY, Work
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
    content:
        Community label -> its S and A members (what elements are written from).
    group_members:
        Group key -> the G2 members its elements were written from (kept and new groups).
    group_nodes:
        Group key -> its H and O ids (kept and new groups).
    new_elements:
        Community label -> the new H ids written for it.
    kept:
        Community label -> the group key whose elements it keeps.
    next_group_key:
        The next unused group key.
    stats:
        Counters for the report.
    """

    g2_ids: np.ndarray
    membership: np.ndarray
    content: dict[int, np.ndarray]
    group_members: dict[int, np.ndarray]
    group_nodes: dict[int, np.ndarray]
    new_elements: dict[int, list[int]]
    kept: dict[int, int]
    next_group_key: int
    stats: dict[str, Any]


def element_groups(work: Work) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """Committed element groups: key -> live members, and key -> its H and O ids."""
    nids, nkeys = work.state(ST_GROUP_NODE_IDS), work.state(ST_GROUP_NODE_KEYS)
    nodes = group_by(nkeys, nids) if nids is not None and nkeys is not None else {}
    members: dict[int, np.ndarray] = {}
    aligned = work.node_state(ST_GROUP_OF, G2_KINDS)
    if aligned is not None:
        ids, keys = aligned
        keep = (keys >= 0) & ~np.isin(ids, work.dead_array())
        members = group_by(keys[keep], ids[keep])
    for key in nodes:
        members.setdefault(key, EMPTY)
    return members, nodes


def _touched_nodes(
    work: Work, g2_ids: np.ndarray, prev: tuple[np.ndarray, np.ndarray] | None
) -> np.ndarray:
    """Live G2 nodes whose edges this operation changed: new nodes, the ends of new G2
    edges, and the committed neighbours of deleted nodes (edges die only with an end)."""
    parts = [g2_ids[~np.isin(g2_ids, prev[0])]] if prev is not None else [g2_ids]
    dead = work.dead_array()
    for kind in G2_EDGES:
        ns, nd = work.edges.of(kind)
        parts += [ns, nd]
        if dead.size:
            s, d = work.committed_edges(kind)
            parts += [d[np.isin(s, dead)], s[np.isin(d, dead)]]
    touched = sets.unique(np.concatenate(parts))
    return touched[np.isin(touched, g2_ids)]


def communities(
    llm: MeteredLLM, work: Work, change: ChangeSet, next_group_key: int, whole_graph: bool = False
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
    whole_graph:
        Run Leiden over the whole graph (from the previous membership) even where the
        change is local (maintenance).
    """
    cfg = work.config
    g2_ids = work.live_ids(*G2_KINDS)
    src, dst = work.live_edges(G2_EDGES)
    prev = work.node_state(ST_LEIDEN, G2_KINDS)
    init = initial_membership(g2_ids, *prev) if prev is not None else None
    membership, region = leiden_local(
        int(g2_ids.size),
        positions_in(g2_ids, src),
        positions_in(g2_ids, dst),
        np.ones(src.size, np.float64),
        seed=int(cfg.seed),
        initial=init,
        touched=positions_in(g2_ids, _touched_nodes(work, g2_ids, prev)),
        backend=LEIDEN_BACKEND,
        max_region_share=LOCAL_LEIDEN_MAX_SHARE if cfg.local_leiden and not whole_graph else 0.0,
    )
    if init is not None:
        membership = stable_labels(membership, init)
    members = group_by(membership, g2_ids)
    content_kinds = np.isin(g2_ids, work.live_ids(S, A))
    content = group_by(membership[content_kinds], g2_ids[content_kinds])
    eligible = {c: members[c] for c, ids in content.items() if ids.size >= MIN_COMMUNITY_UNITS}
    group_members, group_nodes = element_groups(work)
    # Elements written from a deleted document's text are rewritten (or dropped): its
    # content must not outlive it.
    removed = set(change.removed_doc_keys.tolist())
    stale = {
        key
        for key, ids in group_nodes.items()
        if removed and any(removed & set(d) for d in work.docs_of(ids[:1]))
    }
    match = match_communities(eligible, group_members, float(cfg.community_change_share), stale)
    for key in match.dropped + [k for _, k in match.regenerate if k is not None]:
        work.dead.update(int(i) for i in group_nodes.get(key, EMPTY))
    kept_keys = set(match.kept.values())
    group_members = {k: v for k, v in group_members.items() if k in kept_keys}
    group_nodes = {k: v for k, v in group_nodes.items() if k in kept_keys}
    labels = [label for label, _ in match.regenerate]
    elements = write_elements(llm, work, labels, content)
    new_elements: dict[int, list[int]] = {}
    for label, ids in elements.items():
        key = next_group_key
        next_group_key += 1
        group_members[key] = members[label]
        group_nodes[key] = np.asarray(ids, dtype=np.int64)
        new_elements[label] = [i for i in ids if work.new_kind.get(i) == H]
    stats = {
        "leiden_region_nodes": region.region_nodes,
        "leiden_fixed_communities": region.fixed_communities,
        "leiden_full": region.full,
        "communities": len(members),
        "eligible": len(eligible),
        "kept": len(match.kept),
        "regenerated": len(elements),
        "retired": len(match.dropped),
        "stale": len(stale),
    }
    return Communities(
        g2_ids=g2_ids,
        membership=membership,
        content=content,
        group_members=group_members,
        group_nodes=group_nodes,
        new_elements=new_elements,
        kept=match.kept,
        next_group_key=next_group_key,
        stats=stats,
    )


def _context(work: Work, ids: np.ndarray) -> list[int]:
    """The newest members that fit the community prompt's budget (at least one), sorted."""
    newest = np.sort(ids)[::-1]
    tokens = work.tokens_of(newest)
    fits = np.cumsum(tokens) <= COMMUNITY_CONTEXT_TOKENS
    fits[0] = True
    return sorted(newest[fits].tolist())


def write_elements(
    llm: MeteredLLM, work: Work, labels: list[int], content: dict[int, np.ndarray]
) -> dict[int, list[int]]:
    """One LLM batch for the communities' elements (+ one retry); H, O and H–O edges.

    Returns ``{community label: [h, o, h, o, ...]}`` for the communities that got elements.
    """
    if not labels:
        return {}
    used = {label: _context(work, content[label]) for label in labels}
    max_tokens = int(work.config.element_tokens)
    requests = [community_request(work.text_of(used[c]), max_tokens) for c in labels]
    answers = llm.complete("community", requests)
    parsed = [parse_elements(a.text, MAX_ELEMENTS_PER_COMMUNITY) for a in answers]
    retry = [i for i, p in enumerate(parsed) if p is None]
    if retry:
        again = llm.complete("community_retry", [requests[i] for i in retry])
        for i, a in zip(retry, again, strict=True):
            parsed[i] = parse_elements(a.text, MAX_ELEMENTS_PER_COMMUNITY)
        skipped = sum(1 for i in retry if parsed[i] is None)
        work.notes.append(f"{len(retry)} community answers unusable, retried; {skipped} skipped")
    out: dict[int, list[int]] = {}
    for label, elements in zip(labels, parsed, strict=True):
        if not elements:
            continue
        out[label] = _element_nodes(work, elements, work.cited_docs(used[label]))
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
