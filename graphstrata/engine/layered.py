"""A copy-on-write mapping for read state that each version advances by a small change."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, MutableMapping
from typing import Generic, TypeVar

__all__ = ["LayeredDict"]


class _Removed:
    """The mark of a key removed from the base (a value of its own: ``None`` may be one)."""


_REMOVED = _Removed()

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: Changes kept on top of a shared base before ``changed`` folds them into a new base.
FOLD_MIN = 4096


class LayeredDict(MutableMapping[K, V], Generic[K, V]):
    """A mapping: a base dict shared with older versions and this version's changes.

    A version's mapping must not change under the readers of that version, and copying
    every entry per write is O(N) (a million chunk texts). ``changed`` gives the next
    version a mapping that shares the base and copies only the changes; once they number
    a quarter of the base (at least ``FOLD_MIN``) they are folded into a new base, so a
    write costs O(its changes) amortized and a lookup at most two dict probes.

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

    def changed(self) -> LayeredDict[K, V]:
        """A mapping equal to this one that may be changed without changing this one."""
        out: LayeredDict[K, V] = LayeredDict.__new__(LayeredDict)
        if len(self._top) >= max(FOLD_MIN, len(self._base) // 4):
            out._base, out._top = dict(self.items()), {}
        else:
            out._base, out._top = self._base, dict(self._top)
        out._size = self._size
        return out
