"""Node and edge kinds shared by every table and pipeline."""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum

import numpy as np


class NodeKind(IntEnum):
    """Kinds of node (``nodes.kind``, uint8).

    T..O are NodeRAG's heterograph kinds; L is an EraRAG hierarchy summary (layer >= 1).
    """

    T = 1  # text chunk (layer 0 of the hierarchy too)
    S = 2  # semantic unit
    N = 3  # entity
    R = 4  # relationship
    A = 5  # attribute of an important entity
    H = 6  # high-level element of a community
    O = 7  # overview title of a high-level element  # noqa: E741
    L = 8  # layer summary of the hierarchy

    @property
    def letter(self) -> str:
        """The one-letter name users see (``"T"``, ``"L"``, ...)."""
        return self.name

    @property
    def words(self) -> str:
        """The kind in words, for reports (``"chunk"``, ``"semantic unit"``, ...)."""
        return _NODE_WORDS[self]


_NODE_WORDS = {
    NodeKind.T: "chunk",
    NodeKind.S: "semantic unit",
    NodeKind.N: "entity",
    NodeKind.R: "relationship",
    NodeKind.A: "attribute",
    NodeKind.H: "high-level element",
    NodeKind.O: "title",
    NodeKind.L: "summary",
}


#: Kinds that carry an embedding: T, S, A, H, L (docs/architecture.md, "Data model").
EMBEDDED_KINDS: tuple[NodeKind, ...] = (NodeKind.T, NodeKind.S, NodeKind.A, NodeKind.H, NodeKind.L)

#: Kinds whose text may be handed to a user or an LLM as context (NodeRAG keeps T, S, A, H, R).
RETRIEVABLE_KINDS: tuple[NodeKind, ...] = (
    NodeKind.T,
    NodeKind.S,
    NodeKind.A,
    NodeKind.H,
    NodeKind.R,
    NodeKind.L,
)


class EdgeKind(IntEnum):
    """Kinds of edge (``edges.kind``, uint8). Edges are undirected for search."""

    CHUNK_UNIT = 1  # T - S
    UNIT_ENTITY = 2  # S - N
    ENTITY_RELATION = 3  # N - R
    ENTITY_ATTRIBUTE = 4  # N - A
    ELEMENT_MEMBER = 5  # H - S/A/H
    ELEMENT_TITLE = 6  # H - O
    SEMANTIC = 7  # embedded node - embedded node (nearest neighbours)
    PARENT_CHILD = 8  # L - child (T or L)
    UNIT_RELATION = 9  # S - R

    @property
    def words(self) -> str:
        """The kind in words, for reports (``"chunk-unit"``, ``"semantic"``, ...)."""
        return self.name.lower().replace("_", "-")


def kind_table(kinds: Iterable[int]) -> np.ndarray:
    """bool ``[256]``, True at ``kinds``: ``table[node_kinds]`` tests a uint8 kind array
    against a few kinds (1.6 against ``np.isin``'s 15.7 us on 500 kinds, a one-off timing,
    not kept), and ``counts[table].sum()`` totals a per-kind count over those kinds."""
    table = np.zeros(256, np.bool_)
    table[np.asarray(list(kinds), np.int64)] = True
    return table
