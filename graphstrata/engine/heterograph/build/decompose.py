"""Stage 1, decomposition: new chunks (T) → semantic units (S), entities (N), relationships (R).

One LLM batch for every new chunk, plus one retry batch for unusable answers. Entities merge
on :func:`~graphstrata.engine.heterograph.parse.normalize_name`; relationships on their
(unordered) endpoint pair, the node text keeping one line ``"A — relation — B"`` per
distinct relation (docs/architecture.md, "Heterograph"). Deleted chunks take their S with
them (:func:`units_of_removed_chunks`); what happens to the N and R they mentioned is
decided by :mod:`~graphstrata.engine.heterograph.build.settle`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from graphstrata.core import sets
from graphstrata.engine.component import ChangeSet, MeteredLLM
from graphstrata.engine.hashing import stable_hash
from graphstrata.engine.heterograph.build.lookups import (
    EntityKeys,
    MentionRows,
    MentionTable,
    RelationPairs,
)
from graphstrata.engine.heterograph.state.names import NameIndex
from graphstrata.engine.heterograph.parse import (
    Unit,
    normalize_name,
    parse_decomposition,
)
from graphstrata.engine.heterograph.schema import (
    NAME,
    ST_MENTION_HASH,
    ST_MENTION_LINE,
    ST_MENTION_R,
    ST_MENTION_S,
    ST_MENTION_UNIT,
    N,
    R,
    S,
)
from graphstrata.engine.heterograph.build.work import EMPTY, Work
from graphstrata.engine.prompts import decompose_request
from graphstrata.engine.types import EdgeKind

#: New relationships' mentions: ``(unit id, line hash)`` per assertion.
Mentions = dict[int, MentionRows]


def relation_line(source: str, relation: str, target: str) -> str:
    """The text of one relation inside a relationship node."""
    return f"{source} — {relation} — {target}" if relation else f"{source} — {target}"


@dataclass
class Names:
    """Entities and relationships by what they merge on, and who asserted which line.

    Attributes
    ----------
    entity_by_key:
        Normalized entity name -> entity id (committed and new).
    relation_by_pair:
        Sorted endpoint pair -> relationship id (committed and new).
    mentions:
        Relationship id -> ``(unit, line hash)`` of its committed multi-line relationships
        (:data:`~graphstrata.engine.heterograph.schema.ST_MENTION_UNIT`); updated by
        :func:`~graphstrata.engine.heterograph.build.settle.settle` and written back at the end.
    display:
        Entity id -> the name used in relation lines and attribute prompts (cache).
    """

    entity_by_key: EntityKeys
    relation_by_pair: RelationPairs
    mentions: MentionTable
    display: dict[int, str] = field(default_factory=dict)

    def name_of(self, work: Work, nid: int) -> str:
        """The display name of entity ``nid``."""
        return self.names_of(work, [nid])[0]

    def names_of(self, work: Work, ids: Sequence[int]) -> list[str]:
        """The display names of entities ``ids`` (those not cached read in one lookup)."""
        missing = [i for i in dict.fromkeys(ids) if i not in self.display]
        if missing:
            self.display.update(zip(missing, work.text_of(missing), strict=True))
        return [self.display[i] for i in ids]


@dataclass
class NewUnits:
    """What :func:`add_units` added.

    Attributes
    ----------
    ids:
        The new S ids, in chunk order.
    mentions:
        Relationship id -> ``(new unit, line hash)`` of every relation the new units assert.
    lines:
        Relationship id -> the distinct new lines, in order of appearance.
    """

    ids: np.ndarray
    mentions: Mentions
    lines: dict[int, list[str]]


def load_names(work: Work, index: NameIndex | None = None) -> Names:
    """What new entities and relationships merge into, and the committed mentions.

    Parameters
    ----------
    work:
        The operation (its committed snapshot).
    index:
        The committed version's name index (the ``graph`` view's, advanced per commit);
        None normalizes every entity name of the snapshot instead.
    """
    nodes = work.nodes
    if index is not None:
        entities = EntityKeys.of_names(index, nodes)
    else:
        n_ids = nodes.ids_of_kind(N)
        keys = (normalize_name(t) for t in nodes.text_of(n_ids))
        entities = EntityKeys.of_pairs(zip(keys, n_ids.tolist(), strict=True))
    kind = int(EdgeKind.ENTITY_RELATION)
    relations = RelationPairs(lambda ids, end: work.snap_edges.at(kind, ids, end))
    units = work.snapshot.node_state(NAME, ST_MENTION_UNIT)
    lines = work.snapshot.node_state(NAME, ST_MENTION_LINE)
    if units is not None and lines is not None:
        return Names(entities, relations, MentionTable.of_keys(units[0], units[1], lines[1]))
    s, r_ids, h = (  # written before the mention mappings
        work.state(ST_MENTION_S),
        work.state(ST_MENTION_R),
        work.state(ST_MENTION_HASH),
    )
    if s is None or r_ids is None or h is None:
        s = r_ids = h = EMPTY
    return Names(entities, relations, MentionTable(s, r_ids, h))


def units_of_removed_chunks(work: Work, removed_chunk_ids: np.ndarray) -> np.ndarray:
    """The committed S of the removed chunks (sorted), marked dead in ``work``."""
    if removed_chunk_ids.size == 0:
        return EMPTY
    units = sets.unique(work.snap_edges.at(int(EdgeKind.CHUNK_UNIT), removed_chunk_ids, end=0)[1])
    work.dead.update(int(i) for i in units)
    return units


def decompose(
    llm: MeteredLLM, texts: list[str], chunk_ids: np.ndarray, max_tokens: int
) -> tuple[list[list[Unit] | None], list[str]]:
    """Semantic units of each new chunk: one LLM batch, one retry batch for unusable answers.

    Parameters
    ----------
    llm:
        Stages ``decompose`` and ``decompose_retry``.
    texts, chunk_ids:
        The new chunks (ids only name the skipped ones in the note).
    max_tokens:
        Completion budget of one answer.

    Returns
    -------
    units:
        Per chunk, its units, or ``None`` when both answers were unusable.
    notes:
        For the report: how many answers were retried and skipped.
    """
    if not texts:
        return [], []
    answers = llm.complete("decompose", [decompose_request(t, max_tokens) for t in texts])
    final = [a.text for a in answers]
    units = [parse_decomposition(a) for a in final]
    retry = [i for i, u in enumerate(units) if u is None]
    notes: list[str] = []
    if retry:
        again = llm.complete(
            "decompose_retry", [decompose_request(texts[i], max_tokens) for i in retry]
        )
        for i, answer in zip(retry, again, strict=True):
            final[i] = answer.text
            units[i] = parse_decomposition(answer.text)
        skipped = [i for i in retry if units[i] is None]
        notes.append(
            f"{len(retry)} chunk decompositions unusable, retried; {len(skipped)} skipped"
            + (f" (chunk ids {chunk_ids[skipped][:10].tolist()})" if skipped else "")
        )
    # The yield is entities per chunk: units without an entity add nothing to the graph.
    entities = [sum(len(u.entities) for u in us or ()) for us in units]
    llm.record_yield("decompose", entities, final, [us is not None for us in units])
    return units, notes


def _entity(work: Work, names: Names, name: str) -> int | None:
    """The entity ``name`` merges into, created when new (``None`` for an empty key)."""
    key = normalize_name(name)
    if not key:
        return None
    nid = names.entity_by_key.get(key)
    if nid is None:
        nid = work.new_ids(1)[0]
        names.entity_by_key[key] = nid
        work.new_kind[nid] = N
        work.text[nid] = name
    return nid


def _relation(work: Work, names: Names, a: int, b: int) -> int:
    """The relationship between entities ``a`` and ``b``, created (with N→R edges) when new."""
    pair = (min(a, b), max(a, b))
    rid = names.relation_by_pair.get(pair)
    if rid is None:
        rid = work.new_ids(1)[0]
        names.relation_by_pair[pair] = rid
        work.new_kind[rid] = R
        work.edges.add(int(EdgeKind.ENTITY_RELATION), pair, [rid, rid])
    return rid


def add_units(
    work: Work, names: Names, change: ChangeSet, decomposed: list[list[Unit] | None]
) -> NewUnits:
    """New S nodes with their T–S, S–N, S–R edges; N and R created or reused.

    Parameters
    ----------
    work:
        Receives the new S, N, R nodes and edges.
    names:
        Entities and relationships to merge into (new ones are added).
    change:
        The new chunks' ids and doc keys (a unit cites its chunk's document).
    decomposed:
        :func:`decompose`'s units, one entry per new chunk.
    """
    n_units = sum(len(u) for u in decomposed if u)
    unit_ids = work.new_ids(n_units)
    # The committed entities the new relationships name: their relationships are what a
    # new one may merge into (one selection, not one per pair).
    endpoints = {
        normalize_name(name)
        for units in decomposed
        for unit in units or ()
        for source, _relation, target in unit.relationships
        for name in (source, target)
    }
    committed = (names.entity_by_key.get(key) for key in endpoints if key)
    names.relation_by_pair.prefetch(e for e in committed if e is not None)
    new_mentions: Mentions = {}
    new_lines: dict[int, list[str]] = {}
    pos = 0
    t_src: list[int] = []
    s_dst: list[int] = []
    sn_s: list[int] = []
    sn_n: list[int] = []
    sr_s: list[int] = []
    sr_r: list[int] = []
    chunks = zip(
        change.added_chunk_ids.tolist(), change.added_chunk_docs.tolist(), decomposed, strict=True
    )
    for chunk, doc, units in chunks:
        for unit in units or ():
            sid = unit_ids[pos]
            pos += 1
            work.new_kind[sid] = S
            work.text[sid] = unit.text
            work.docs[sid] = [int(doc)]
            t_src.append(chunk)
            s_dst.append(sid)
            entities: dict[int, None] = {}
            for name in unit.entities:
                nid = _entity(work, names, name)
                if nid is not None:
                    entities[nid] = None
            relations: dict[int, None] = {}
            for source, relation, target in unit.relationships:
                a, b = _entity(work, names, source), _entity(work, names, target)
                if a is None or b is None or a == b:
                    continue
                entities[a] = entities[b] = None
                rid = _relation(work, names, a, b)
                relations[rid] = None
                line = relation_line(names.name_of(work, a), relation, names.name_of(work, b))
                new_mentions.setdefault(rid, []).append((sid, stable_hash(line)))
                lines = new_lines.setdefault(rid, [])
                if line not in lines:
                    lines.append(line)
            sn_s += [sid] * len(entities)
            sn_n += list(entities)
            sr_s += [sid] * len(relations)
            sr_r += list(relations)
    work.edges.add(int(EdgeKind.CHUNK_UNIT), t_src, s_dst)
    work.edges.add(int(EdgeKind.UNIT_ENTITY), sn_s, sn_n)
    work.edges.add(int(EdgeKind.UNIT_RELATION), sr_s, sr_r)
    return NewUnits(np.asarray(unit_ids, dtype=np.int64), new_mentions, new_lines)
