"""Typed, validated parameters of the search modes, derived from the config sections.

A mode's parameters are the query fields (``setting(..., query=True)``, ``engine.fields``)
of the config sections it reads: ``params_from("HierarchyParams", HierarchyConfig,
FusionConfig)`` is the class of ``detailed`` and ``summarized``, whose fields are
``bias_share`` and the fusion fields. Each field is ``None`` (the index's configured value)
or the query's value; a view reads its section with the query's values in place
(:meth:`ModeParams.over`), typed, once per query. Parsing is strict, so a typo is an error
naming the allowed parameters rather than a silently ignored key:

* unknown names are refused;
* values are checked by ``engine.fields.checked`` against the field's declaration: the same
  types, ranges and choices as the config's own values, raised as ``QueryError``.

The HTTP schema of ``params`` is generated from these classes (``json_schema``), so the
documentation cannot drift from what the engine reads.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from graphstrata.engine.fields import Declared, checked, declared, value_schema

P = TypeVar("P", bound="ModeParams")
S = TypeVar("S")


class QueryError(ValueError):
    """A query is invalid: unknown mode, bad budget or top-k, bad mode parameters, no text.

    Always the caller's fault (HTTP 422, CLI exit 1); never raised for an engine defect.
    """


@dataclasses.dataclass(frozen=True)
class ModeParams:
    """Base of every mode's parameters (classes made by :func:`params_from`)."""

    #: The declaration of each field, by name, in field order.
    declared: ClassVar[dict[str, Declared]] = {}

    @classmethod
    def field_names(cls) -> list[str]:
        """The parameter names, in declaration order."""
        return list(cls.declared)

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
        kwargs = {}
        for name, value in values.items():
            if value is not None:  # None: the configured value, as when left out
                kwargs[name] = checked(f"{where}: {name}", value, cls.declared[name], QueryError)
        return cls(**kwargs)

    def given(self) -> dict[str, Any]:
        """The parameters the caller set (not ``None``)."""
        values = ((name, getattr(self, name)) for name in self.declared)
        return {k: v for k, v in values if v is not None}

    def over(self, section: S) -> S:
        """``section`` (a config section these parameters derive from) with the values the
        caller set in place of its own; ``section`` itself is not changed."""
        given = self.given()
        if not given:  # most queries: the section itself, nothing copied
            return section
        names = {f.name for f in dataclasses.fields(section)}  # type: ignore[arg-type]
        mine = {k: v for k, v in given.items() if k in names}
        return dataclasses.replace(section, **mine) if mine else section  # type: ignore[type-var]

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """JSON Schema of an object of these parameters (``additionalProperties: false``).

        Each property is nullable (null: the configured value) and carries the type, range
        and description of its declaration.
        """
        props: dict[str, Any] = {}
        for name, field in cls.declared.items():
            prop: dict[str, Any] = {"anyOf": [value_schema(field), {"type": "null"}]}
            if field.spec.doc:
                prop["description"] = field.spec.doc
            props[name] = prop
        return {
            "type": "object",
            "title": cls.__name__,
            "description": (cls.__doc__ or "").strip().split("\n\n")[0],
            "properties": props,
            "additionalProperties": False,
        }


def params_from(
    name: str, *sections: type, doc: str = "", module: str | None = None
) -> type[ModeParams]:
    """The parameters class of a mode reading ``sections``: their query fields, in order.

    Parameters
    ----------
    name:
        The class name (also the schema's title).
    sections:
        Dataclasses declaring fields with ``engine.fields.setting`` (config sections, or a
        mode's own query-only options); only their ``query=True`` fields become parameters.
        A parameters class made here may be one of them (its parameters, extended).
    doc:
        The class docstring (the schema's description).
    module:
        The module the class is named in (default: the caller's), so that it pickles.

    Raises
    ------
    TypeError
        When two sections declare a query field of the same name (a defect).
    """
    found: dict[str, Declared] = {}
    for section in sections:
        own = section.declared.values() if issubclass(section, ModeParams) else None
        for field in declared(section) if own is None else own:
            if not field.spec.query:
                continue
            if field.name in found:
                raise TypeError(f"{name}: {field.name!r} is declared by two sections")
            found[field.name] = field
    cls = dataclasses.make_dataclass(
        name,
        [(n, f.value_type | None, dataclasses.field(default=None)) for n, f in found.items()],
        bases=(ModeParams,),
        frozen=True,
        namespace={"declared": found, "__doc__": doc or f"Parameters of {name}."},
    )
    # Named in the caller's module (as ``collections.namedtuple`` does), so that the class
    # pickles and reprs like a hand-written one.
    cls.__module__ = module or sys._getframe(1).f_globals.get("__name__", __name__)
    return cls


#: Modes without parameters (``naive``, ``bm25``).
NoParams = params_from("NoParams", doc="Modes without parameters (``naive``, ``bm25``).")
