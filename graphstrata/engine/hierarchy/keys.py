"""``ItemKeys``: what each hierarchy item's stored vector hashes to, remembered by node id.

Every write re-partitions the layers it touches, and the partition reads the LSH code and
the tie-break projection of *every* item of such a layer (``core.partition.repartition``).
Recomputing them from the vectors copied every vector of layer 0 out of the store on each
insert (``VectorTable.get`` of all chunks: O(N), a million 384-d float32 rows are 1.5 GB; issue 17).

A chunk's or a summary's vector never changes under its id (a changed text is a new node,
and a re-summarized segment a new summary), so the keys of an id computed once stay right:
they are computed from the stored vectors on first need and kept for the next writes of the
same process. The codes are the ones the stored vectors hash to, as before; the tie-breaks
are float64 row by row (``tiebreaks``), so an item's value does not depend on the batch it
was computed in (tested against direct computation, and against a process that reopens
before every write).
"""

from __future__ import annotations

import numpy as np

from graphstrata.core import sets
from graphstrata.core.ids import contains, find_positions
from graphstrata.core.lsh import project_codes
from graphstrata.engine.store import VectorTable

__all__ = ["ItemKeys", "tiebreaks"]

#: Rows projected at a time by ``tiebreaks`` (a float64 copy of this many 384-d rows: 50 MB).
_BLOCK = 16384


def tiebreaks(matrix: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """float64 projection of each row of ``matrix`` on ``direction``.

    Row by row in float64, so that a row's value does not depend on the rows computed with
    it (a float32 matrix product rounds differently by batch size, and the keys of one item
    are computed in batches of different sizes over time).
    """
    d = np.asarray(direction, np.float64)
    out = np.empty(matrix.shape[0], np.float64)
    for a in range(0, matrix.shape[0], _BLOCK):
        out[a : a + _BLOCK] = (np.asarray(matrix[a : a + _BLOCK], np.float64) * d).sum(axis=1)
    return out


class ItemKeys:
    """LSH codes and tie-breaks of hierarchy items by node id, computed once per id.

    Parameters
    ----------
    hyperplanes:
        The index's LSH hyperplanes.
    direction:
        The tie-break direction (``update.tiebreak_direction``).
    """

    def __init__(self, hyperplanes: np.ndarray, direction: np.ndarray):
        self.hyperplanes = hyperplanes
        self.direction = direction
        self._ids = np.zeros(0, np.int64)  # ascending
        self._codes = np.zeros(0, np.uint64)
        self._ties = np.zeros(0, np.float64)

    def __len__(self) -> int:
        return int(self._ids.size)

    def matches(self, hyperplanes: np.ndarray, direction: np.ndarray) -> bool:
        """Whether these keys were computed with ``hyperplanes`` and ``direction``."""
        return np.array_equal(self.hyperplanes, hyperplanes) and np.array_equal(
            self.direction, direction
        )

    def of(self, ids: np.ndarray, vectors: VectorTable) -> tuple[np.ndarray, np.ndarray]:
        """``(codes uint64, tie-breaks float64)`` of ``ids``, from ``vectors`` where new.

        Parameters
        ----------
        ids:
            int64 node ids with a vector in ``vectors``.
        vectors:
            The vector table of the version being changed.

        Raises
        ------
        KeyError
            For a new id without a live vector.
        """
        ids = np.asarray(ids, np.int64)
        pos = find_positions(self._ids, ids)
        missing = sets.unique(ids[pos < 0])
        if missing.size:
            kept = True  # whether the known ids keep their positions
            if self._ids.size > 2 * len(vectors) + 4096:
                self._forget_dead(vectors.ids)  # deleted nodes' keys: dropped now and then
                kept = False
            matrix = vectors.get(missing)
            ties = tiebreaks(matrix, self.direction)
            kept = self._add(missing, project_codes(matrix, self.hyperplanes), ties) and kept
            if kept:  # only the new ones are looked up again
                new = pos < 0
                pos[new] = find_positions(self._ids, ids[new])
            else:
                pos = find_positions(self._ids, ids)
        return self._codes[pos], self._ties[pos]

    def _forget_dead(self, live: np.ndarray) -> None:
        keep = contains(np.sort(live), self._ids)
        self._ids, self._codes, self._ties = self._ids[keep], self._codes[keep], self._ties[keep]

    def _add(self, ids: np.ndarray, codes: np.ndarray, ties: np.ndarray) -> bool:
        """Remember the keys of ``ids`` (ascending, none known yet); True when they were
        appended (the known ids keep their positions)."""
        if not self._ids.size or ids[0] > self._ids[-1]:
            # New nodes have the newest ids: appended, no sort of every known id.
            self._ids = np.concatenate([self._ids, ids])
            self._codes = np.concatenate([self._codes, codes.astype(np.uint64)])
            self._ties = np.concatenate([self._ties, ties])
            return True
        all_ids = np.concatenate([self._ids, ids])
        order = np.argsort(all_ids, kind="stable")
        self._ids = all_ids[order]
        self._codes = np.concatenate([self._codes, codes.astype(np.uint64)])[order]
        self._ties = np.concatenate([self._ties, ties])[order]
        return False
