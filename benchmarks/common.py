"""What every benchmark script shares: where things are, the machine stamp, the report writers.

Run the scripts as modules from the repository root (``python -m benchmarks.scale.scale run
...``): the repository root is then on ``sys.path``, so a script imports its siblings and this
module as ``benchmarks.*`` with no path changes. Importing this module also keeps the model
hubs offline (nothing is downloaded at run time) and the tokenizers single-threaded in forked
children.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

#: The repository root.
REPO = Path(__file__).resolve().parents[1]
#: Every script's tables and JSON (file names kept across the move into families).
RESULTS = REPO / "benchmarks" / "results"
#: The shared data sets (MultiHop-RAG, HotpotQA), beside the repository; absent = skip.
DATA = REPO.parent / "shared" / "data"
#: Indexes the retrieval benchmark builds and the service benchmarks reuse.
INDEX_ROOT = REPO / "build" / "bench-indexes"


def log(message: str) -> None:
    """One progress line on stderr, with the wall-clock time."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def load_average() -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages (NaN where the platform has none).

    The house rule: every table says how busy the shared cores were while it was measured.
    """
    try:
        return os.getloadavg()
    except OSError:
        return (math.nan, math.nan, math.nan)


def load1(digits: int = 2) -> float:
    """The 1-minute load average, rounded to ``digits``."""
    return round(load_average()[0], digits)


def load_text(digits: int = 2, sep: str = " ") -> str:
    """The three load averages as text (``"1.20 0.90 0.75"``)."""
    return sep.join(f"{x:.{digits}f}" for x in load_average())


def machine() -> str:
    """Architecture, core count and Python version, for a report's header."""
    return f"{platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}"


def commit() -> str:
    """The checkout's short commit hash (empty outside a git checkout)."""
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip()


def command_line(module: str, argv: Sequence[str] | None = None) -> str:
    """The command that reproduces this run, as a report cites it.

    Parameters
    ----------
    module:
        The script's module name (``__spec__.name``, e.g. ``benchmarks.scale.scale``).
    argv:
        Its arguments (default: this process's).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    return " ".join(["python -m", module, *args])


def module_command(module: str) -> list[str]:
    """The argument vector that starts ``module`` in a child interpreter.

    Start the child with ``cwd=REPO``: there ``-m`` finds ``benchmarks`` (and this checkout's
    ``graphstrata``) whatever the parent's working directory.
    """
    return [sys.executable, "-m", module]


def write_json(path: Path, payload: Any, *, indent: int = 1, sort_keys: bool = False) -> None:
    """Write ``payload`` as UTF-8 JSON with a final newline; other values go through ``str``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, indent=indent, sort_keys=sort_keys, default=str, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")


def write_report(stem: str, payload: Any, markdown: str, *, out_dir: Path = RESULTS) -> Path:
    """Write ``<stem>.json`` and ``<stem>.md`` under ``out_dir``; return the markdown's path."""
    write_json(out_dir / f"{stem}.json", payload)
    md = out_dir / f"{stem}.md"
    md.write_text(markdown if markdown.endswith("\n") else markdown + "\n", encoding="utf-8")
    return md


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A markdown table's lines: the header, the rule and one line per row of cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return lines


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file (blank lines skipped)."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@contextlib.contextmanager
def busy_process(on: bool = True) -> Iterator[None]:
    """One competing busy process (a Python spin loop) while ``on``: the contended state of
    the thread benchmarks (the cores of this machine are shared, so "idle" is never idle)."""
    if not on:
        yield
        return
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)  # let the scheduler see it
        yield
    finally:
        proc.kill()
        proc.wait()


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values`` by the nearest rank; nan when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]
