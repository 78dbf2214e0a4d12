"""Metadata filters: the one syntax, its validation, and its evaluation over documents.

A filter is a JSON object (docs/guide/filters.md). Its top-level keys are ANDed; a key is a
metadata field name, ``doc_id`` or ``title``; a value is a scalar (equality) or an operator
object with ``$eq``, ``$ne``, ``$in``, ``$nin``, ``$gt``, ``$gte``, ``$lt``, ``$lte``.
``{"$and": [...]}`` and ``{"$or": [...]}`` combine filters. Range operands are numbers, or
ISO-8601 date / datetime strings compared as instants (a date is its midnight, a datetime
without a zone is UTC). A field holding a list matches when one of its elements does
(``{"tags": "news"}`` keeps a document tagged ``["news", "sport"]``); ``$ne`` and ``$nin``
keep a document none of whose values match, a document without the field included. A
value of another type than the operand never matches a range (``"abc" > 3`` is false,
not an error): documents differ, only the filter is checked.

:func:`parse_filter` validates a filter into a typed :class:`Filter` (``QueryError`` naming
the problem); :func:`matches` evaluates it on one document's record ``{doc_id, title,
**metadata}``; ``engine.doc_records.DocRecords.allowed_keys`` evaluates it over every
document of a version at once (columnar, tested equal to :func:`matches`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graphstrata.engine.params import QueryError

__all__ = [
    "OPERATORS",
    "RANGE_OPERATORS",
    "AllOf",
    "AnyOf",
    "Condition",
    "Filter",
    "as_float",
    "instant",
    "matches",
    "parse_filter",
]

#: Every operator of an operator object.
OPERATORS = ("$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte")
#: The operators that compare numbers or dates.
RANGE_OPERATORS = ("$gt", "$gte", "$lt", "$lte")
#: Conditions one filter may hold, and how deep ``$and`` / ``$or`` may nest: a filter is
#: evaluated over every document, so its size is bounded like a query's length.
MAX_CONDITIONS = 256
MAX_DEPTH = 8
#: Values of one ``$in`` / ``$nin``.
MAX_IN_VALUES = 1024

Scalar = str | int | float | bool | None


@dataclass(frozen=True)
class Condition:
    """One field compared with one operand: ``value`` is a scalar (``$eq``, ``$ne``), a
    tuple of scalars (``$in``, ``$nin``), or a float or UTC ``datetime`` (ranges)."""

    field: str
    op: str
    value: Any


@dataclass(frozen=True)
class AllOf:
    """Every part holds (a filter's top level, ``$and``)."""

    parts: tuple[Filter, ...]


@dataclass(frozen=True)
class AnyOf:
    """Some part holds (``$or``)."""

    parts: tuple[Filter, ...]


Filter = Condition | AllOf | AnyOf


def instant(text: str) -> dt.datetime | None:
    """The UTC instant an ISO-8601 date or datetime string names (naive: UTC), else None."""
    if not isinstance(text, str) or len(text) < 10 or not text[:4].isdigit():
        return None
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is not None:
        when = when.astimezone(dt.UTC).replace(tzinfo=None)
    return when


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def as_float(value: Any) -> float | None:
    """A JSON number as a finite float, else None (booleans, strings, and integers too
    large for a float, which compare with nothing: the columns hold float64)."""
    if not _number(value):
        return None
    try:
        out = float(value)
    except OverflowError:
        return None
    return out if math.isfinite(out) else None


def parse_filter(obj: Any) -> Filter | None:
    """The typed filter of a JSON filter object; None when ``obj`` is None.

    Raises
    ------
    QueryError
        On anything but an object, an unknown operator, an operand of the wrong type, an
        empty ``$in`` / ``$and`` / ``$or``, a range operand that is neither a number nor an
        ISO-8601 date, or a filter past ``MAX_CONDITIONS`` / ``MAX_DEPTH``.
    """
    if obj is None:
        return None
    count = [0]
    return _parse_object(obj, "filter", 1, count)


def _parse_object(obj: Any, where: str, depth: int, count: list[int]) -> Filter:
    if not isinstance(obj, Mapping):
        raise QueryError(f"{where} must be a JSON object, got {type(obj).__name__}")
    if depth > MAX_DEPTH:
        raise QueryError(f"{where}: $and/$or nest deeper than {MAX_DEPTH} levels")
    parts: list[Filter] = []
    for key, value in obj.items():
        if not isinstance(key, str) or not key:
            raise QueryError(f"{where}: a field name must be a non-empty string")
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise QueryError(f"{where}.{key} must be a non-empty list of filter objects")
            subs = tuple(
                _parse_object(v, f"{where}.{key}[{i}]", depth + 1, count)
                for i, v in enumerate(value)
            )
            parts.append(AllOf(subs) if key == "$and" else AnyOf(subs))
        elif key.startswith("$"):
            raise QueryError(
                f"{where}: unknown operator {key!r} at the top of a filter object; "
                "use $and or $or, or a field name"
            )
        elif isinstance(value, Mapping):
            if not value:
                raise QueryError(f"{where}.{key}: an operator object needs an operator")
            parts.extend(_condition(key, op, v, f"{where}.{key}", count) for op, v in value.items())
        else:
            parts.append(_condition(key, "$eq", value, f"{where}.{key}", count))
    return parts[0] if len(parts) == 1 else AllOf(tuple(parts))


def _condition(field: str, op: Any, value: Any, where: str, count: list[int]) -> Condition:
    count[0] += 1
    if count[0] > MAX_CONDITIONS:
        raise QueryError(f"a filter may hold at most {MAX_CONDITIONS} conditions")
    if op not in OPERATORS:
        raise QueryError(f"{where}: unknown operator {op!r}; allowed: {', '.join(OPERATORS)}")
    if op in ("$eq", "$ne"):
        if not _is_scalar(value):
            raise QueryError(
                f"{where}.{op} needs a string, number, boolean or null, got {type(value).__name__}"
            )
        _finite(value, f"{where}.{op}")
        return Condition(field, op, value)
    if op in ("$in", "$nin"):
        if not isinstance(value, list) or not value:
            raise QueryError(f"{where}.{op} needs a non-empty list of values")
        if len(value) > MAX_IN_VALUES:
            raise QueryError(f"{where}.{op} may list at most {MAX_IN_VALUES} values")
        bad = [v for v in value if not _is_scalar(v)]
        if bad:
            raise QueryError(
                f"{where}.{op} takes strings, numbers, booleans or null, "
                f"got {type(bad[0]).__name__}"
            )
        for v in value:
            _finite(v, f"{where}.{op}")
        return Condition(field, op, tuple(value))
    if _number(value):
        _finite(value, f"{where}.{op}")
        return Condition(field, op, float(value))
    if isinstance(value, str):
        when = instant(value)
        if when is None:
            raise QueryError(
                f"{where}.{op} needs a number or an ISO-8601 date or datetime "
                f"(e.g. 2024-05-01 or 2024-05-01T12:00:00Z), got {value!r}"
            )
        return Condition(field, op, when)
    raise QueryError(
        f"{where}.{op} needs a number or an ISO-8601 date string, got {type(value).__name__}"
    )


def _finite(value: Any, where: str) -> None:
    if _number(value) and as_float(value) is None:
        raise QueryError(f"{where}: {value!r} is not a finite number a float can hold")


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: a boolean never equals a number (``True == 1`` in Python)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _number(a) and _number(b):
        fa = as_float(a)
        return fa is not None and fa == as_float(b)
    return type(a) is type(b) and a == b


def _in_range(op: str, value: Any, bound: Any) -> bool:
    if isinstance(bound, dt.datetime):
        value = instant(value) if isinstance(value, str) else None
    else:
        value = as_float(value)
    if value is None:
        return False
    if op == "$gt":
        return bool(value > bound)
    if op == "$gte":
        return bool(value >= bound)
    if op == "$lt":
        return bool(value < bound)
    return bool(value <= bound)


def _values(doc: Mapping[str, Any], field: str) -> tuple[bool, list[Any]]:
    """(whether the document has the field, its values: a list's elements)."""
    if field not in doc:
        return False, []
    value = doc[field]
    return True, list(value) if isinstance(value, list) else [value]


def _holds(cond: Condition, doc: Mapping[str, Any]) -> bool:
    present, values = _values(doc, cond.field)
    if cond.op in ("$eq", "$ne"):
        if cond.value is None:
            hit = not present or any(v is None for v in values)
        else:
            hit = any(_equal(v, cond.value) for v in values)
        return hit if cond.op == "$eq" else not hit
    if cond.op in ("$in", "$nin"):
        hit = any(
            (not present or any(v is None for v in values))
            if want is None
            else any(_equal(v, want) for v in values)
            for want in cond.value
        )
        return hit if cond.op == "$in" else not hit
    return any(_in_range(cond.op, v, cond.value) for v in values)


def matches(doc: Mapping[str, Any], flt: Mapping[str, Any] | Filter | None) -> bool:
    """Whether one document's record ``{doc_id, title, **metadata}`` passes ``flt`` (a JSON
    filter object, or one :func:`parse_filter` made; None passes everything).

    Raises
    ------
    QueryError
        When ``flt`` is not a valid filter.
    """
    parsed = flt if isinstance(flt, Condition | AllOf | AnyOf) else parse_filter(flt)
    return True if parsed is None else _passes(parsed, doc)


def _passes(flt: Filter, doc: Mapping[str, Any]) -> bool:
    if isinstance(flt, Condition):
        return _holds(flt, doc)
    if isinstance(flt, AllOf):
        return all(_passes(p, doc) for p in flt.parts)
    return any(_passes(p, doc) for p in flt.parts)
