"""Declared settings: one declaration per setting, one check for config values and queries.

A config section (``engine.config``) declares a setting as a dataclass field made with
:func:`setting`: its default, its range or choices, its description and whether a query may
override it (``query=True``). Everything else is read from that declaration:

* ``IndexConfig.validate`` checks every declared field of every section (:func:`check_fields`,
  raising ``ConfigError``);
* each search mode's parameters are the query fields of the sections it reads
  (``engine.params.params_from``); a query's values go through the same :func:`checked`,
  raising ``QueryError``;
* the HTTP schema of ``params`` publishes the same types, ranges and descriptions
  (:func:`value_schema`).

Types are strict, for config values and queries alike: ``bool`` is never a number
(``True`` is not 1), a string never a number (``"5"`` is not 5), an ``int`` is a ``float``
(``1`` is ``1.0``), a float must be finite.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

#: The metadata key of a field's :class:`Spec`.
SPEC = "graphstrata.spec"

ErrorType = Callable[[str], Exception]


@dataclass(frozen=True)
class Spec:
    """What a setting accepts and what it means.

    Parameters
    ----------
    doc:
        One or two sentences for users (the HTTP schema's description of a query parameter).
    ge, le:
        Inclusive minimum and maximum of a number (None: unbounded).
    gt:
        Exclusive minimum of a number (None: none).
    choices:
        The strings a string setting may take (empty: any string).
    query:
        Whether a query may override the setting (a parameter of the modes reading it).
    """

    doc: str = ""
    ge: float | None = None
    le: float | None = None
    gt: float | None = None
    choices: tuple[str, ...] = ()
    query: bool = False


def setting(
    default: Any,
    *,
    doc: str = "",
    ge: float | None = None,
    le: float | None = None,
    gt: float | None = None,
    choices: tuple[str, ...] = (),
    query: bool = False,
) -> Any:
    """A dataclass field with its :class:`Spec` (arguments as there) and ``default``.

    Bounds are printed in error messages as written (``ge=0`` reads ``>= 0``, ``ge=0.0``
    ``>= 0.0``).
    """
    spec = Spec(doc=doc, ge=ge, le=le, gt=gt, choices=tuple(choices), query=query)
    return dataclasses.field(default=default, metadata={SPEC: spec})


@dataclass(frozen=True)
class Declared:
    """A declared field of a section: its name, value type (bool, int, float, str), spec."""

    name: str
    value_type: type
    spec: Spec
    default: Any
    #: The section (dataclass) declaring it.
    owner: type


_DECLARED: dict[type, tuple[Declared, ...]] = {}


def declared(section: type) -> tuple[Declared, ...]:
    """The fields of ``section`` (a dataclass class) made with :func:`setting`, in order.

    Raises
    ------
    TypeError
        When a declared field's type is not ``bool``, ``int``, ``float`` or ``str`` (a defect).
    """
    found = _DECLARED.get(section)
    if found is None:
        hints = typing.get_type_hints(section)
        out = []
        for f in dataclasses.fields(section):
            spec = f.metadata.get(SPEC)
            if spec is None:
                continue
            tp = hints[f.name]
            if tp not in (bool, int, float, str):
                raise TypeError(f"{section.__name__}.{f.name}: unsupported setting type {tp!r}")
            out.append(Declared(f.name, tp, spec, f.default, section))
        found = _DECLARED[section] = tuple(out)
    return found


def checked(label: str, value: Any, field: Declared, error: ErrorType) -> Any:
    """``value`` checked against ``field``'s type and spec, as that type.

    Parameters
    ----------
    label:
        How the messages name the setting (``"fusion.rrf_k"``, ``"mode 'graph': ppr_alpha"``).
    value:
        The value given.
    field:
        Its declaration.
    error:
        The exception type raised (``ConfigError`` for a config, ``QueryError`` for a query).

    Returns
    -------
    Any
        ``value``, an ``int`` given for a ``float`` as a float.
    """
    value = _typed(label, value, field, error)
    spec = field.spec
    if spec.choices and value not in spec.choices:
        raise error(f"{label} must be one of {list(spec.choices)}, got {value!r}")
    if field.value_type in (int, float):
        _check_range(label, value, spec, error)
    return value


def check_fields(section: Any, where: str, error: ErrorType) -> None:
    """Check every declared field of the config ``section`` (labelled ``where.name``)."""
    for field in declared(type(section)):
        checked(f"{where}.{field.name}", getattr(section, field.name), field, error)


def value_schema(field: Declared) -> dict[str, Any]:
    """JSON Schema of a value of ``field``: its type, choices and range."""
    if field.value_type is str:
        schema: dict[str, Any] = {"type": "string"}
        if field.spec.choices:
            schema["enum"] = list(field.spec.choices)
        return schema
    schema = {"type": {bool: "boolean", int: "integer", float: "number"}[field.value_type]}
    spec = field.spec
    for key, bound in (("minimum", spec.ge), ("exclusiveMinimum", spec.gt), ("maximum", spec.le)):
        if bound is not None and field.value_type is not bool:
            schema[key] = bound
    return schema


def _typed(label: str, value: Any, field: Declared, error: ErrorType) -> Any:
    tp = field.value_type
    if tp is str:
        if not isinstance(value, str):
            if field.spec.choices:
                raise error(f"{label} must be one of {list(field.spec.choices)}, got {value!r}")
            raise error(f"{label} must be a string, got {value!r}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise error(f"{label} must be true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise error(f"{label} must be an integer, got {value!r}")
        return int(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise error(f"{label} must be a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an integer beyond the float range, e.g. 10**400
        raise error(f"{label} is out of range, got {value!r}") from None
    if not math.isfinite(number):
        raise error(f"{label} must be a finite number, got {value!r}")
    return number


def _check_range(label: str, value: float, spec: Spec, error: ErrorType) -> None:
    lo, lo_open, hi = spec.ge, spec.gt, spec.le
    low_ok = (lo is None or value >= lo) and (lo_open is None or value > lo_open)
    if low_ok and (hi is None or value <= hi):
        return
    if hi is not None and (lo is not None or lo_open is not None):
        left = f"[{lo}" if lo is not None else f"({lo_open}"
        raise error(f"{label} must be in {left}, {hi}], got {value}")
    if hi is not None:
        raise error(f"{label} must be <= {hi}, got {value}")
    if lo is not None:
        raise error(f"{label} must be >= {lo}, got {value}")
    raise error(f"{label} must be > {lo_open}, got {value}")


class ConfigError(ValueError):
    """A configuration value is invalid or incompatible with the index."""


def from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Build a (nested) config dataclass from a dict, rejecting unknown keys with a clear error.

    A field whose annotation names a dataclass is built from its sub-dict the same way (the
    annotations are resolved in the module of ``cls``)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{cls.__name__}: expected a mapping, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = set(data) - names
    if unknown:
        raise ConfigError(f"{cls.__name__}: unknown option(s) {sorted(unknown)}")
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        sub = hints.get(name)
        nested = isinstance(sub, type) and dataclasses.is_dataclass(sub)
        kwargs[name] = from_dict(sub, value) if nested else value  # type: ignore[arg-type]
    return cls(**kwargs)
