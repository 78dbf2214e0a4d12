"""The name index of the ``graph`` search: entity and element-title names, document titles.

Exact entry points look the question's names up here (dict lookups, no scan). The index
holds node ids, not positions, so a commit advances it by the rows it changed
(:meth:`NameIndex.advanced`) instead of normalizing every name of the new version again
(issue 17); a test checks the advanced index equals a fresh one. Its mappings are
``LayeredDict``s, so a version copies the keys it changed, not every name: copying the
names, titles and doc titles took 8 ms of each write at 100k chunks under line_profiler
(43k names, 16k titles, 19k documents), and the title links' key intersection 3 ms.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from graphstrata.core import sets
from graphstrata.engine.heterograph.parse import normalize_name, title_key
from graphstrata.engine.heterograph.schema import N, O, T
from graphstrata.engine.layered import LayeredDict
from graphstrata.engine.policies import FoldPolicy, MaintenanceConfig
from graphstrata.engine.store import Delta, Snapshot
from graphstrata.engine.store.arrow_numpy import arrow_of, numpy_of
from graphstrata.engine.store.tables import doc_lists_flat

_EMPTY = np.zeros(0, np.int64)
_NAMED = np.asarray([N, O], np.uint8)


def _grouped(pairs: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for key, node in pairs:
        if key:
            out.setdefault(key, []).append(node)
    return out


def _titles_of(docs: pa.Table) -> dict[int, str]:
    """Doc key -> title key of the documents that have a title."""
    if not docs.num_rows or "title" not in docs.column_names:
        return {}
    keys = numpy_of(docs.column("key")).tolist()
    return {
        int(k): title_key(t)
        for k, t in zip(keys, docs.column("title").to_pylist(), strict=True)
        if t and title_key(t)
    }


def _chunk_titles(
    doc_lists: tuple[np.ndarray, np.ndarray], ids: np.ndarray, title_of: Mapping[int, str]
) -> dict[str, list[int]]:
    """Title key -> chunk ids, for chunks ``ids`` whose doc lists are ``doc_lists``
    (``(doc key, index into ids)``, as ``NodeTable.doc_lists_at`` gives them)."""
    if ids.size == 0 or not title_of:
        return {}
    flat, parent = doc_lists
    return _grouped((title_of.get(int(d), ""), int(ids[i])) for d, i in zip(flat, parent))


def _merge(
    index: LayeredDict[str, np.ndarray],
    removed: dict[str, list[int]],
    added: dict[str, list[int]],
    policy: FoldPolicy,
) -> LayeredDict[str, np.ndarray]:
    """``index`` with ids taken out of and put into the keys named (copy on write, folded
    by ``policy``)."""
    out = index.changed(policy)
    for key in set(removed) | set(added):
        ids = out.get(key, _EMPTY)
        if key in removed:
            ids = ids[~np.isin(ids, removed[key])]
        if key in added:
            ids = sets.union(ids, np.asarray(added[key], np.int64))
        if ids.size:
            out[key] = ids
        elif key in out:
            del out[key]
    return out


@dataclass(frozen=True)
class NameIndex:
    """One version's names.

    Attributes
    ----------
    names:
        Normalized name -> ids of the entities (N) and element titles (O) of that name.
    titles:
        Document title key -> ids of that document's chunks (T).
    title_of:
        Doc key -> title key, for the documents that have a title.
    shared:
        The keys of both ``names`` and ``titles`` (entities named like a document's
        title: the search links them to its chunks), kept by each version's change instead
        of intersecting every key per version.
    """

    names: LayeredDict[str, np.ndarray]
    titles: LayeredDict[str, np.ndarray]
    title_of: LayeredDict[int, str]
    shared: frozenset[str]

    @classmethod
    def build(cls, snapshot: Snapshot) -> NameIndex:
        """The names of every live node of ``snapshot``."""
        nodes = snapshot.nodes
        rows = np.flatnonzero(np.isin(nodes.kind, _NAMED))
        texts = nodes.texts_at(rows)
        names = _grouped((normalize_name(t), int(i)) for t, i in zip(texts, nodes.ids[rows]))
        title_of = _titles_of(snapshot.docs)
        chunks = np.flatnonzero(nodes.kind == np.uint8(T))
        titles = _chunk_titles(nodes.doc_lists_at(chunks), nodes.ids[chunks], title_of)
        return cls(
            LayeredDict(_arrays(names)),
            LayeredDict(_arrays(titles)),
            LayeredDict(title_of),
            frozenset(titles.keys() & names.keys()),
        )

    def advanced(
        self, previous: Snapshot, snapshot: Snapshot, delta: Delta, maintenance: MaintenanceConfig
    ) -> NameIndex:
        """This index (of ``previous``) moved to ``snapshot``, which ``delta`` committed.

        Rows the delta replaced or deleted leave under their old names; its live rows join
        under their new ones. The mappings fold by ``maintenance.layered_dict``.
        """
        fold = maintenance.layered_dict
        rows = delta.nodes
        row_ids = numpy_of(rows.column("id"))
        dead = delta.dead_nodes
        old = previous.nodes
        leaving = sets.union(dead, row_ids)
        leaving = leaving[old.contains(leaving)]
        old_rows = old.rows(leaving)
        old_kind = old.kind[old_rows]
        named = np.isin(old_kind, _NAMED)
        removed = _grouped(
            (normalize_name(t), int(i))
            for t, i in zip(old.texts_at(old_rows[named]), leaving[named])
        )
        live = ~np.isin(row_ids, dead)
        kinds = numpy_of(rows.column("kind"))
        new_named = np.flatnonzero(live & np.isin(kinds, _NAMED))
        new_texts = rows.column("text").take(arrow_of(new_named)).to_pylist()
        added = _grouped((normalize_name(t), int(i)) for t, i in zip(new_texts, row_ids[new_named]))
        title_of = self.title_of.changed(fold)
        for key in delta.dead_docs.tolist():
            if int(key) in title_of:
                del title_of[int(key)]
        title_of.update(_titles_of(delta.docs))
        gone_t = old_rows[old_kind == np.uint8(T)]
        removed_t = _chunk_titles(old.doc_lists_at(gone_t), old.ids[gone_t], self.title_of)
        new_t = np.flatnonzero(live & (kinds == np.uint8(T)))
        added_t = _chunk_titles(doc_lists_flat(rows, new_t), row_ids[new_t], title_of)
        names = _merge(self.names, removed, added, fold)
        titles = _merge(self.titles, removed_t, added_t, fold)
        keys = set(removed) | set(added) | set(removed_t) | set(added_t)
        both = {k for k in keys if k in names and k in titles}
        return NameIndex(names, titles, title_of, (self.shared - keys) | both)

    def positions(self, key: str, ids: np.ndarray) -> np.ndarray:
        """Dense positions (in the version's sorted ``ids``) of the nodes named ``key``."""
        found = [a for a in (self.names.get(key), self.titles.get(key)) if a is not None]
        if not found:
            return _EMPTY
        return np.searchsorted(ids, np.concatenate(found)).astype(np.int64)

    def __contains__(self, key: str) -> bool:
        return key in self.names or key in self.titles


def _arrays(groups: dict[str, list[int]]) -> dict[str, np.ndarray]:
    return {k: sets.unique(np.asarray(v, np.int64)) for k, v in groups.items()}
