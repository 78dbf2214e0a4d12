"""The one protocol of per-version state: ``advanced(snapshot, delta, maintenance)``.

Every structure the engine's state keeps from version to version (``engine.state``) is
advanced by each commit through it: a new object for the new version, folded by the
index's maintenance policies, the previous one left untouched for the readers still pinned
to its version.
"""

from __future__ import annotations

from typing import Protocol, TypeVar, runtime_checkable

from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.store import Delta, Snapshot

__all__ = ["Versioned"]

V = TypeVar("V", bound="Versioned")


@runtime_checkable
class Versioned(Protocol):
    """Per-version state advanced by each commit (copy on write: a new object)."""

    def advanced(self: V, snapshot: Snapshot, delta: Delta, maintenance: MaintenanceConfig) -> V:
        """This state moved to ``snapshot``, which ``delta`` committed on its version,
        folded by ``maintenance``'s policies; ``self`` is not changed."""
        ...
