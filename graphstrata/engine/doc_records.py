"""The documents of one version as hits cite them and filters read them.

``DocRecords`` is built per version from its ``docs`` table, lazily and once (``DocNames``
holds it): a sorted key index, so a hit's documents are a binary search and a read of their
rows (no per-query pass over the documents), kept once read (``DocRows``: the columns hits
cite, a version's documents never change), and, on the first filtered query, every
document's ``{doc_id, title, **metadata}`` record, from which each field a filter names
gets a columnar form once (values by type, an inverted index for equality). A filter is
then evaluated over every document with array operations (``allowed_keys``), and the last
filters' results are kept (``FILTER_MEMO``). (docs/guide/filters.md, decision 0025.)
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np
import pyarrow as pa

from graphstrata.engine.filters import AllOf, AnyOf, Condition, Filter, as_float, instant
from graphstrata.engine.store.arrow_numpy import arrow_of, numpy_of

__all__ = [
    "ALLOWED_MEMO",
    "CITED_MEMO_CHARS",
    "FILTER_MEMO",
    "DocRecords",
    "DocRow",
    "DocRows",
    "LastFilters",
]

#: Filters whose matching documents a version keeps (a server's clients repeat theirs) ...
FILTER_MEMO = 64
#: ... and whose allowed nodes it keeps (arrays of up to every node id: fewer).
ALLOWED_MEMO = 8
#: Characters of cited document rows a version keeps (``DocRows``: 8-32 MB of str, and
#: their layouts parsed, a few times that as Python lists), then it starts over. Reading a
#: query's cited documents from the Arrow table (a take of their rows per column, and a
#: parse of each layout) was a quarter of a warm ``naive`` search on MultiHop-RAG (decision
#: 0023, amendment).
CITED_MEMO_CHARS = 8_000_000
#: The ``docs`` columns a hit cites: its document's id, title, metadata and layout.
CITED_COLUMNS = ("doc_id", "title", "metadata", "layout")

V = TypeVar("V")


class LastFilters(Generic[V]):
    """What the last ``size`` filters gave, by key (least recently used out; thread-safe).

    Parameters
    ----------
    size:
        Entries kept.
    """

    def __init__(self, size: int):
        self.size = int(size)
        self._memo: OrderedDict[str, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, make: Callable[[], V]) -> V:
        """The value of ``key``, made by ``make`` (outside the lock) when not kept."""
        with self._lock:
            found = self._memo.get(key)
            if found is not None:
                self._memo.move_to_end(key)
                return found
        made = make()
        with self._lock:
            self._memo[key] = made
            while len(self._memo) > self.size:
                self._memo.popitem(last=False)
        return made


_EPOCH = dt.datetime(1970, 1, 1)


@dataclass(frozen=True)
class DocRow:
    """The columns of one document that hits cite (``CITED_COLUMNS``), as stored: metadata
    and layout are JSON text (None when absent). Metadata is parsed by each reader, so what
    a query returns is its own; the layout, which only the spans read, once."""

    doc_id: str
    title: str
    metadata: str | None
    layout: str | None

    def chars(self) -> int:
        """Characters held (what ``CITED_MEMO_CHARS`` bounds)."""
        return sum(len(v) for v in (self.doc_id, self.title, self.metadata, self.layout) if v)

    @functools.cached_property
    def parsed_layout(self) -> dict[str, Any] | None:
        """The layout parsed (``ingest.spans``; None for a row written before layouts).
        Shared by every query: its readers do not change it."""
        return json.loads(self.layout) if self.layout else None


class DocRows:
    """One version's cited document rows by key, read from its ``docs`` table once each.

    Kept up to ``max_chars`` characters, then started over (thread-safe: a lookup reads the
    dict without the lock; filling and clearing take it).

    Parameters
    ----------
    docs:
        The version's documents (``DOC_SCHEMA``).
    max_chars:
        Characters kept before starting over.
    """

    def __init__(self, docs: pa.Table, max_chars: int = CITED_MEMO_CHARS):
        self._docs = docs.select(list(CITED_COLUMNS))
        self.max_chars = int(max_chars)
        self._rows: dict[int, DocRow] = {}
        self._chars = 0
        self._lock = threading.Lock()

    def read(self, keys: list[int], rows: np.ndarray) -> dict[int, DocRow]:
        """The rows of ``keys`` (live doc keys) at table ``rows`` (aligned), by key."""
        held = self._rows
        out = {k: r for k in keys if (r := held.get(k)) is not None}
        if len(out) == len(keys):
            return out
        missing = [i for i, k in enumerate(keys) if k not in out]
        table = self._docs.take(arrow_of(rows[missing]))
        columns = [table.column(c).to_pylist() for c in CITED_COLUMNS]
        read = {keys[i]: DocRow(*values) for i, *values in zip(missing, *columns, strict=True)}
        out.update(read)
        added = sum(r.chars() for r in read.values())
        with self._lock:
            if self._chars + added > self.max_chars:
                self._rows, self._chars = {}, 0
            self._rows.update(read)
            self._chars += added
        return out


@dataclass
class _Column:
    """One field over every document: which rows hold it, and its values by type (a list's
    elements each count for their row)."""

    present: np.ndarray  # bool [n_docs]
    null_rows: np.ndarray
    by_text: dict[str, np.ndarray] = field(default_factory=dict)  # string -> rows
    by_bool: dict[bool, np.ndarray] = field(default_factory=dict)
    number_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    numbers: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    date_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    dates: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # us since epoch


def _rows(values: dict[Any, list[int]]) -> dict[Any, np.ndarray]:
    return {k: np.asarray(v, np.int64) for k, v in values.items()}


def _micros(when: dt.datetime) -> int:
    """Microseconds since the epoch of a naive UTC datetime."""
    return (when - _EPOCH) // dt.timedelta(microseconds=1)


class DocRecords:
    """doc key -> row of one version's ``docs`` table; records and filter evaluation.

    Parameters
    ----------
    docs:
        The version's documents (``DOC_SCHEMA``).
    """

    def __init__(self, docs: pa.Table):
        self._docs = docs
        keys = np.asarray(numpy_of(docs.column("key")), np.int64)
        self._order = np.argsort(keys, kind="stable")
        self._keys = keys[self._order]
        self._records: list[dict[str, Any]] | None = None
        self._columns: dict[str, _Column] = {}
        self._memo: LastFilters[np.ndarray] = LastFilters(FILTER_MEMO)
        self._cited = DocRows(docs)

    def __len__(self) -> int:
        return int(self._keys.size)

    def rows_of(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bool per key: is it a live document, the ``docs`` rows of the found ones)."""
        keys = np.asarray(keys, np.int64)
        if self._keys.size == 0 or keys.size == 0:
            return np.zeros(keys.size, bool), np.zeros(0, np.int64)
        pos = np.minimum(np.searchsorted(self._keys, keys), self._keys.size - 1)
        found = self._keys[pos] == keys
        return found, self._order[pos[found]]

    def read(self, keys: list[int]) -> dict[int, DocRow]:
        """The cited columns of the live documents among ``keys``, by key (``DocRows``:
        each document's row read from the table once per version)."""
        keys_a = np.asarray(keys, np.int64)
        found, rows = self.rows_of(keys_a)
        if rows.size == 0:
            return {}
        return self._cited.read(keys_a[found].tolist(), rows)

    def cited(self, keys: list[int]) -> dict[int, dict[str, Any]]:
        """``{"doc_id", "title", "metadata"}`` by key, of the live documents among ``keys``
        (new dicts on every call: a caller may change what it is given)."""
        return {
            key: {
                "doc_id": row.doc_id,
                "title": row.title,
                "metadata": json.loads(row.metadata) if row.metadata else {},
            }
            for key, row in self.read(keys).items()
        }

    def layouts(self, keys: list[int]) -> dict[int, dict[str, Any] | None]:
        """The parsed ``layout`` of the live documents among ``keys``, by key (None for a row
        written before layouts; ``ingest.spans``)."""
        return {key: row.parsed_layout for key, row in self.read(keys).items()}

    # ------------------------------------------------------------------ filters
    def records(self) -> list[dict[str, Any]]:
        """Every document's ``{**metadata, "doc_id", "title"}`` in table order (parsed once:
        the metadata column read as one JSON array)."""
        if self._records is None:
            metas = self._docs.column("metadata").to_pylist()
            parsed = json.loads("[" + ",".join(m or "{}" for m in metas) + "]")
            ids = self._docs.column("doc_id").to_pylist()
            titles = self._docs.column("title").to_pylist()
            self._records = [
                {**m, "doc_id": d, "title": t} for m, d, t in zip(parsed, ids, titles, strict=True)
            ]
        return self._records

    def _column(self, name: str) -> _Column:
        found = self._columns.get(name)
        if found is not None:
            return found
        records = self.records()
        present = np.zeros(len(records), bool)
        nulls: list[int] = []
        texts: dict[str, list[int]] = {}
        bools: dict[bool, list[int]] = {}
        num_rows: list[int] = []
        nums: list[float] = []
        date_rows: list[int] = []
        dates: list[int] = []
        for row, rec in enumerate(records):
            if name not in rec:
                continue
            present[row] = True
            value = rec[name]
            for v in value if isinstance(value, list) else [value]:
                if v is None:
                    nulls.append(row)
                elif isinstance(v, bool):
                    bools.setdefault(v, []).append(row)
                elif isinstance(v, int | float):
                    number = as_float(v)
                    if number is not None:
                        num_rows.append(row)
                        nums.append(number)
                elif isinstance(v, str):
                    texts.setdefault(v, []).append(row)
                    when = instant(v)
                    if when is not None:
                        date_rows.append(row)
                        dates.append(_micros(when))
        column = _Column(
            present,
            np.asarray(nulls, np.int64),
            _rows(texts),
            _rows(bools),
            np.asarray(num_rows, np.int64),
            np.asarray(nums, np.float64),
            np.asarray(date_rows, np.int64),
            np.asarray(dates, np.int64),
        )
        self._columns[name] = column  # one assignment: concurrent builders agree
        return column

    def mask(self, flt: Filter) -> np.ndarray:
        """bool per row of the ``docs`` table: does the document pass ``flt``."""
        n = len(self)
        if isinstance(flt, AllOf):
            out = np.ones(n, bool)
            for part in flt.parts:
                out &= self.mask(part)
            return out
        if isinstance(flt, AnyOf):
            out = np.zeros(n, bool)
            for part in flt.parts:
                out |= self.mask(part)
            return out
        return self._condition(flt)

    def _equal_rows(self, col: _Column, want: Any) -> np.ndarray:
        if isinstance(want, bool):
            return col.by_bool.get(want, np.zeros(0, np.int64))
        if isinstance(want, str):
            return col.by_text.get(want, np.zeros(0, np.int64))
        return col.number_rows[col.numbers == float(want)]

    def _condition(self, cond: Condition) -> np.ndarray:
        col = self._column(cond.field)
        out = np.zeros(len(self), bool)
        if cond.op in ("$eq", "$ne", "$in", "$nin"):
            wants = cond.value if cond.op in ("$in", "$nin") else (cond.value,)
            for want in wants:
                if want is None:
                    out |= ~col.present
                    out[col.null_rows] = True
                else:
                    out[self._equal_rows(col, want)] = True
            return ~out if cond.op in ("$ne", "$nin") else out
        if isinstance(cond.value, float):
            rows, values, bound = col.number_rows, col.numbers, cond.value
        else:
            rows, values, bound = col.date_rows, col.dates, _micros(cond.value)
        ops = {"$gt": np.greater, "$gte": np.greater_equal, "$lt": np.less, "$lte": np.less_equal}
        out[rows[ops[cond.op](values, bound)]] = True
        return out

    def allowed_keys(self, flt: Filter) -> np.ndarray:
        """Ascending doc keys of the documents that pass ``flt`` (memoized per filter, keyed
        by its repr: ``True`` and ``1`` are equal and hash alike in Python)."""

        def make() -> np.ndarray:
            keys = np.asarray(numpy_of(self._docs.column("key")), np.int64)[self.mask(flt)]
            keys = np.sort(keys)
            keys.flags.writeable = False
            return keys

        return self._memo.get(repr(flt), make)
