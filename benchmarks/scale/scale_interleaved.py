"""One-document writes at two corpus sizes, interleaved write by write (``scale.py
interleaved``).

The target of issue 17 is a ratio: a one-document insert or delete at 100k chunks may cost
at most twice what it costs at 10k. ``scale.py measure`` measures each size in its own
run, minutes apart, and on the shared 2-core machine the same code ran 1.5-2x slower from
one few-minute phase to the next (the extractive LLM's attribute calls, code no write
changes, took 0.054-0.135 s per write at 100k within one hour), so a ratio of two such
runs says more about the machine than the code. Here each size is opened in a child process
of its own (its garbage collector and caches are its own, as in ``measure``) and the parent
makes them take turns: one insert and one delete of a new document at one size, then at
the other, the order alternating each round. Both sizes see the same machine, write after
write, and the medians and their ratio come from the same minutes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from benchmarks.common import REPO, module_command
from benchmarks.scale.synthetic_corpus import CHUNKS_PER_DOC, DIM, SyntheticCorpus

#: Stages reported per size (the slowest by median at the larger size).
TOP_STAGES = 12
#: Bootstrap resamples of the rounds for the ratio's interval, and its coverage.
BOOTSTRAP = 2000
INTERVAL = 0.90


def ratio_interval(
    small: list[float], large: list[float], resamples: int = BOOTSTRAP, level: float = INTERVAL
) -> tuple[float, float]:
    """A paired bootstrap interval of ``median(large) / median(small)``.

    The rounds are resampled whole (a round's two writes ran in the same minutes, so the
    pairs are kept together), ``resamples`` times with a fixed seed; the interval is the
    central ``level`` share of the resampled ratios. A ratio measured at 2.07x over 60
    rounds says little about a 2x target without it.

    Parameters
    ----------
    small, large:
        One time per round at the smaller and the larger size (same length, > 0).
    resamples:
        Bootstrap samples.
    level:
        Coverage of the interval, in (0, 1).

    Returns
    -------
    tuple[float, float]
        The interval's low and high ends.
    """
    a, b = np.asarray(small, np.float64), np.asarray(large, np.float64)
    if a.shape != b.shape or a.size == 0:
        raise ValueError("one time per round at each size, at least one round")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    rounds = np.random.default_rng(0).integers(0, a.size, size=(int(resamples), a.size))
    ratios = np.median(b[rounds], axis=1) / np.median(a[rounds], axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(ratios, [tail, 1.0 - tail])
    return float(low), float(high)


def child(path: Path, chunks: int, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> None:
    """The ``interleaved-one`` child: open the copy, write once to warm up, say ``ready``,
    then for each ``go <round>`` line insert and delete one new document and answer with
    one JSON line; stop at ``quit``."""
    from graphstrata.bindings.api import Index
    from graphstrata.bindings.embed.models import HashingEmbedder
    from graphstrata.bindings.llm.extractive import ExtractiveLLM

    n_docs = max(2, round(chunks / CHUNKS_PER_DOC))
    corpus = SyntheticCorpus()
    index = Index.open(path, embedder=HashingEmbedder(DIM), llm=ExtractiveLLM(), use_cache=False)
    warm = corpus.document(n_docs + 2)  # Numba loads its kernels on their first call
    index.insert([warm])
    index.delete([warm["doc_id"]])
    print("ready", file=stdout, flush=True)
    for line in stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        doc = corpus.document(n_docs + 10 + int(words[1]))
        ins = index.insert([doc])
        dele = index.delete([doc["doc_id"]])
        answer = {
            "insert_s": ins.seconds,
            "delete_s": dele.seconds,
            "insert_stages_s": ins.stages,
            "delete_stages_s": dele.stages,
        }
        print(json.dumps(answer), file=stdout, flush=True)


def _start(module: str, path: Path, chunks: int) -> subprocess.Popen[str]:
    command = [*module_command(module), "interleaved-one", "--path", str(path)]
    proc = subprocess.Popen(
        [*command, "--chunks", str(chunks)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if line != "ready":
        proc.kill()
        raise RuntimeError(f"the child measuring {path} did not start (said {line!r})")
    return proc


def _ask(proc: subprocess.Popen[str], round_: int) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"go {round_}\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"a child stopped in round {round_} (exit {proc.wait()})")
    answer: dict[str, Any] = json.loads(line)
    return answer


def _median_stages(answers: list[dict[str, Any]], key: str) -> dict[str, float]:
    names = {s for a in answers for s in a[key]}
    return {s: round(float(np.median([a[key].get(s, 0.0) for a in answers])), 4) for s in names}


def measure_interleaved(
    module: str, sizes: list[tuple[Path, int]], rounds: int, load1: Callable[[], float]
) -> dict[str, Any]:
    """Interleaved one-document writes on each ``(index copy, chunks)`` of ``sizes``.

    Each size's child runs ``python -m <module> interleaved-one`` (``module``: the scale
    script, whose ``interleaved-one`` command calls :func:`child`).

    Returns
    -------
    dict
        Per size (by chunks): every insert and delete time, their medians and quartiles,
        and the median of each stage; the ratios of the medians of the last size to the
        first; the load average before and after.
    """
    out: dict[str, Any] = {"rounds": rounds, "load1_start": load1()}
    procs: list[tuple[int, subprocess.Popen[str]]] = []
    answers: dict[int, list[dict[str, Any]]] = {chunks: [] for _, chunks in sizes}
    started = time.perf_counter()
    try:
        for path, chunks in sizes:
            procs.append((chunks, _start(module, path, chunks)))
        for r in range(rounds):
            for chunks, proc in procs if r % 2 == 0 else procs[::-1]:
                answers[chunks].append(_ask(proc, r))
    finally:
        for _, proc in procs:
            if proc.stdin is not None:
                proc.stdin.write("quit\n")
                proc.stdin.close()
            proc.wait(timeout=120)
    out["wall_s"] = round(time.perf_counter() - started, 1)
    out["load1_end"] = load1()
    per_size: dict[str, Any] = {}
    for chunks, got in answers.items():
        row: dict[str, Any] = {}
        for op in ("insert", "delete"):
            times = [a[f"{op}_s"] for a in got]
            row[f"{op}_s"] = [round(t, 4) for t in times]
            q1, q2, q3 = np.percentile(times, [25, 50, 75])
            row[f"{op}_p50_s"] = round(float(q2), 4)
            row[f"{op}_iqr_s"] = [round(float(q1), 4), round(float(q3), 4)]
            row[f"{op}_stages_p50_s"] = _median_stages(got, f"{op}_stages_s")
        per_size[str(chunks)] = row
    out["sizes"] = per_size
    first, last = str(sizes[0][1]), str(sizes[-1][1])
    out["ratio"] = {
        op: round(per_size[last][f"{op}_p50_s"] / per_size[first][f"{op}_p50_s"], 2)
        for op in ("insert", "delete")
    }
    return out


def markdown(entries: list[dict[str, Any]]) -> list[str]:
    """The ``scale.md`` section of the interleaved runs, newest last."""
    if not entries:
        return []
    lines = [
        "## One-document writes, sizes interleaved write by write",
        "",
        "`scale.py interleaved`: each size's kept index copied and opened in a child process"
        " of its own, the children taking turns (one insert and one delete of a new document"
        " per turn, the order alternating each round), so both sizes are measured in the"
        " same minutes (`benchmarks/scale/scale_interleaved.py` says why). Median (quartiles) of"
        " the rounds, in seconds; ratio = the larger size's median over the smaller's"
        f" (target of issue 17: at most 2), with its {INTERVAL:.0%} paired bootstrap"
        f" interval over the rounds ({BOOTSTRAP} resamples, `ratio_interval`).",
        "",
        "| code | rounds | chunks | insert p50 (q1-q3) | delete p50 (q1-q3) | ratio insert |"
        " ratio delete | load1 start / end |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        sizes = sorted(e["sizes"], key=int)
        cells = []
        for op in ("insert", "delete"):
            cells.append(
                " / ".join(
                    f"{e['sizes'][s][f'{op}_p50_s']:.3f} ({e['sizes'][s][f'{op}_iqr_s'][0]:.3f}"
                    f"-{e['sizes'][s][f'{op}_iqr_s'][1]:.3f})"
                    for s in sizes
                )
            )
        ratios = []
        for op in ("insert", "delete"):
            low, high = ratio_interval(
                e["sizes"][sizes[0]][f"{op}_s"], e["sizes"][sizes[-1]][f"{op}_s"]
            )
            ratios.append(f"{e['ratio'][op]}x ({low:.2f}-{high:.2f})")
        lines.append(
            f"| {e.get('code', '–')} | {e['rounds']} | {' / '.join(sizes)} | {cells[0]} |"
            f" {cells[1]} | {ratios[0]} | {ratios[1]} | {e['load1_start']} / {e['load1_end']} |"
        )
    last = entries[-1]
    sizes = sorted(last["sizes"], key=int)
    big = last["sizes"][sizes[-1]]
    lines += [
        "",
        f"Stage medians of the last run (s, {' / '.join(sizes)} chunks; the slowest at the"
        " larger size; nested stages overlap):",
        "",
        "| stage | insert | delete |",
        "|---|---|---|",
    ]
    top = sorted(big["delete_stages_p50_s"], key=lambda s: -big["delete_stages_p50_s"][s])
    for stage in top[:TOP_STAGES]:
        cells = [
            " / ".join(
                f"{last['sizes'][s][f'{op}_stages_p50_s'].get(stage, 0.0):.3f}" for s in sizes
            )
            for op in ("insert", "delete")
        ]
        lines.append(f"| {stage} | {cells[0]} | {cells[1]} |")
    lines.append("")
    return lines
