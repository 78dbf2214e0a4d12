"""What every ``graphstrata`` subcommand shares: errors, backend options, index opening,
progress bars, reports and ``--params``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphstrata.bindings.api import Index
    from graphstrata.engine.config import IndexConfig


class CLIError(Exception):
    """A user-facing failure: printed as one line, exit code 1."""


def add_backend_args(p: argparse.ArgumentParser) -> None:
    """Add ``--llm``, ``--embedder`` and ``--no-cache`` to a subcommand.

    Parameters
    ----------
    p:
        The subcommand's parser.
    """
    p.add_argument(
        "--llm",
        help="LLM backend spec (default: env GRAPHSTRATA_LLM, else the index's, else extractive)",
    )
    p.add_argument(
        "--embedder",
        help="embedder spec (default: env GRAPHSTRATA_EMBEDDER, else the index's, else "
        "minilm-onnx; an existing index only opens with an embedder compatible with its own)",
    )
    p.add_argument("--no-cache", action="store_true", help="bypass the LLM response cache")


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
    from graphstrata.engine.config import IndexConfig

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
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CLIError(f"--params is not valid JSON ({exc.msg})") from exc
    if not isinstance(value, dict):
        raise CLIError(
            f"--params must be a JSON object such as '{{\"bias_share\": 0.5}}', got {text!r}"
        )
    return value


class Progress:
    """tqdm bars on stderr, one per stage, shown only for work that lasts over a second.

    Parameters
    ----------
    enabled:
        Show bars (only on a terminal, unless ``GRAPHSTRATA_PROGRESS=1``).
    """

    def __init__(self, enabled: bool):
        self.enabled = (enabled and sys.stderr.isatty()) or os.environ.get(
            "GRAPHSTRATA_PROGRESS"
        ) == "1"
        self.bars: dict[str, Any] = {}
        self.started: dict[str, float] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        """Report ``done`` of ``total`` for ``stage``."""
        if not self.enabled:
            return
        from tqdm import tqdm

        now = time.monotonic()
        self.started.setdefault(stage, now)
        bar = self.bars.get(stage)
        if bar is None:
            if now - self.started[stage] < 1.0 and done < total:
                return
            bar = self.bars[stage] = tqdm(total=total, desc=stage, file=sys.stderr, leave=False)
        bar.total = total
        bar.n = done
        bar.refresh()
        if done >= total:
            bar.close()

    def close(self) -> None:
        """Close every bar."""
        for bar in self.bars.values():
            bar.close()


def print_report(report: dict[str, Any], as_json: bool) -> None:
    """Print an operation report: aligned key/value lines, or JSON.

    Parameters
    ----------
    report:
        ``OperationReport.to_dict()`` (or any report dict).
    as_json:
        Print the whole report as JSON instead.
    """
    if as_json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
        return
    keys = [
        "operation", "version", "docs_added", "docs_updated", "docs_unchanged", "docs_deleted",
        "chunks_added", "chunks_removed", "chunks_embedded", "nodes_added", "nodes_removed", "edges_added",
        "llm_calls", "llm_cached", "prompt_tokens", "completion_tokens", "embedded", "bytes_written", "seconds",
    ]  # fmt: skip
    width = max(len(k) for k in keys)
    for k in keys:
        if k in report:
            print(f"{k:<{width}}  {report[k]}")
    if report.get("stages"):
        stages = ", ".join(
            f"{k} {v:.2f}s" for k, v in sorted(report["stages"].items(), key=lambda kv: -kv[1])
        )
        print(f"{'stages':<{width}}  {stages}")
    for note in report.get("notes", []):
        print(f"{'note':<{width}}  {note}")


def add_threads_arg(p: argparse.ArgumentParser) -> None:
    """Add ``--threads N|default``: the process's thread budget
    (:mod:`graphstrata.bindings.threads`; default: env ``GRAPHSTRATA_THREADS``, else the CPU
    affinity).

    Parameters
    ----------
    p:
        The subcommand's parser.
    """
    p.add_argument(
        "--threads",
        type=_threads_value,
        default=None,
        metavar="N",
        help="cores the process's thread pools share (BLAS, Numba, ONNX Runtime, torch): a "
        "number, or 'default' to leave each library at its own (default: env "
        "GRAPHSTRATA_THREADS, else the CPU affinity)",
    )


def _threads_value(value: str) -> int | str:
    from graphstrata.bindings.threads import parse_override

    try:
        parsed = parse_override(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    if parsed is None:
        raise argparse.ArgumentTypeError("expected a number >= 1 or 'default'")
    return parsed
