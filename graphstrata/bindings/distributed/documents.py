"""Documents as a Ray Dataset: read, validate, chunk (docs/architecture.md, "Write path").

Decisions:

* **Readers.** Parquet (a ``.parquet`` file, or a folder holding ``.parquet`` files and no
  ``.txt``/``.md`` file) is read by Ray Data tasks (``ray.data.read_parquet``) and each row
  goes through ``engine.documents.coerce_document`` in the task: the JSONL rules (``doc_id``
  and ``text`` required, an integer ``doc_id`` taken as text, ``metadata`` an object).
  JSONL, folders and single files are read on the driver by the readers of a one-process
  build (``bindings.files.read_source``: JSONL by the engine's reader, files by their
  format's parser): their rules (line numbers in errors, which symbolic links are followed)
  live there and are not written twice, and reading is not where a build spends its time
  (the 609 MultiHop-RAG documents read in well under a second). A file that gives no
  document stops the batch, naming each one (nothing is written), since a Ray build's
  report has no per-file outcomes.
* **Validation** is ``engine.documents.validate_batch`` over the whole batch on the driver,
  before anything on disk changes: duplicates are a property of the batch, not of a block,
  and the error is then the one a single-machine build raises, listing every problem.
* **Chunking** runs in Ray Data tasks (``chunk_text``, the engine's function) over blocks of
  ``(pos, text)`` rows and yields each document's chunk count. The engine chunks again,
  deterministically, on the driver (``Engine.insert`` takes documents, not chunks); the build
  checks that both agree. The driver's re-chunking is the report's ``chunk`` stage
  (measured: 0.3 s for 200 MultiHop-RAG documents, under 1% of the build; see
  ``benchmarks/results/distributed.md``); removing it needs the engine to accept chunked
  documents (the report of issue 14 describes that change).
* The dataset keeps the source's order (``preserve_order``): doc keys and node ids are given
  in that order, so the result equals a single-machine build's row for row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphstrata.bindings.distributed.arrow import check_positions, split_rows, texts_table
from graphstrata.bindings.distributed.cluster import Cluster, require_ray
from graphstrata.bindings.distributed.pool import Meter
from graphstrata.bindings.distributed.workers import chunk_counts, coerce_rows
from graphstrata.bindings.files import read_source
from graphstrata.engine import (
    TEXT_SUFFIXES,
    Document,
    DocumentError,
    IndexConfig,
    validate_batch,
)

#: Documents per chunking task: 64 of MultiHop-RAG's (~2,700 tokens each) take ~0.1 s.
DOCS_PER_TASK = 64


@dataclass(frozen=True)
class PreparedDocs:
    """A validated batch and what the chunking tasks found.

    Attributes
    ----------
    docs:
        The documents, in the source's order.
    n_chunks:
        Chunks per document (int64, same order).
    chunk_tokens:
        Tokens in all chunks.
    """

    docs: list[Document]
    n_chunks: np.ndarray
    chunk_tokens: int


def is_parquet(source: Path) -> bool:
    """A ``.parquet`` file, or a folder with ``.parquet`` files and no text file."""
    if source.is_file():
        return source.suffix.lower() == ".parquet"
    if not source.is_dir():
        return False
    names = [p.suffix.lower() for p in source.rglob("*") if p.is_file()]
    return ".parquet" in names and not any(s in TEXT_SUFFIXES for s in names)


def read_files_whole(source: Path, config: IndexConfig) -> list[Document]:
    """The documents of a JSONL file, a file or a folder (``read_source``), or
    ``DocumentError`` naming every file that gives none."""
    batch = read_source(source, config.ingest)
    failed = [o for o in batch.outcomes if o["status"] == "failed"]
    if failed:
        raise DocumentError([f"{o['name']}: {o['error']}" for o in failed])
    return batch.docs


def read_parquet(source: Path) -> list[Document]:
    """Documents of a Parquet source, coerced in Ray Data tasks (module docstring).

    Raises
    ------
    DocumentError
        Listing every row that is not a document.
    """
    ray = require_ray()
    ds: Any = ray.data.read_parquet(str(source)).map_batches(
        coerce_rows, fn_kwargs={"where": source.name}, batch_format="pyarrow"
    )
    table = pa.concat_tables(list(ds.iter_batches(batch_format="pyarrow", batch_size=None)))
    rows = table.to_pylist() if table.num_rows else []
    problems = [r["problem"] for r in rows if r["problem"]]
    if problems:
        raise DocumentError(problems)
    return [
        Document(
            doc_id=r["doc_id"],
            text=r["text"],
            title=r["title"],
            metadata=json.loads(r["metadata"]),
            source=r["source"],
        )
        for r in rows
    ]


def prepare(
    source: str | Path, config: IndexConfig, cluster: Cluster, meter: Meter
) -> PreparedDocs:
    """Read and validate a source, and chunk its documents in Ray tasks.

    Parameters
    ----------
    source:
        A ``.jsonl`` file, a folder of ``.txt``/``.md`` files, a text file, or Parquet.
    config:
        The index's config (``ingest`` limits, ``chunking``).
    cluster:
        The connected cluster.
    meter:
        Rows per stage (``read``, ``chunk``).

    Returns
    -------
    PreparedDocs
        The batch, ready for ``Engine.insert``.

    Raises
    ------
    DocumentError
        When a document is invalid (nothing was changed).
    OSError
        When the source is missing or unreadable.
    """
    ray = require_ray()
    path = Path(source)
    with meter.stage("read", 0) as advance:
        docs = read_parquet(path) if is_parquet(path) else read_files_whole(path, config)
        advance(len(docs))
    validate_batch(docs, config.ingest)
    n_chunks = np.zeros(len(docs), dtype=np.int64)
    tokens = 0
    if not docs:
        return PreparedDocs(docs, n_chunks, 0)
    spans = split_rows(len(docs), DOCS_PER_TASK, cluster.actors)
    blocks = [texts_table([d.text for d in docs[a:b]], a) for a, b in spans]
    ds: Any = ray.data.from_arrow(blocks).map_batches(
        chunk_counts,
        fn_kwargs={"chunking": config.chunking},
        batch_format="pyarrow",
        batch_size=None,
        num_cpus=cluster.options.cpus_per_actor,
        max_retries=cluster.options.max_task_retries,
    )
    seen: list[np.ndarray] = []
    with meter.stage("chunk", len(docs)) as advance:
        for block in ds.iter_batches(batch_format="pyarrow", batch_size=None):
            pos = block.column("pos").to_numpy()
            n_chunks[pos] = block.column("n_chunks").to_numpy()
            tokens += int(pc.sum(block.column("chunk_tokens")).as_py() or 0)
            seen.append(pos)
            advance(len(pos))
    check_positions(np.concatenate(seen), len(docs), "chunk")
    return PreparedDocs(docs, n_chunks, tokens)
