"""A copy-on-write mapping for read state that each version advances by a small change."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, MutableMapping
from typing import Generic, TypeVar

from graphstrata.engine.policies import FoldPolicy

__all__ = ["LayeredDict"]


class _Removed:
    """The mark of a key removed from the base (a value of its own: ``None`` may be one)."""


_REMOVED = _Removed()

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LayeredDict(MutableMapping[K, V], Generic[K, V]):
    """A mapping: a base dict shared with older versions and this version's changes.

    A version's mapping must not change under the readers of that version, and copying
    every entry per write is O(N) (a million chunk texts). ``changed`` gives the next
    version a mapping that shares the base and copies only the changes; once they reach
    the fold policy (``MaintenanceConfig.layered_dict``: a quarter of the base, at least
    4,096) they are folded into a new base, so a write costs O(its changes) amortized and
    a lookup at most two dict probes.

    Parameters
    ----------
    base:
        The initial entries (taken over, not copied).
    """

    __slots__ = ("_base", "_size", "_top")

    def __init__(self, base: dict[K, V] | None = None):
        self._base: dict[K, V] = {} if base is None else base
        self._top: dict[K, V | _Removed] = {}
        self._size = len(self._base)

    def __getitem__(self, key: K) -> V:
        if key in self._top:
            value = self._top[key]
            if isinstance(value, _Removed):
                raise KeyError(key)
            return value
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        if key in self._top:
            return not isinstance(self._top[key], _Removed)  # type: ignore[index]
        return key in self._base

    def __iter__(self) -> Iterator[K]:
        top = self._top
        yield from (k for k in self._base if k not in top)
        yield from (k for k, v in top.items() if not isinstance(v, _Removed))

    def __len__(self) -> int:
        return self._size

    def __setitem__(self, key: K, value: V) -> None:
        if key not in self:
            self._size += 1
        self._top[key] = value

    def __delitem__(self, key: K) -> None:
        if key not in self:
            raise KeyError(key)
        self._size -= 1
        self._top[key] = _REMOVED

    def changed(self, policy: FoldPolicy) -> LayeredDict[K, V]:
        """A mapping equal to this one that may be changed without changing this one (its
        changes folded into a new base when they reach ``policy``)."""
        out: LayeredDict[K, V] = LayeredDict.__new__(LayeredDict)
        if policy.should_fold(len(self._top), len(self._base)):
            out._base, out._top = dict(self.items()), {}
        else:
            out._base, out._top = self._base, dict(self._top)
        out._size = self._size
        return out
