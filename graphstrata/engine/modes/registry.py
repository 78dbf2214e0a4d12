"""The registry of retrieval modes: which component serves each, with which parameters.

A mode is served by a ``Component`` (``engine.component``): its ``modes``, a
``ComponentView`` per version that searches them, and ``mode_params`` (each mode's
parameters class, ``engine.params.params_from`` over the config sections it reads). Adding
a mode is one new module defining them and one line in :data:`COMPONENTS`; the engine, the
HTTP schema, the CLI's ``--params`` and the error messages follow from the registry.
``naive`` is the engine's own mode (``engine.modes.naive``, no component, no parameters).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from graphstrata.engine.component import Component
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.params import ModeParams, NoParams

#: Components shipped with the engine, as ``"module:Class"``, each imported if its module is
#: present (an optional dependency may leave one out).
COMPONENTS: tuple[str, ...] = (
    "graphstrata.engine.hierarchy:HierarchyComponent",
    "graphstrata.engine.heterograph:HeterographComponent",
    "graphstrata.engine.modes.bm25:SparseComponent",
    "graphstrata.engine.modes.hybrid:HybridComponent",
)

#: The modes the engine serves itself, with their parameters.
ENGINE_MODES: dict[str, type[ModeParams]] = {"naive": NoParams}


def default_components(config: IndexConfig) -> list[Component]:
    """One instance of each registered component that ``config`` enables (missing ones
    skipped)."""
    comps: list[Component] = []
    for entry in COMPONENTS:
        module_name, class_name = entry.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        comp = getattr(module, class_name)()
        if comp.enabled(config):
            comps.append(comp)
    return comps


def served_params(components: Iterable[Component]) -> dict[str, type[ModeParams]]:
    """The parameters class of every mode served with ``components`` (the engine's own
    first).

    Raises
    ------
    TypeError
        When a component serves a mode without declaring its parameters, or a mode twice
        (a defect of the components).
    """
    out = dict(ENGINE_MODES)
    for comp in components:
        for mode in comp.modes:
            if mode in out:
                raise TypeError(f"mode {mode!r} of component {comp.name!r} is served twice")
            if mode not in comp.mode_params:
                raise TypeError(f"component {comp.name!r} declares no parameters for {mode!r}")
            out[mode] = comp.mode_params[mode]
    return out
