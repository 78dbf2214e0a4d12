"""Stage 2, settling: the support of every entity and relationship the change touched.

An N or R is kept while some live S mentions it, and its ``docs`` are exactly the
documents of those S; a relationship keeps the lines some live unit still asserts, plus
the new ones. Unsupported ones are deleted, with their attributes (docs/architecture.md,
"Heterograph").
"""

from __future__ import annotations

import numpy as np

from graphstrata.core import sets
from graphstrata.core.ids import contains
from graphstrata.engine.hashing import stable_hash
from graphstrata.engine.heterograph.build.decompose import Names, NewUnits
from graphstrata.core.communities import group_by
from graphstrata.engine.heterograph.build.lookups import MentionTable
from graphstrata.engine.heterograph.build.work import EMPTY, Work
from graphstrata.engine.types import EdgeKind


def _supporters(
    work: Work, kind: int, targets: np.ndarray
) -> tuple[dict[int, np.ndarray], dict[int, list[int]]]:
    """Live S ids mentioning each target (through ``kind`` edges S -> target, in edge
    order), and the documents they cite (``Work.cited_docs_by``)."""
    src, dst = work.live_edges_at(kind, targets, end=1)
    units = group_by(dst, src)
    return {int(t): units.get(int(t), EMPTY) for t in targets.tolist()}, work.cited_docs_by(
        dst, src
    )


def _relation_lines(
    work: Work,
    mentions: MentionTable,
    new: NewUnits,
    rid: int,
    old_lines: list[str],
    units: list[int],
) -> list[str]:
    """Lines of a touched relationship still asserted by a live unit, plus new ones;
    records in ``mentions`` who asserts what when the relationship ends with two or more
    lines."""
    new_units = {u for u in units if u in work.new_kind}
    old_units = [u for u in units if u not in work.new_kind]
    if len(old_lines) >= 2:
        rows = [(u, h) for u, h in mentions.pop(rid, []) if u not in work.dead]
    else:  # every supporter of a one-line relationship asserts that line
        rows = [(u, stable_hash(old_lines[0])) for u in old_units] if old_lines else []
    rows += [(u, h) for u, h in new.mentions.get(rid, []) if u in new_units]
    alive = {h for _, h in rows}
    lines = [ln for ln in old_lines if stable_hash(ln) in alive]
    lines += [ln for ln in new.lines.get(rid, []) if ln not in lines]
    if len(lines) >= 2:
        mentions[rid] = rows
    return lines


def settle(work: Work, names: Names, dead_units: np.ndarray, new: NewUnits) -> np.ndarray:
    """Recompute support (docs) of every touched N and R; drop unsupported ones.

    Parameters
    ----------
    work:
        Receives rewritten N/R rows, deletions (unsupported committed N/R and the
        attributes of deleted entities); unsupported new N/R are forgotten.
    names:
        Its ``mentions`` are brought up to date.
    dead_units:
        The committed S this operation deletes.
    new:
        The S this operation adds, with what they assert.

    Returns
    -------
    np.ndarray
        The touched entities still alive, sorted (their facts changed).
    """
    nodes = work.nodes
    kinds = (int(EdgeKind.UNIT_ENTITY), int(EdgeKind.UNIT_RELATION))
    touched: dict[int, np.ndarray] = {}
    for kind in kinds:
        old = work.snap_edges.at(kind, dead_units, end=0)[1] if dead_units.size else EMPTY
        _ns, nd = work.edges.of(kind)
        touched[kind] = sets.unique(np.concatenate([old, nd]))
    alive_entities = []
    for kind, targets in touched.items():
        supporters, cited = _supporters(work, kind, targets)
        committed = [t for t in targets.tolist() if t not in work.new_kind]
        before = dict(zip(committed, nodes.docs_of(committed), strict=True))
        for node, unit_ids in supporters.items():
            is_new = node in work.new_kind
            if not unit_ids.size:
                if not is_new:
                    work.dead.add(node)
                else:  # created and unsupported in the same operation: never written
                    work.new_kind.pop(node)
                continue
            units = unit_ids.tolist()
            docs = cited[node]
            if kind == int(EdgeKind.UNIT_ENTITY):
                alive_entities.append(node)
                if is_new or docs != sorted(before[node]):
                    work.docs[node] = docs
                    if not is_new:
                        work.replaced.add(node)
                continue
            old_lines = [] if is_new else nodes.text_of([node])[0].split("\n")
            lines = _relation_lines(work, names.mentions, new, node, old_lines, units)
            text = "\n".join(lines)
            if is_new or docs != sorted(before[node]) or lines != old_lines:
                work.docs[node] = docs
                work.text[node] = text
                if not is_new:
                    work.replaced.add(node)
    # Attributes of dropped entities go with them.
    a_src, a_dst = work.committed_edges(int(EdgeKind.ENTITY_ATTRIBUTE))
    gone = contains(work.dead_array(), a_src)
    work.dead.update(int(a) for a in a_dst[gone])
    return np.asarray(sorted(alive_entities), dtype=np.int64)
