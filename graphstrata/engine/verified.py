"""What the engine checks in an index before trusting it (issue 51).

* The configuration a manifest records (:func:`recorded_config`): typed and in range by the
  config's own validation, on every open. A hand edit with a recomputed checksum passes the
  manifest's seal; ``chunk_tokens: 0`` then made every insert loop forever.
* Every file of the version, before an operation rewrites the index's data
  (:func:`verified_snapshot`): a bad segment stops it with nothing written; a bad cache file
  is rebuilt from the segments, with a warning naming it.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from graphstrata.engine.config import ConfigError, IndexConfig
from graphstrata.engine.store import CorruptIndexError, Snapshot, Store
from graphstrata.engine.store.integrity import verify_for_rewrite
from graphstrata.engine.store.validation import RECOVERY

__all__ = ["recorded_config", "verified_snapshot"]

log = logging.getLogger(__name__)


def _check_types(config: Any, defaults: Any, where: str) -> None:
    """Each setting has the type of its default (an int where a float is expected is fine)."""
    for f in dataclasses.fields(config):
        value, default = getattr(config, f.name), getattr(defaults, f.name)
        name = f"{where}.{f.name}" if where else f.name
        if dataclasses.is_dataclass(default):
            _check_types(value, default, name)
            continue
        if default is None or isinstance(default, (list, tuple, dict)):
            continue  # optional or structured settings: their own validation checks them
        expected: tuple[type, ...] = (int, float) if type(default) is float else (type(default),)
        if not isinstance(value, expected) or isinstance(value, bool) != isinstance(default, bool):
            raise ConfigError(
                f"{name} is {value!r}, not of type {type(default).__name__} like its default"
            )


def recorded_config(store: Store) -> IndexConfig:
    """The configuration ``store``'s manifest records, checked as ``Engine.create`` checks one.

    Parameters
    ----------
    store:
        The opened store.

    Raises
    ------
    CorruptIndexError
        When the recorded configuration has unknown keys, ill-typed or out-of-range values
        (naming the setting and the manifest).
    """
    try:
        config = IndexConfig.from_dict(store.manifest["config"])
        _check_types(config, IndexConfig(), "")
        config.validate()
    except (ConfigError, TypeError, ValueError) as exc:
        raise CorruptIndexError(
            f"{store.root}: the manifest of version {store.version} records an invalid "
            f"configuration ({exc}); {RECOVERY}"
        ) from exc
    return config


def verified_snapshot(store: Store, snapshot: Snapshot, operation: str) -> Snapshot | None:
    """Hash every file of ``snapshot``'s version before ``operation`` rewrites its data.

    Parameters
    ----------
    store:
        The store, inside its writer lock, at ``snapshot``'s version.
    snapshot:
        The version the operation reads.
    operation:
        ``"compact"`` or ``"maintain"``, for the messages.

    Returns
    -------
    Snapshot or None
        None when every file is intact; when only cache files failed their checksum, a copy
        of ``snapshot`` whose manifest records none of those caches (the caller loads its
        state from it: the caches are rebuilt from the segments and written anew).

    Raises
    ------
    CorruptIndexError
        A segment or state file is bad (``engine.store.integrity.verify_for_rewrite``).
    """
    bad = verify_for_rewrite(store.root, store.manifest, operation)
    if not bad:
        return None
    for name, files in bad.items():
        log.warning(
            "%s: %s %s failed its checksum; rebuilding the %s from the segments before %s",
            store.root,
            name.replace("_", " "),
            ", ".join(files),
            name.replace("_", " "),
            operation,
        )
    manifest = {**snapshot.manifest, **dict.fromkeys(bad)}
    return dataclasses.replace(snapshot, manifest=manifest)
