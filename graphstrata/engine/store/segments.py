"""The two file formats of table segments, and which one a segment is written in.

Arrow IPC, uncompressed, for segments a reader should memory-map: vectors always, and a
table segment from ``MAPPED_ROWS`` rows (a build or a compaction), so that opening a
million-chunk index pages in the texts it reads instead of decoding every one. zstd Parquet
for the small table segments of one-document commits (a few kilobytes).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["MAPPED_ROWS", "read_table_segment", "table_segment_format", "write_table_segment"]

#: Rows from which a table segment is Arrow IPC rather than Parquet. Opening a 100k-chunk
#: index spent 0.32 of its 0.36 s decoding Parquet node segments; mapped, 0.036 s in all.
MAPPED_ROWS = 8192


def table_segment_format(rows: int) -> str:
    """The file extension a table segment of ``rows`` rows is written with."""
    return "arrow" if rows >= MAPPED_ROWS else "parquet"


def write_table_segment(table: pa.Table, path: Path) -> None:
    """Write ``table`` in the format of ``path``'s extension (``.arrow`` or ``.parquet``)."""
    if path.suffix == ".arrow":
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as out:
            out.write_table(table)
        return
    # Readers cast to the known schema, so the Arrow schema and column statistics are not
    # stored: they are most of a small segment's bytes, and small commits should write little.
    # Doc lists are sorted keys, stored as deltas: a one-document commit at 100k chunks
    # rewrites hub entities and top summaries citing thousands of documents (145k keys),
    # 312 kB zstd-compressed as plain values, 123 kB as deltas.
    delta = [name for name in DELTA_COLUMNS if name in table.schema.names]
    pq.write_table(
        table,
        path,
        compression="zstd",
        store_schema=False,
        write_statistics=False,
        use_dictionary=[name for name in table.schema.names if name not in delta],
        column_encoding={_leaf(table.schema.field(name)): "DELTA_BINARY_PACKED" for name in delta},
    )


#: Integer list columns written delta-encoded in Parquet segments.
DELTA_COLUMNS = ("docs",)


def _leaf(field: pa.Field) -> str:
    """The Parquet column path of a field (``docs.list.element`` for a list of ints)."""
    if pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
        return f"{field.name}.list.element"
    return field.name


def read_table_segment(path: Path) -> pa.Table:
    """A segment written by ``write_table_segment``; an ``.arrow`` one is memory-mapped.

    Raises
    ------
    OSError, pyarrow.ArrowInvalid
        The file cannot be read as its format.
    """
    if path.suffix == ".arrow":
        return pa.ipc.open_file(pa.memory_map(str(path), "r")).read_all()
    # The file's reader without the dataset layer of ``pq.read_table`` and, for these
    # commit-sized files, without its thread pool: the 184 small segments of the 1M-chunk
    # index after 45 writes read in 0.76 s against 1.0-1.9 s (issue 17, ``Index.open``).
    return pq.ParquetFile(path).read(use_threads=False)
