"""A read view of one committed version, for readers outside the engine (the server's node,
text and document routes, its metrics): every look-up of one request reads the version the
view was taken on, while writers commit newer ones.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphstrata.engine.component import DocNames
from graphstrata.engine.filters import Filter
from graphstrata.engine.ingest.spans import source_info
from graphstrata.engine.store import Snapshot
from graphstrata.engine.types import NodeKind


class PinnedVersion:
    """One committed version's nodes, edges and documents (``Engine.pinned``).

    Parameters
    ----------
    snapshot:
        The version.
    doc_names:
        Its document key -> ``doc_id`` mapping.
    """

    def __init__(self, snapshot: Snapshot, doc_names: DocNames):
        self._snapshot = snapshot
        self._doc_names = doc_names

    @property
    def version(self) -> int:
        """The committed version number."""
        return int(self._snapshot.version)

    # ------------------------------------------------------------------ nodes
    def is_live(self, node_id: int) -> bool:
        """Whether ``node_id`` is a live node of this version."""
        return bool(self._snapshot.nodes.contains([node_id])[0])

    def node(self, node_id: int) -> dict[str, Any]:
        """A live node's ``id``, ``kind`` letter, ``layer``, whole ``text`` and ``docs``."""
        nodes = self._snapshot.nodes
        row = int(nodes.rows([node_id])[0])
        return {
            "id": int(node_id),
            "kind": NodeKind(int(nodes.kind[row])).letter,
            "layer": int(nodes.layer[row]),
            "text": nodes.texts[row],
            "docs": self._doc_names(nodes.docs[row]),
        }

    def parent(self, node_id: int) -> int:
        """A live node's parent in the hierarchy (-1 for none)."""
        nodes = self._snapshot.nodes
        return int(nodes.parent[int(nodes.rows([node_id])[0])])

    def heaviest_edges(
        self, node_id: int, limit: int, kinds: Sequence[int] | None = None
    ) -> list[dict[str, Any]]:
        """The ``limit`` heaviest edges touching ``node_id`` (``src``, ``dst``, ``kind``,
        ``weight``), heaviest first, ties in storage order; only edges of ``kinds``
        (``EdgeKind`` values) when given."""
        edges = self._snapshot.edges
        src = edges.column("src").to_numpy()
        dst = edges.column("dst").to_numpy()
        kinds_of = edges.column("kind").to_numpy()
        mask = (src == node_id) | (dst == node_id)
        if kinds is not None:
            mask &= np.isin(kinds_of, np.asarray(kinds, dtype=kinds_of.dtype))
        touching = np.flatnonzero(mask)
        weights = edges.column("weight").to_numpy()
        touching = touching[np.argsort(-weights[touching], kind="stable")][:limit]
        return [
            {
                "src": int(src[e]),
                "dst": int(dst[e]),
                "kind": int(kinds_of[e]),
                "weight": round(float(weights[e]), 6),
            }
            for e in touching
        ]

    def find_nodes(self, text: str, kinds: Sequence[int], limit: int) -> list[int]:
        """Live nodes of ``kinds`` whose text contains ``text`` (case-insensitive): those equal
        to it first, then those starting with it, then the others; shorter texts first
        within each group, then by id.

        Parameters
        ----------
        text:
            What to look for (stripped; an empty string finds nothing).
        kinds:
            ``NodeKind`` values to search (entity names, element titles, ...).
        limit:
            The most ids returned.
        """
        needle = text.strip().casefold()
        if not needle:
            return []
        nodes = self._snapshot.nodes
        found: list[tuple[int, int, int]] = []
        for kind in kinds:
            ids = nodes.ids_of_kind(int(kind))
            for nid, row in zip(ids.tolist(), nodes.rows(ids).tolist(), strict=True):
                hay = nodes.texts[row].casefold()
                if needle in hay:
                    rank = 0 if hay == needle else 1 if hay.startswith(needle) else 2
                    found.append((rank, len(hay), int(nid)))
        return [nid for _, _, nid in sorted(found)[:limit]]

    def node_counts(self) -> dict[str, int]:
        """Live nodes per kind letter (kinds without nodes are left out)."""
        kinds, counts = np.unique(self._snapshot.nodes.kind, return_counts=True)
        return {NodeKind(int(k)).letter: int(c) for k, c in zip(kinds, counts, strict=True)}

    # ------------------------------------------------------------------ documents
    @property
    def document_count(self) -> int:
        """Documents in this version."""
        return int(self._snapshot.docs.num_rows)

    def documents(self) -> list[tuple[str, str]]:
        """Every document's ``(doc_id, title)``, in storage order (title ``""`` if none)."""
        docs = self._snapshot.docs
        ids = docs.column("doc_id").to_pylist()
        titles = docs.column("title").to_pylist()
        return [(d, t or "") for d, t in zip(ids, titles, strict=True)]

    def document(self, doc_id: str) -> dict[str, Any] | None:
        """A document's description (:meth:`document_page`'s items), or None when it is not
        in this version."""
        docs = self._snapshot.docs
        if not docs.num_rows:
            return None
        row = docs.filter(pc.equal(docs.column("doc_id"), doc_id))
        if not row.num_rows:
            return None
        return _described(row)[0]

    def document_page(
        self, offset: int, limit: int, query: str | None = None, flt: Filter | None = None
    ) -> dict[str, Any]:
        """One page of the documents, ordered by ``doc_id``.

        Parameters
        ----------
        offset, limit:
            The page: documents ``offset`` to ``offset + limit - 1`` of the ordered list.
        query:
            Keep only documents whose ``doc_id`` or title contains it (case-insensitive).
        flt:
            Keep only documents that pass this parsed metadata filter (``engine.filters``;
            evaluated by the version's ``DocRecords``, as the searches' filters are).

        Returns
        -------
        dict
            ``{"documents", "total", "offset", "limit"}``; each document is ``{"doc_id",
            "title", "metadata", "status": "committed", "chunks", "version", "source"}``
            (``source``: ``{"filename", "format", "pages"}`` of a file, else None).
        """
        docs = self._snapshot.docs
        keep: Any = None
        if flt is not None and docs.num_rows:
            # The version's DocRecords: its columns are built once, for searches and listings.
            keep = pa.array(self._doc_names.records.mask(flt))
        if query and docs.num_rows:
            found = pc.or_(
                pc.match_substring(docs.column("doc_id"), query, ignore_case=True),
                pc.match_substring(docs.column("title"), query, ignore_case=True),
            )
            keep = found if keep is None else pc.and_(keep, found)
        if keep is not None:
            docs = docs.filter(keep)
        total = int(docs.num_rows)
        page = docs.take(pc.sort_indices(docs, [("doc_id", "ascending")])[offset : offset + limit])
        return {
            "documents": _described(page) if page.num_rows else [],
            "total": total,
            "offset": offset,
            "limit": limit,
        }

    def document_text(self, doc_id: str) -> dict[str, Any] | None:
        """A document's ``title``, its chunks' texts in order (``chunks``) and their node ids
        (``chunk_ids``), or None when it is not in this version."""
        snap = self._snapshot
        docs = snap.docs
        ids = docs.column("doc_id").to_pylist()
        if doc_id not in ids:
            return None
        row = ids.index(doc_id)
        key = docs.column("key").to_pylist()[row]
        nodes = snap.nodes
        chunk_ids = nodes.ids_of_kind(int(NodeKind.T))
        chunk_rows = nodes.rows(chunk_ids)
        mine = [i for i, r in enumerate(chunk_rows) if key in nodes.docs[r]]
        return {
            "title": docs.column("title")[row].as_py() or "",
            "chunks": [nodes.texts[chunk_rows[i]] for i in mine],
            "chunk_ids": [int(chunk_ids[i]) for i in mine],
        }


def _described(rows: pa.Table) -> list[dict[str, Any]]:
    """Doc rows as the documents API describes them (``PinnedVersion.document_page``)."""
    columns = {
        name: rows.column(name).to_pylist()
        for name in ("doc_id", "title", "metadata", "n_chunks", "version", "layout")
    }
    return [
        {
            "doc_id": doc_id,
            "title": title or "",
            "metadata": json.loads(metadata) if metadata else {},
            "status": "committed",
            "chunks": int(chunks),
            "version": int(version),
            "source": source_info(layout),
        }
        for doc_id, title, metadata, chunks, version, layout in zip(*columns.values(), strict=True)
    ]
