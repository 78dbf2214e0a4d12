"""One committed version of the index, fully loaded (docs/architecture.md, "Store")."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from graphstrata.engine.store.tables import NodeTable, VectorTable


@dataclass
class Snapshot:
    """One committed version of the index: tables in memory, vectors memory-mapped.

    A snapshot never changes; a later commit makes a new one, so readers holding this one
    keep a consistent view.
    """

    root: Path
    manifest: dict[str, Any]
    nodes: NodeTable
    edges: pa.Table
    docs: pa.Table
    vectors: VectorTable
    hyperplanes: np.ndarray
    state_arrays: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def version(self) -> int:
        """The committed version number (0 = empty index)."""
        return int(self.manifest["version"])

    @property
    def config(self) -> dict[str, Any]:
        """The ``IndexConfig`` recorded with this version, as a dict."""
        return self.manifest["config"]

    def state(self, component: str, name: str) -> np.ndarray | None:
        """A component's state array (``Delta.put_state``), or None if never stored."""
        return self.state_arrays.get(f"{component}/{name}")

    def component_meta(self, component: str) -> dict[str, Any]:
        """A copy of a component's manifest metadata (``Delta.set_component_meta``)."""
        return dict(self.manifest.get("components", {}).get(component, {}))
