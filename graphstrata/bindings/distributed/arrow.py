"""Arrow tables for everything that crosses the cluster: texts, vectors, prompts, answers.

Every piece of work and every result is one ``pyarrow.Table`` (Ray's object store keeps it
zero-copy). Each table carries ``pos``, the row's position in the engine's batch, so the
driver puts results back in order and proves that every row came back exactly once
(:func:`check_positions`), whatever order the pieces finished in and however often Ray
retried them.

JSON schemas of structured stages and response ``meta`` travel as JSON text: they are small,
and a JSON round trip keeps the cache key (``llm_cache.request_key`` dumps the schema with
sorted keys) unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from graphstrata.engine import LLMRequest, LLMResponse

REQUEST_SCHEMA = pa.schema(
    [
        ("pos", pa.int64()),
        ("task", pa.string()),
        ("prompt", pa.large_string()),
        ("max_tokens", pa.int64()),
        ("schema", pa.string()),
        ("inputs", pa.list_(pa.large_string())),
        ("temperature", pa.float64()),
    ]
)
RESPONSE_SCHEMA = pa.schema(
    [
        ("pos", pa.int64()),
        ("text", pa.large_string()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("cached", pa.bool_()),
        ("meta", pa.string()),
    ]
)


def texts_table(texts: Sequence[str], start: int = 0) -> pa.Table:
    """``(pos, text)`` rows for texts at positions ``start, start + 1, ...``."""
    return pa.table(
        {
            "pos": pa.array(np.arange(start, start + len(texts), dtype=np.int64)),
            "text": pa.array(list(texts), type=pa.large_string()),
        }
    )


def vectors_table(pos: pa.Array, vectors: np.ndarray) -> pa.Table:
    """``(pos, vector)`` rows; ``vector`` is a fixed-size list of float32."""
    mat = np.ascontiguousarray(vectors, dtype=np.float32)
    if mat.ndim != 2 or mat.shape[0] != len(pos):
        raise ValueError(f"embedder returned shape {mat.shape} for {len(pos)} texts")
    flat = pa.array(mat.reshape(-1), type=pa.float32())
    return pa.table({"pos": pos, "vector": pa.FixedSizeListArray.from_arrays(flat, mat.shape[1])})


def table_vectors(table: pa.Table, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(positions int64, float32[n, dim])`` of a :func:`vectors_table`."""
    pos = table.column("pos").to_numpy()
    column = table.column("vector").combine_chunks()
    flat = column.flatten().to_numpy(zero_copy_only=False)
    return pos, np.asarray(flat, dtype=np.float32).reshape(len(pos), dim)


def requests_table(requests: Sequence[LLMRequest], start: int = 0) -> pa.Table:
    """Prompts as rows at positions ``start, start + 1, ...``."""
    return pa.Table.from_pydict(
        {
            "pos": list(range(start, start + len(requests))),
            "task": [r.task for r in requests],
            "prompt": [r.prompt for r in requests],
            "max_tokens": [int(r.max_tokens) for r in requests],
            "schema": [
                None if r.schema is None else json.dumps(r.schema, sort_keys=True) for r in requests
            ],
            "inputs": [list(r.inputs) for r in requests],
            "temperature": [float(r.temperature) for r in requests],
        },
        schema=REQUEST_SCHEMA,
    )


def table_requests(table: pa.Table) -> list[LLMRequest]:
    """The prompts of a :func:`requests_table`, in row order."""
    rows = table.to_pylist()
    return [
        LLMRequest(
            task=r["task"],
            prompt=r["prompt"],
            max_tokens=int(r["max_tokens"]),
            schema=None if r["schema"] is None else json.loads(r["schema"]),
            inputs=tuple(r["inputs"] or ()),
            temperature=float(r["temperature"]),
        )
        for r in rows
    ]


def responses_table(pos: pa.Array, responses: Sequence[LLMResponse]) -> pa.Table:
    """Answers as rows, one per position of ``pos``."""
    if len(responses) != len(pos):
        raise ValueError(f"{len(pos)} prompts but {len(responses)} answers")
    return pa.Table.from_pydict(
        {
            "pos": pos,
            "text": [r.text for r in responses],
            "prompt_tokens": [int(r.prompt_tokens) for r in responses],
            "completion_tokens": [int(r.completion_tokens) for r in responses],
            "cached": [bool(r.cached) for r in responses],
            "meta": [json.dumps(dict(r.meta), default=str, sort_keys=True) for r in responses],
        },
        schema=RESPONSE_SCHEMA,
    )


def table_responses(table: pa.Table) -> list[tuple[int, LLMResponse]]:
    """``(position, answer)`` pairs of a :func:`responses_table`."""
    return [
        (
            int(r["pos"]),
            LLMResponse(
                text=r["text"],
                prompt_tokens=int(r["prompt_tokens"]),
                completion_tokens=int(r["completion_tokens"]),
                cached=bool(r["cached"]),
                meta=json.loads(r["meta"]),
            ),
        )
        for r in table.to_pylist()
    ]


def split_rows(n: int, rows: int, parts: int) -> list[tuple[int, int]]:
    """``[start, stop)`` pieces of ``n`` rows: at most ``rows`` each, at least ``parts`` pieces.

    So a batch is spread over every actor even when it is smaller than ``parts * rows``.
    """
    if n <= 0:
        return []
    size = max(1, min(rows, -(-n // max(1, parts))))
    return [(start, min(start + size, n)) for start in range(0, n, size)]


def check_positions(seen: np.ndarray, n: int, what: str) -> None:
    """Every position ``0..n-1`` exactly once, or ``RuntimeError`` naming what went wrong.

    Parameters
    ----------
    seen:
        The positions that came back (concatenated over pieces).
    n:
        The batch size.
    what:
        The stage, for the message.
    """
    counts = np.bincount(seen.astype(np.int64), minlength=n) if seen.size else np.zeros(n)
    if counts.shape[0] != n or (counts != 1).any():
        lost = int((counts[:n] == 0).sum())
        dup = int((counts[:n] > 1).sum()) + max(0, counts.shape[0] - n)
        raise RuntimeError(f"{what}: {lost} row(s) lost and {dup} duplicated by the cluster")
