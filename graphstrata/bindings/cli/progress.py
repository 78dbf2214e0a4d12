"""Per-stage progress of the long commands (``index``, ``insert``, ``delete``, ``eval``).

The engine reports ``progress(stage, done, total)`` (``engine.component.ProgressFn``): row
stages (``embed``, ``eval MODE``, the Ray stages ``"STAGE rows"``) count rows; step stages
(one per write component: ``hierarchy``, ``heterograph``, ``sparse``...) report ``0 of 1``
when they start and ``1 of 1`` when they end. On a terminal each running stage has one tqdm
line on stderr: rows done of total, rate and time left for a row stage, the name of a step.
A line is cleared when its stage ends (the report that follows lists every stage's time).
Nothing is shown when stderr is not a terminal, with ``--quiet`` or with ``--json`` (stdout
then holds only the JSON); ``GRAPHSTRATA_PROGRESS=1`` forces the lines.

The rate is tqdm's own, from the rows added since the stage's first report
(``update(delta)``); the first report of a stage opens its line at that count, so rows done
before it are not counted as done in no time.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO

#: The unit of each kind of row stage, by the stage's first word.
UNITS = {"embed": "texts", "eval": "questions", "answer": "questions"}


def add_quiet_arg(p: argparse.ArgumentParser) -> None:
    """``-q/--quiet``: no progress lines, only the report."""
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on the terminal")


def progress_for(args: argparse.Namespace) -> Progress:
    """The progress of a command: off with ``--json`` or ``--quiet``, else on a terminal."""
    return Progress(not (getattr(args, "json", False) or getattr(args, "quiet", False)))


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class Progress:
    """One tqdm line per running stage, on a terminal.

    Parameters
    ----------
    enabled:
        Show lines (only when ``stream`` is a terminal, unless ``GRAPHSTRATA_PROGRESS=1``).
    stream:
        Where the lines go (default stderr).
    """

    def __init__(self, enabled: bool, stream: TextIO | None = None):
        self.stream = stream if stream is not None else sys.stderr
        forced = os.environ.get("GRAPHSTRATA_PROGRESS") == "1"
        self.enabled = forced or (enabled and _is_terminal(self.stream))
        self.bars: dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        """Report ``done`` of ``total`` for ``stage``."""
        if not self.enabled:
            return
        bar = self.bars.get(stage)
        if bar is not None and done < bar.n:  # the stage runs again (another embed call)
            self._close(stage)
            bar = None
        if bar is None:
            bar = self.bars[stage] = self._open(stage, done, total)
        elif total > 1:
            bar.total = total
            bar.update(done - bar.n)
        if done >= total:
            bar.n = done
            bar.refresh()  # the final count and rate, however short the stage was
            self._close(stage)

    def _open(self, stage: str, done: int, total: int) -> Any:
        from tqdm import tqdm

        common: dict[str, Any] = {"file": self.stream, "leave": False, "dynamic_ncols": True}
        if total <= 1:  # a step: its name while it runs (tqdm redraws only when called)
            return tqdm(total=1, initial=done, desc=stage, bar_format="{desc} ...", **common)
        unit = UNITS.get(stage.split()[0], "rows")
        return tqdm(total=total, initial=done, desc=stage, unit=unit, mininterval=0.2, **common)

    def _close(self, stage: str) -> None:
        bar = self.bars.pop(stage, None)
        if bar is not None:
            bar.close()

    def close(self) -> None:
        """Close every line still open (a failed or interrupted command)."""
        for stage in list(self.bars):
            self._close(stage)
