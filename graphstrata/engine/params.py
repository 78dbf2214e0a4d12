"""Typed, validated parameters of the search modes.

Each view declares one frozen dataclass per mode it serves (``HierarchyParams``,
``GraphParams``, ...), whose field names are the names of the config fields they override
(``bias_share`` overrides ``HierarchyConfig.bias_share``). A field left at ``None`` takes the
value recorded in the index's config. Parsing is strict, so a typo is an error naming the
allowed parameters rather than a silently ignored key:

* unknown names are refused;
* ``bool`` is never accepted where a number is wanted (``True`` is not 1), a string never
  where a number is wanted (``"5"`` is not 5), an ``int`` is accepted for a ``float``;
* ``Literal`` fields accept only their listed strings; each class checks its ranges in
  ``check``.

The HTTP schema of ``params`` is generated from these classes (``json_schema``), so the
documentation cannot drift from what the engine reads.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, TypeVar, get_args, get_origin

P = TypeVar("P", bound="ModeParams")


#: ``typing.get_type_hints`` per parameter class (see ``_type_hints``).
_HINTS: dict[type, dict[str, Any]] = {}


def _type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints`` of a parameter class, once per class: it evaluates every
    annotation string and was ~6% of a cached naive request's CPU in the service."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


class QueryError(ValueError):
    """A query is invalid: unknown mode, bad budget or top-k, bad mode parameters, no text.

    Always the caller's fault (HTTP 422, CLI exit 1); never raised for an engine defect.
    """


@dataclasses.dataclass(frozen=True)
class ModeParams:
    """Base of every mode's parameters. Subclasses add fields; ``None`` = the config value."""

    #: Mode names this class applies to (documentation and error messages).
    modes: ClassVar[tuple[str, ...]] = ()
    #: Inclusive ``(minimum, maximum)`` of numeric fields: checked by ``parse`` and published
    #: in ``json_schema``, so clients see the same ranges the engine enforces.
    bounds: ClassVar[dict[str, tuple[float, float]]] = {}

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def parse(cls: type[P], values: Mapping[str, Any] | None, mode: str = "") -> P:
        """Build validated parameters from user input.

        Parameters
        ----------
        values:
            Parameter names to values, as given to ``Index.query(**params)``, in the HTTP
            ``params`` object or the CLI's ``--params`` JSON.
        mode:
            The mode they are for, named in error messages.

        Raises
        ------
        QueryError
            On an unknown name, a value of the wrong type, or a value out of range.
        """
        values = dict(values or {})
        allowed = cls.field_names()
        where = f"mode {mode!r}" if mode else cls.__name__
        unknown = sorted(set(values) - set(allowed))
        if unknown:
            listed = ", ".join(allowed) if allowed else "none"
            raise QueryError(
                f"unknown parameter(s) {unknown} for {where}; allowed parameters: {listed}"
            )
        hints = _type_hints(cls)
        kwargs = {name: _coerce(where, name, hints[name], v) for name, v in values.items()}
        for name, (lo, hi) in cls.bounds.items():
            range_check(where, name, kwargs.get(name), lo, hi)
        params = cls(**kwargs)
        params.check()
        return params

    def check(self) -> None:
        """Range checks of the subclass (raise ``QueryError``)."""

    def given(self) -> dict[str, Any]:
        """The parameters the caller set (not ``None``)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    def resolve(self, name: str, default: Any) -> Any:
        """The caller's value of ``name``, or ``default`` (the config's) when unset."""
        value = getattr(self, name)
        return default if value is None else value

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """JSON Schema of an object of these parameters (``additionalProperties: false``)."""
        hints = _type_hints(cls)
        docs = _field_docs(cls)
        props: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            schema = _type_schema(hints[f.name])
            if f.name in cls.bounds:
                lo, hi = cls.bounds[f.name]
                target = schema["anyOf"][0] if "anyOf" in schema else schema
                target["minimum"], target["maximum"] = lo, hi
            if f.name in docs:
                schema["description"] = docs[f.name]
            props[f.name] = schema
        return {
            "type": "object",
            "title": cls.__name__,
            "description": (cls.__doc__ or "").strip().split("\n\n")[0],
            "properties": props,
            "additionalProperties": False,
        }


@dataclasses.dataclass(frozen=True)
class NoParams(ModeParams):
    """Modes without parameters (``naive``, ``bm25``)."""


def range_check(where: str, name: str, value: float | None, lo: float, hi: float) -> None:
    """Raise ``QueryError`` unless ``value`` is None or within ``[lo, hi]``."""
    if value is not None and not lo <= value <= hi:
        raise QueryError(f"{where}: {name} must be in [{lo}, {hi}], got {value}")


def _non_none(tp: Any) -> Any:
    """``X | None`` -> ``X``."""
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _coerce(where: str, name: str, tp: Any, value: Any) -> Any:
    if value is None:
        return None
    base = _non_none(tp)
    if get_origin(base) is Literal:
        choices = get_args(base)
        if value not in choices or not isinstance(value, str):
            raise QueryError(f"{where}: {name} must be one of {list(choices)}, got {value!r}")
        return value
    if base is bool:
        if not isinstance(value, bool):
            raise QueryError(f"{where}: {name} must be true or false, got {value!r}")
        return value
    if base is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise QueryError(f"{where}: {name} must be an integer, got {value!r}")
        return int(value)
    if base is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise QueryError(f"{where}: {name} must be a number, got {value!r}")
        try:
            number = float(value)
        except OverflowError:  # an integer beyond the float range, e.g. 10**400
            raise QueryError(f"{where}: {name} is out of range, got {value!r}") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise QueryError(f"{where}: {name} must be a finite number, got {value!r}")
        return number
    raise TypeError(f"unsupported parameter type {tp!r} for {name}")  # a defect, not input


def _type_schema(tp: Any) -> dict[str, Any]:
    base = _non_none(tp)
    nullable = base is not tp
    if get_origin(base) is Literal:
        schema: dict[str, Any] = {"type": "string", "enum": list(get_args(base))}
    else:
        schema = {"type": {bool: "boolean", int: "integer", float: "number"}[base]}
    if nullable:
        schema = {"anyOf": [schema, {"type": "null"}]}
    return schema


def _field_docs(cls: type) -> dict[str, str]:
    """Descriptions from the ``Parameters`` sections (numpy style) of the class and its bases.

    A subclass that only narrows ``modes`` inherits its base's descriptions.
    """
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    out: dict[str, str] = {}
    for klass in cls.__mro__:
        current: str | None = None
        found: dict[str, str] = {}
        for line in (klass.__dict__.get("__doc__") or "").splitlines():
            stripped = line.strip()
            head = stripped.split(":", 1)[0].strip()
            if stripped.endswith(":") and head in names:
                current = head
                found[current] = ""
            elif current is not None and stripped:
                found[current] = (found[current] + " " + stripped).strip()
            elif not stripped:
                current = None
        for name, text in found.items():
            out.setdefault(name, text)
    return out
