"""What every ``graphstrata`` subcommand shares: errors, config loading, index opening,
``--params`` (progress lines: :mod:`.progress`; reports: :mod:`.reports`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphstrata.bindings.api import Index, IndexConfig


class CLIError(Exception):
    """A user-facing failure: printed as one line, exit code 1."""


def load_config(path: str | None, overrides: dict[str, Any]) -> IndexConfig:
    """IndexConfig from an optional JSON/TOML file plus command-line overrides.

    Parameters
    ----------
    path:
        A ``.toml`` or JSON file of ``IndexConfig`` fields, or None.
    overrides:
        Dotted field names (``"chunking.chunk_tokens"``) to values; ``None`` values are skipped.

    Returns
    -------
    IndexConfig
        The validated config.

    Raises
    ------
    CLIError
        When the file does not exist.
    """
    from graphstrata.bindings.api import IndexConfig

    data: dict[str, Any] = {}
    if path:
        p = Path(path)
        if not p.exists():
            raise CLIError(f"config file {p} not found")
        if p.suffix == ".toml":
            import tomllib

            data = tomllib.loads(p.read_text())
        else:
            data = json.loads(p.read_text())
    cfg = IndexConfig.from_dict(data)
    for dotted, value in overrides.items():
        if value is None:
            continue
        target: Any = cfg
        *parents, leaf = dotted.split(".")
        for name in parents:
            target = getattr(target, name)
        setattr(target, leaf, value)
    cfg.validate()
    return cfg


def open_index(args: argparse.Namespace, version: int | None = None) -> Index:
    """Open ``args.index`` with the command's backend options.

    Parameters
    ----------
    args:
        Parsed arguments with ``index`` and optionally ``embedder``, ``llm``, ``no_cache``.
    version:
        A pinned older version, or None for the newest.

    Returns
    -------
    Index
        The open index.
    """
    from graphstrata.bindings.api import Index

    return Index.open(
        args.index,
        embedder=getattr(args, "embedder", None),
        llm=getattr(args, "llm", None),
        version=version,
        use_cache=not getattr(args, "no_cache", False),
    )


class _HidePandas:
    """Import hook under which ``import pandas`` fails (see :func:`skip_pyarrow_pandas_probe`)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas hidden for pyarrow's probe")


def skip_pyarrow_pandas_probe() -> None:
    """Answer pyarrow's one-time "is pandas installed?" probe with no, without importing it.

    pyarrow imports pandas on its first ``pa.array`` or ``to_numpy`` of a process only to
    check whether inputs are pandas objects; a one-shot command never passes any, and the
    import costs 0.3 s of a cold ``graphstrata query`` (measured with ``python -X
    importtime``). pyarrow re-imports pandas when something really needs it
    (``Table.to_pandas``), so nothing is lost. Only for commands whose process graphstrata
    owns from start to end; a library user's process is left alone.
    """
    if "pandas" in sys.modules:
        return
    import numpy as np
    import pyarrow as pa

    hook = _HidePandas()
    sys.meta_path.insert(0, hook)
    try:
        pa.array(np.zeros(1, np.int8)).to_numpy()
    finally:
        sys.meta_path.remove(hook)


def parse_params(text: str | None) -> dict[str, Any]:
    """The ``--params`` JSON object (mode parameters; checked by the engine against the mode).

    Parameters
    ----------
    text:
        The option's value, or None.

    Returns
    -------
    dict
        Parameter names to values (empty without the option).

    Raises
    ------
    CLIError
        When the value is not a JSON object.
    """
    return json_object(text, "--params", '{"bias_share": 0.5}') or {}


def json_object(text: str | None, option: str, example: str) -> dict[str, Any] | None:
    """The JSON object an option gives (``--params``, ``--filter``), None without one.

    Raises
    ------
    CLIError
        When the value is not a JSON object (the message shows ``example``).
    """
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CLIError(f"{option} is not valid JSON ({exc.msg})") from exc
    if not isinstance(value, dict):
        raise CLIError(f"{option} must be a JSON object such as '{example}', got {text!r}")
    return value
