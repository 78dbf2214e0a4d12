"""OpenAI's vector-store ``filters`` as the engine's filter syntax (docs/guide/openai.md).

OpenAI's filters are a ``ComparisonFilter`` ``{"type": "eq"|"ne"|"gt"|"gte"|"lt"|"lte"|"in"|
"nin", "key", "value"}`` or a ``CompoundFilter`` ``{"type": "and"|"or", "filters": [...]}``
nesting either. The engine's (``filter=`` of ``Index.query``, decision of the metadata
filters): a JSON object whose top-level keys are ANDed; a key is a metadata field, ``doc_id``
or ``title``; a value is a scalar (equality) or an operator object (``$eq``, ``$ne``, ``$in``,
``$nin``, ``$gt``, ``$gte``, ``$lt``, ``$lte``); ``{"$and": [...]}`` and ``{"$or": [...]}``
combine. :func:`translate` maps the one onto the other, and refuses what is not a filter with
a 400 naming ``filters`` (the engine checks the values' types against the metadata).
"""

from __future__ import annotations

from typing import Any

from graphstrata.bindings.server.errors import ApiError

#: OpenAI comparison -> the engine's operator.
COMPARISONS = {
    "eq": "$eq",
    "ne": "$ne",
    "gt": "$gt",
    "gte": "$gte",
    "lt": "$lt",
    "lte": "$lte",
    "in": "$in",
    "nin": "$nin",
}
#: OpenAI compound -> the engine's combinator.
COMPOUNDS = {"and": "$and", "or": "$or"}
#: Deepest nesting of compound filters read.
MAX_DEPTH = 16


def _refuse(message: str) -> ApiError:
    return ApiError(400, "bad_request", f"filters: {message}", param="filters")


def translate(filters: Any, depth: int = 0) -> dict[str, Any]:
    """The engine filter of an OpenAI ``filters`` object.

    Parameters
    ----------
    filters:
        A ``ComparisonFilter`` or ``CompoundFilter`` (decoded JSON).
    depth:
        How deep in compound filters this one is (the caller passes nothing).

    Returns
    -------
    dict
        ``{key: value}`` for ``eq`` on a scalar, ``{key: {"$op": value}}`` for the other
        comparisons, ``{"$and"|"$or": [...]}`` for a compound filter.

    Raises
    ------
    ApiError
        400 (``param: "filters"``) for an unknown ``type``, a missing or non-string
        ``key``, a list for a comparison other than ``in``/``nin`` (or a scalar for those),
        a boolean or a list for an ordering comparison, an empty or too deep compound
        filter, or an unknown member.
    """
    if depth > MAX_DEPTH:
        raise _refuse(f"nested deeper than {MAX_DEPTH} compound filters")
    if not isinstance(filters, dict):
        raise _refuse("a filter is an object with a type")
    kind = filters.get("type")
    if kind in COMPOUNDS:
        _only(filters, {"type", "filters"})
        parts = filters.get("filters")
        if not isinstance(parts, list) or not parts:
            raise _refuse(f"a {kind!r} filter needs a non-empty list of filters")
        return {COMPOUNDS[kind]: [translate(p, depth + 1) for p in parts]}
    if kind not in COMPARISONS:
        known = sorted([*COMPARISONS, *COMPOUNDS])
        raise _refuse(f"unknown filter type {kind!r}; known: {known}")
    _only(filters, {"type", "key", "value"})
    key = filters.get("key")
    if not isinstance(key, str) or not key or key.startswith("$"):
        raise _refuse(f"a {kind!r} filter needs a key (an attribute name, not starting with $)")
    if "value" not in filters:
        raise _refuse(f"a {kind!r} filter needs a value")
    value = filters["value"]
    if kind in ("in", "nin"):
        if not isinstance(value, list) or not all(_scalar(v) for v in value):
            raise _refuse(f"the value of {kind!r} is a list of strings, numbers or booleans")
    elif not _scalar(value):
        raise _refuse(f"the value of {kind!r} is a string, a number or a boolean")
    elif kind in ("gt", "gte", "lt", "lte") and isinstance(value, bool):
        raise _refuse(f"{kind!r} compares numbers or dates, not booleans")
    if kind == "eq":
        return {key: value}
    return {key: {COMPARISONS[kind]: value}}


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _only(filters: dict[str, Any], members: set[str]) -> None:
    unknown = set(filters) - members
    if unknown:
        raise _refuse(f"unknown member(s) {sorted(unknown)} of a {filters['type']!r} filter")
