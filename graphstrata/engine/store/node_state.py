"""Per-node state kept as a base plus patches, so that a commit writes what changed.

A component's per-node state (a Leiden label, an element group, a K-means cluster per node)
is a mapping ``node id -> int``. Written whole, one insert into a 10k-chunk index rewrote
~1 MB of such arrays for a change of a few hundred nodes (issue 17). Here a version's mapping
is a *base* file followed by *patches*: each file is one ``int64[3, k]`` array of rows
``(id, value, removed)``, applied in order, the last row of an id winning. A commit writes
the rows that differ from the previous version; when the patches hold as many rows as the
mapping, or there are 128 of them (``MaintenanceConfig.node_state_rows``,
``node_state_patches``), it writes a new base instead (so reading stays within ~2x the
mapping and a chain never grows without bound). A base is the whole mapping (the write
that took new bases at 100k chunks wrote 36 MB), so the patch count sets its amortized
share of a write's bytes; at 32 patches it was as large as the write itself (issue 17).
Opening reads the chain, and ``compact`` collapses it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from graphstrata.core.sets import mapping_changes
from graphstrata.engine.policies import MaintenanceConfig

NodeState = tuple[np.ndarray, np.ndarray]


def as_rows(ids: np.ndarray, values: np.ndarray, removed: np.ndarray | None = None) -> np.ndarray:
    """``int64[3, k]`` rows ``(id, value, removed)`` of a base or patch file."""
    ids = np.asarray(ids, np.int64)
    flags = np.zeros(ids.size, np.int64) if removed is None else np.asarray(removed, np.int64)
    return np.stack([ids, np.asarray(values, np.int64), flags])


def normalize(ids: np.ndarray, values: np.ndarray) -> NodeState:
    """``(ids, values)`` sorted by id, as int64.

    Raises
    ------
    ValueError
        On arrays of different lengths or a repeated id.
    """
    ids = np.asarray(ids, np.int64)
    values = np.asarray(values, np.int64)
    if ids.shape != values.shape or ids.ndim != 1:
        raise ValueError(f"node state needs one value per id, got {ids.shape} and {values.shape}")
    if ids.size > 1 and bool((ids[1:] > ids[:-1]).all()):
        return ids, values  # already sorted and distinct (a G2 mapping always is)
    order = np.argsort(ids, kind="stable")
    ids, values = ids[order], values[order]
    if ids.size > 1 and bool((ids[1:] == ids[:-1]).any()):
        raise ValueError("node state has a repeated id")
    return ids, values


#: What changed between a mapping and the previous one, where the writer knows it: a bool
#: per id of the new mapping (new, or another value), the previous ids it no longer holds,
#: and how many of its ids the previous one lacks.
Changes = tuple[np.ndarray, np.ndarray, int]


def patch(new: NodeState, previous: NodeState | None, changes: Changes | None = None) -> np.ndarray:
    """The rows that turn ``previous`` into ``new`` (both sorted by id).

    Parameters
    ----------
    new, previous:
        The mappings.
    changes:
        What changed, when the caller knows it (the heterograph's partition and groups,
        from the G2 it keeps across writes): the merge of the two id lists is skipped
        (~1.2 ms per mapping of 532k ids at 100k chunks, issue 17). It must be what the
        merge would find; where the counts show the previous mapping holds other ids than
        the caller assumed (a mapping written by an older version), the merge is made.

    Returns
    -------
    np.ndarray
        ``int64[3, k]``: ids that are new or changed value, then ids that left (removed).
    """
    ids, values = new
    if previous is None or previous[0].size == 0:
        return as_rows(ids, values)
    known = changes is not None and previous[0].size - len(changes[1]) + changes[2] == ids.size
    if changes is not None and known:
        changed, gone = np.asarray(changes[0], bool), np.asarray(changes[1], np.int64)
    else:
        pids, pvals = previous
        # One merge of the sorted ids: a binary search per id and an isin took 10 ms per
        # mapping at 100k chunks, six mappings per heterograph write (issue 17).
        changed, gone_mask = mapping_changes(ids, values, pids, pvals)
        gone = pids[gone_mask]
    return np.concatenate(
        [
            as_rows(ids[changed], values[changed]),
            as_rows(gone, np.zeros(gone.size), np.ones(gone.size)),
        ],
        axis=1,
    )


def apply_rows(parts: list[np.ndarray]) -> NodeState:
    """The mapping a base and its patches describe, sorted by id.

    Parameters
    ----------
    parts:
        ``int64[3, k]`` arrays, base first.
    """
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows = np.concatenate(parts, axis=1)
    # The last row of each id wins: unique over the reversed rows finds it first.
    ids_rev = rows[0, ::-1]
    uniq, first = np.unique(ids_rev, return_index=True)
    last = rows.shape[1] - 1 - first
    keep = rows[2, last] == 0
    return uniq[keep], rows[1, last[keep]]


def needs_new_base(
    patch_rows: list[int], new_rows: int, mapping_rows: int, policy: MaintenanceConfig
) -> bool:
    """Write a new base instead of the patch ``new_rows`` long?

    Parameters
    ----------
    patch_rows:
        Rows of the patches already in the chain (the base excluded).
    new_rows:
        Rows of the patch this commit would add.
    mapping_rows:
        Rows of the whole new mapping (what a base would hold).
    policy:
        Its ``node_state_patches`` and ``node_state_rows``.
    """
    return policy.node_state_patches.should_fold(len(patch_rows)) or (
        policy.node_state_rows.should_fold(sum(patch_rows) + new_rows, mapping_rows)
    )


def extend_chain(
    chain: list[dict[str, Any]],
    mapping: NodeState,
    rows: np.ndarray,
    write: Callable[[np.ndarray, int], dict[str, Any]],
    policy: MaintenanceConfig,
) -> list[dict[str, Any]]:
    """The manifest chain of one key after a commit.

    Parameters
    ----------
    chain:
        The committed chain (base entry first; empty: none yet).
    mapping, rows:
        The new version's whole mapping and its patch (:func:`patch`).
    write:
        Writes ``(array, rows)`` to a new file and returns its manifest entry.
    policy:
        When a new base is written instead of a patch (:func:`needs_new_base`).

    Returns
    -------
    list
        ``chain`` itself when nothing changed, else a new list ending with the written
        patch, or holding only a new base.
    """
    if rows.shape[1] == 0 and chain:
        return chain
    ids, values = mapping
    patches = [int(e["rows"]) for e in chain[1:]]
    if not chain or needs_new_base(patches, rows.shape[1], ids.size, policy):
        return [write(as_rows(ids, values), int(ids.size))]
    return [*chain, write(rows, int(rows.shape[1]))]


def commit_chains(
    chains: dict[str, list[dict[str, Any]]],
    pending: dict[str, tuple[NodeState, np.ndarray]],
    write: Callable[[str, np.ndarray, int], dict[str, Any]],
    policy: MaintenanceConfig,
) -> dict[str, list[dict[str, Any]]]:
    """Every key's chain after a commit (:func:`extend_chain` for the keys in ``pending``,
    new bases by ``policy``).

    ``write(key, array, rows)`` writes one file and returns its manifest entry.
    """
    out = {k: list(v) for k, v in chains.items()}
    for key, (mapping, rows) in pending.items():

        def write_key(array: np.ndarray, n: int, key: str = key) -> dict[str, Any]:
            return write(key, array, n)

        out[key] = extend_chain(out.get(key, []), mapping, rows, write_key, policy)
    return out


def collapsed(
    mappings: dict[str, NodeState], contains: Callable[[np.ndarray], np.ndarray]
) -> dict[str, tuple[NodeState, np.ndarray]]:
    """Each mapping without the ids ``contains`` says are gone, as :func:`commit_chains`'
    pending changes of chains that start anew (``compact``: one base per key). Keys below 0
    are a component's own (not node ids) and stay."""
    out = {}
    for key, (ids, values) in mappings.items():
        live = (ids < 0) | contains(ids)
        mapping = (ids[live], values[live])
        out[key] = (mapping, as_rows(*mapping))
    return out
