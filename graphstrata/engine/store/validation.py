"""What a manifest must hold beyond its checksum: typed counters and ids ahead of the tables.

A manifest's checksum proves it was written whole, not that its writer was the store: a hand
edit with a recomputed checksum passes it (issue 51: ``next_node_id`` rewound below the
live ids made the next insert reuse them silently). :func:`check_manifest_fields` runs on
every manifest the store reads (a few dictionary lookups), :func:`check_next_ids` on every
load, against the tables just read (the largest live node id is the last of the sorted ids,
the largest document key one pass over the keys).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from graphstrata.engine.store.errors import CorruptIndexError
from graphstrata.engine.store.files import TABLES

__all__ = ["RECOVERY", "check_manifest_fields", "check_next_ids"]

#: How to get out of a bad manifest, for the messages.
RECOVERY = (
    "restore manifest.json from a backup or from the kept manifests/v*.json of an earlier "
    "version, or rebuild the index (`graphstrata index SOURCE --out INDEX --force`)"
)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_manifest_fields(path: Path, manifest: dict[str, Any]) -> None:
    """Raise ``CorruptIndexError`` unless the manifest's counters and sections are well typed.

    Parameters
    ----------
    path:
        The manifest file, for the message.
    manifest:
        Its content, checksum verified.

    Raises
    ------
    CorruptIndexError
        Naming every bad field: ``version``, ``next_node_id``, ``next_doc_key`` not ints
        >= 0; ``embedder`` without a name and a positive ``dim``; ``config``, ``hyperplanes``
        not mappings; ``segments`` without a list per table.
    """
    problems = [
        f"{key} is {manifest.get(key)!r}, not an integer >= 0"
        for key in ("version", "next_node_id", "next_doc_key")
        if not _count(manifest.get(key))
    ]
    embedder = manifest.get("embedder")
    if (
        not isinstance(embedder, dict)
        or not isinstance(embedder.get("name"), str)
        or not _count(embedder.get("dim"))
        or embedder["dim"] == 0
    ):
        problems.append(f"embedder is {embedder!r}, not {{'name': str, 'dim': int > 0}}")
    for key in ("config", "hyperplanes"):
        if not isinstance(manifest.get(key), dict):
            problems.append(f"{key} is not a mapping")
    segments = manifest.get("segments")
    if not isinstance(segments, dict) or any(not isinstance(segments.get(t), list) for t in TABLES):
        problems.append(f"segments does not list the segments of each of {', '.join(TABLES)}")
    if problems:
        raise CorruptIndexError(f"{path}: invalid manifest: {'; '.join(problems)}; {RECOVERY}")


def check_next_ids(
    root: Path, manifest: dict[str, Any], node_ids: np.ndarray, doc_keys: np.ndarray
) -> None:
    """Raise ``CorruptIndexError`` unless the manifest's next ids lie past every live one.

    Parameters
    ----------
    root:
        The index directory, for the message.
    manifest:
        The version loaded.
    node_ids:
        Its live node ids, ascending.
    doc_keys:
        Its live document keys (any order).
    """
    problems = []
    if node_ids.size and int(manifest["next_node_id"]) <= int(node_ids[-1]):
        problems.append(
            f"next_node_id {manifest['next_node_id']} is not past the live node id "
            f"{int(node_ids[-1])} (new nodes would reuse live ids)"
        )
    if doc_keys.size and int(manifest["next_doc_key"]) <= int(doc_keys.max()):
        problems.append(
            f"next_doc_key {manifest['next_doc_key']} is not past the live document key "
            f"{int(doc_keys.max())}"
        )
    if problems:
        raise CorruptIndexError(
            f"{root}: invalid manifest (version {manifest['version']}): "
            f"{'; '.join(problems)}; {RECOVERY}"
        )
