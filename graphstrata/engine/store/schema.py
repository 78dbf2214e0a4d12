"""Arrow schemas of the index tables (docs/architecture.md, "Data model")."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

NODE_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("kind", pa.uint8(), nullable=False),
        pa.field("layer", pa.uint8(), nullable=False),
        pa.field("text", pa.large_string(), nullable=False),
        pa.field("tokens", pa.int32(), nullable=False),
        pa.field("docs", pa.list_(pa.int64()), nullable=False),
        pa.field("code", pa.uint64(), nullable=False),
        pa.field("parent", pa.int64(), nullable=False),
        pa.field("version", pa.int64(), nullable=False),
    ]
)

EDGE_SCHEMA = pa.schema(
    [
        pa.field("src", pa.int64(), nullable=False),
        pa.field("dst", pa.int64(), nullable=False),
        pa.field("kind", pa.uint8(), nullable=False),
        pa.field("weight", pa.float32(), nullable=False),
        pa.field("version", pa.int64(), nullable=False),
    ]
)

DOC_SCHEMA = pa.schema(
    [
        pa.field("key", pa.int64(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("title", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("sha256", pa.string(), nullable=False),
        pa.field("metadata", pa.string(), nullable=False),  # JSON object
        pa.field("n_chars", pa.int64(), nullable=False),
        pa.field("n_chunks", pa.int32(), nullable=False),
        pa.field("version", pa.int64(), nullable=False),
        # JSON: where each chunk lies in the text and the file's pages and headings
        # (``engine/ingest/spans.py``); null in segments written before spans existed.
        pa.field("layout", pa.string(), nullable=True),
    ]
)

TOMBSTONE_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])


def conformed(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` cast to ``schema``, a nullable column it lacks added as nulls: segments
    written before a column existed (``docs.layout``) read as the current schema.

    Parameters
    ----------
    table:
        A segment's rows.
    schema:
        The table's current schema.
    """
    missing = [f for f in schema if f.nullable and f.name not in table.schema.names]
    for f in missing:
        table = table.append_column(f, pa.nulls(table.num_rows, f.type))
    if missing:
        table = table.select(schema.names)
    return table.cast(schema)


def vector_numpy_dtype(dtype: str) -> type[np.floating]:
    """The NumPy type of stored vectors: float16 for ``"f16"``, float32 for ``"f32"``."""
    return np.float16 if dtype == "f16" else np.float32


def vector_schema(dim: int, dtype: str = "f32") -> pa.Schema:
    """Vectors: one fixed-size list per embedded node, stored as uncompressed Arrow IPC."""
    value_type = pa.from_numpy_dtype(vector_numpy_dtype(dtype))
    return pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("kind", pa.uint8(), nullable=False),
            pa.field(
                "vector",
                pa.list_(pa.field("item", value_type, nullable=False), dim),
                nullable=False,
            ),
        ]
    )
