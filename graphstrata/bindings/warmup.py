"""Compile the engine's Numba kernels before the first query (``graphstrata warmup``).

Every kernel is ``@njit(cache=True)``: the first process that calls one compiles it (tens of
seconds for the whole engine on two cores) and saves the machine code, so later processes
only load it (~1.6 s for all of them). A fresh install or container would otherwise pay the
compilation in its first query. :func:`warmup` builds a throwaway index in a temporary
directory, with the feature-hashing embedder (kernels are typed by dtype, not by vector
width, so no model is needed) and the built-in extractive LLM, then runs what an index does:
insert, every search mode, a delete and an update (the layered read paths over dead rows and
an extra layer), a maintenance and a compaction, then every mode again from the index
reopened from disk (memory-mapped, read-only arrays: other signatures than the writer's).
That compiles exactly the signatures the engine uses, without a list of kernels and argument
types to keep in step with the code (measured: a process that then builds, updates, compacts
and queries the sample corpus with ``minilm-onnx`` compiles nothing).

Where the compiled kernels go: next to the package's modules (``__pycache__``), or, when
that directory is read-only (a system or image install), Numba's per-user cache. Set
``NUMBA_CACHE_DIR`` to choose the directory: a container image runs ``graphstrata warmup``
at build time with it set, and keeps it set at run time. Numba uses a cache directory only if
it can write there (even to load from it), so that directory stays writable at run time
(README, "Install without torch, warm up once").
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Ten small documents that share names, so every stage has work: chunks, entities and
#: relations, communities, hierarchy layers, BM25 postings.
_PLACES = ["Brekkvik", "Ostmark", "Varde", "Lake Sundra", "Mount Kjell"]
_ORGS = ["Meridian Optics", "Halvorsen Observatory", "Sundra Ferry Company", "Kjell College"]
_PEOPLE = ["Ingrid Halvorsen", "Tomas Brekke", "Lena Varg", "Oskar Lund"]


def _documents() -> list[dict[str, str]]:
    docs = []
    for i in range(10):
        place, org = _PLACES[i % len(_PLACES)], _ORGS[i % len(_ORGS)]
        person, other = _PEOPLE[i % len(_PEOPLE)], _PEOPLE[(i + 1) % len(_PEOPLE)]
        sentences = [
            f"{org} is based in {place} and was founded by {person} in {1950 + 3 * i}.",
            f"{person} worked with {other} on instrument number {i} for {org}.",
            f"The {org} workshop in {place} builds lenses, mirrors and mounts for telescopes.",
            f"In winter the road from {place} to {_PLACES[(i + 2) % len(_PLACES)]} is closed "
            f"and {other} takes the ferry across Lake Sundra.",
            f"{other} later led {_ORGS[(i + 1) % len(_ORGS)]}, which bought parts from {org}.",
        ]
        docs.append(
            {"doc_id": f"warmup/{i}.md", "title": f"{org} {i}", "text": " ".join(sentences * 4)}
        )
    return docs


@dataclass
class WarmupReport:
    """What :func:`warmup` did.

    Attributes
    ----------
    seconds:
        Wall time of the whole warm-up.
    cpu_seconds:
        CPU time of this process during it (compilation is single-threaded: on shared
        cores this is the figure that does not depend on the load).
    kernels:
        Numba kernels of graphstrata that the warm-up called.
    compiled:
        Signatures compiled by this run (not found in the cache).
    loaded:
        Signatures loaded from the cache.
    cache_dir:
        ``NUMBA_CACHE_DIR`` when set, else where Numba put the first kernel's cache.
    steps:
        ``(step, seconds)`` in order.
    """

    seconds: float
    cpu_seconds: float
    kernels: int
    compiled: int
    loaded: int
    cache_dir: str
    steps: list[tuple[str, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "seconds": round(self.seconds, 3),
            "cpu_seconds": round(self.cpu_seconds, 3),
            "kernels": self.kernels,
            "compiled": self.compiled,
            "loaded": self.loaded,
            "cache_dir": self.cache_dir,
            "steps": {name: round(s, 3) for name, s in self.steps},
        }

    def summary(self) -> str:
        """One line: kernels, compiled / loaded signatures, time, cache location."""
        return (
            f"warmup: {self.kernels} kernels, {self.compiled} signatures compiled, "
            f"{self.loaded} loaded from the cache, in {self.seconds:.1f}s "
            f"({self.cpu_seconds:.1f}s CPU; cache: {self.cache_dir})"
        )


def kernel_dispatchers() -> dict[str, Any]:
    """Every Numba dispatcher of the imported graphstrata modules, by qualified name."""
    from numba.core.registry import CPUDispatcher

    found: dict[str, Any] = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("graphstrata.") or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, CPUDispatcher) and value.__module__ == name:
                found[f"{name}.{attr}"] = value
    return found


def _cache_counts(dispatchers: dict[str, Any]) -> tuple[int, int, int]:
    """(kernels called, signatures compiled, signatures loaded from the cache)."""
    used = compiled = loaded = 0
    for dispatcher in dispatchers.values():
        stats = dispatcher.stats
        misses, hits = sum(stats.cache_misses.values()), sum(stats.cache_hits.values())
        used += bool(dispatcher.signatures)
        compiled += misses
        loaded += hits
    return used, compiled, loaded


def _cache_location(dispatchers: dict[str, Any]) -> str:
    explicit = os.environ.get("NUMBA_CACHE_DIR")
    if explicit:
        return explicit
    for dispatcher in dispatchers.values():
        path = dispatcher.stats.cache_path
        if path:
            return str(Path(path).parent.parent) if "__pycache__" in path else str(path)
    return "numba's default"


def warmup(
    progress: Callable[[str, float], None] | None = None, workdir: str | Path | None = None
) -> WarmupReport:
    """Compile (or load from the cache) every kernel the engine's reads and writes use.

    Parameters
    ----------
    progress:
        Called as ``progress(step, seconds)`` after each step.
    workdir:
        Where the throwaway index is built (a temporary directory under it, removed after);
        default the system's temporary directory.

    Returns
    -------
    WarmupReport
        Kernels called, signatures compiled and loaded, time per step.
    """
    from graphstrata.bindings.embed.models import HashingEmbedder
    from graphstrata.bindings.llm.extractive import ExtractiveLLM
    from graphstrata.engine import Engine, IndexConfig

    steps: list[tuple[str, float]] = []
    start = last = time.perf_counter()
    cpu_start = time.process_time()

    def step(name: str) -> None:
        nonlocal last
        now = time.perf_counter()
        steps.append((name, now - last))
        if progress is not None:
            progress(name, now - last)
        last = now

    docs = _documents()
    question = "Which instruments did Meridian Optics build for the Halvorsen Observatory?"
    with tempfile.TemporaryDirectory(prefix="graphstrata-warmup-", dir=workdir) as tmp:
        path = Path(tmp) / "index"
        embedder, llm = HashingEmbedder(64), ExtractiveLLM()
        index = Engine.create(path, IndexConfig(embedder=embedder.name), embedder, llm)
        index.insert(docs[:8])
        step("insert")
        for mode in index.modes:
            index.query(question, mode)
        step("query every mode")
        index.delete([docs[0]["doc_id"]])
        index.insert([{**docs[1], "text": docs[1]["text"] + " Lena Varg moved to Varde."}])
        index.insert(docs[8:])
        step("delete and update")
        for mode in index.modes:
            index.query(question, mode)
        step("query every mode after changes")
        index.maintain(wait=60.0)
        index.compact(wait=60.0)
        step("maintain and compact")
        # A new process reads memory-mapped (read-only) tables: Numba types those apart from
        # the writable arrays of the writer, so the reads are compiled once more for them.
        reopened = Engine.open(path, embedder, llm)
        for mode in reopened.modes:
            reopened.query(question, mode)
        step("reopen and query every mode")
    dispatchers = kernel_dispatchers()
    used, compiled, loaded = _cache_counts(dispatchers)
    return WarmupReport(
        seconds=time.perf_counter() - start,
        cpu_seconds=time.process_time() - cpu_start,
        kernels=used,
        compiled=compiled,
        loaded=loaded,
        cache_dir=_cache_location(dispatchers),
        steps=steps,
    )


def prepare_embedder(spec: str | None = None) -> dict[str, Any]:
    """Load the embedder ``spec`` (default: the default embedder) and embed one text, so its
    model file exists before the first query (``minilm-onnx`` writes its ONNX file once).

    Returns
    -------
    dict
        ``{"name", "device", "seconds"}``, or ``{"error": cause}`` when the embedder cannot
        be loaded (e.g. its model is not installed; the cause names what to install).
    """
    from graphstrata.bindings.registry import DEFAULT_EMBEDDER, make_embedder
    from graphstrata.engine import EmbedderError

    start = time.perf_counter()
    try:
        embedder = make_embedder(spec or DEFAULT_EMBEDDER)
        embedder.embed(["warm-up"])
    except EmbedderError as exc:
        return {"error": str(exc)}
    return {
        "name": embedder.name,
        "device": getattr(embedder, "device", None),
        "seconds": round(time.perf_counter() - start, 3),
    }
