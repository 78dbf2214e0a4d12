"""Maintenance policies for tests that fold sooner or later than the defaults."""

from __future__ import annotations

import dataclasses
from typing import Any

from graphstrata.engine.policies import FoldPolicy, MaintenanceConfig


def maintenance(**changes: Any) -> MaintenanceConfig:
    """The default ``MaintenanceConfig`` with ``changes``: a policy field takes a dict of the
    ``FoldPolicy`` fields to change (``vector_fresh={"minimum": 12}``), any other field its
    value."""
    base = MaintenanceConfig()
    out = {}
    for name, value in changes.items():
        current = getattr(base, name)
        if isinstance(current, FoldPolicy) and isinstance(value, dict):
            value = dataclasses.replace(current, **value)
        out[name] = value
    return dataclasses.replace(base, **out)
