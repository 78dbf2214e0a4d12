"""The one line that names the extra to install when an optional dependency is missing.

Every optional dependency of the bindings (fastapi/uvicorn for ``serve``, Ray for ``--ray``,
vLLM for ``vllm:``, sentence-transformers for the torch embedders) is imported through
:func:`require`, so that its absence reads the same everywhere::

    graphstrata serve needs the server extra: pip install 'graphstrata[server]'

The command line prints a :class:`MissingExtraError` as that line alone (exit status 1, no
traceback); callers whose failures have their own type (an embedder's ``EmbedderError``, a
backend's ``ConfigError``) pass it as ``error`` and keep it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType


class MissingExtraError(RuntimeError):
    """An optional dependency is not installed; the message names the extra to install."""


def hint(what: str, extra: str) -> str:
    """The one line naming the extra: ``WHAT needs the EXTRA extra: pip install ...``.

    Parameters
    ----------
    what:
        What needs it, as the user named it (``"graphstrata serve"``, ``"--ray"``).
    extra:
        The extra of ``setup.cfg`` that installs it (``"server"``, ``"ray"``, ``"gpu"``,
        ``"torch"``).

    Returns
    -------
    str
        The line.
    """
    return f"{what} needs the {extra} extra: pip install 'graphstrata[{extra}]'"


def require(
    module: str,
    extra: str,
    what: str,
    error: type[Exception] = MissingExtraError,
) -> ModuleType:
    """Import ``module``, or fail with :func:`hint`'s line.

    Parameters
    ----------
    module:
        The module to import (``"fastapi"``, ``"ray.data"``).
    extra, what:
        As for :func:`hint`.
    error:
        The exception type raised (default :class:`MissingExtraError`); the import error is
        its cause.

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    Exception
        ``error(hint(what, extra))`` when the import fails.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise error(hint(what, extra)) from exc


def available(module: str) -> bool:
    """Whether ``import module`` can succeed, without importing it (vLLM takes seconds).

    A module set to ``None`` in ``sys.modules`` (how tests hide one) counts as absent.
    """
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
