"""The nodes a metadata filter allows in one version, by one rule per kind.

A node whose text draws on several documents (a summary L, an attribute A, a high-level
element H, a relationship R) is allowed only when *every* document it cites matches, so no
text of a non-matching document is returned; a chunk T or a unit S has one document; an
entity N or a title O (names, never returned as text) is allowed when *any* document it
occurs in matches, so the graph walk passes through a shared entity from one matching
document to another (decision 0025). ``engine.filtered`` restricts the searches to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from graphstrata.engine.store import NodeTable
from graphstrata.engine.types import NodeKind

__all__ = ["ANY_DOC_KINDS", "Allowed", "DocNodes"]

#: Kinds allowed when any of their documents matches (names the walk passes through); every
#: other kind needs all its documents to match.
ANY_DOC_KINDS = (int(NodeKind.N), int(NodeKind.O))


class DocNodes:
    """doc key -> the node rows citing it, for one version's node table (built once, on the
    first filtered query of the version: one sort of every node's doc keys).

    Parameters
    ----------
    nodes:
        The version's live nodes.
    """

    def __init__(self, nodes: NodeTable):
        n = len(nodes)
        keys, parent = nodes.doc_lists_at(np.arange(n, dtype=np.int64))
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.rows = parent[order]
        #: Documents each node cites.
        self.cited = np.bincount(parent, minlength=n).astype(np.int64)

    def citing(self, doc_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ascending node rows citing some of ``doc_keys``, how many of them each cites)."""
        lo = np.searchsorted(self.keys, doc_keys, side="left")
        hi = np.searchsorted(self.keys, doc_keys, side="right")
        sizes = hi - lo
        total = int(sizes.sum())
        if total == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        # The concatenated ranges [lo, hi) without a Python loop.
        starts = np.repeat(lo - np.cumsum(sizes) + sizes, sizes)
        at = starts + np.arange(total)
        return np.unique(self.rows[at], return_counts=True)


class Allowed:
    """The nodes one filter allows in one version (module docstring).

    Parameters
    ----------
    nodes:
        The version's live nodes.
    doc_nodes:
        Its doc key -> node rows index.
    doc_keys:
        The ascending keys of the documents the filter keeps.
    exact_share:
        At most this share of the vectors searched allowed: they are scored exactly
        (``SearchConfig.filter_exact_share``).
    summary_docs_max:
        A summary citing this many documents cites a sample of those below it
        (``HierarchyConfig.summary_docs_max``, decision 0011; 0: no cap): it is never allowed,
        since the documents it leaves out may not match.
    """

    def __init__(
        self,
        nodes: NodeTable,
        doc_nodes: DocNodes,
        doc_keys: np.ndarray,
        exact_share: float,
        summary_docs_max: int = 0,
    ):
        self.doc_keys = doc_keys
        self.exact_share = float(exact_share)
        rows, counts = doc_nodes.citing(doc_keys)
        kinds = nodes.kind[rows]
        any_rule = np.isin(kinds, np.asarray(ANY_DOC_KINDS, np.uint8))
        keep = any_rule | (counts == doc_nodes.cited[rows])
        if summary_docs_max > 0:
            keep &= (kinds != np.uint8(NodeKind.L)) | (counts < summary_docs_max)
        #: Ascending positions (rows of the node table) of the allowed nodes.
        self.rows = rows[keep]
        self._kinds = kinds[keep]
        self._ids = nodes.ids[self.rows]
        self._n = len(nodes)
        self._by_kinds: dict[tuple[int, ...], np.ndarray] = {}
        self._mask: np.ndarray | None = None

    @property
    def documents(self) -> int:
        """How many documents the filter keeps."""
        return int(self.doc_keys.size)

    def ids(self, kinds: Sequence[int]) -> np.ndarray:
        """Ascending ids of the allowed nodes of ``kinds``."""
        key = tuple(sorted({int(k) for k in kinds}))
        found = self._by_kinds.get(key)
        if found is None:
            found = self._ids[np.isin(self._kinds, np.asarray(key, np.uint8))]
            self._by_kinds[key] = found
        return found

    def mask(self) -> np.ndarray:
        """bool per position of the node table: is the node allowed."""
        if self._mask is None:
            mask = np.zeros(self._n, bool)
            mask[self.rows] = True
            self._mask = mask
        return self._mask

    def report(self) -> dict[str, Any]:
        """What the query report says of the filter."""
        return {"documents": self.documents, "nodes": int(self.rows.size)}
