"""The user cache directory of graphstrata (one owner for every derived file kept per user).

Exported embedding models (``bindings/embed/onnx.py``) and the parsed token ranks
(``engine/tokens.py``) are derived from packaged files and can be rebuilt at any time; they
live here, never inside an index.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable that chooses the directory.
CACHE_ENV = "GRAPHSTRATA_CACHE"


def user_cache_dir() -> Path:
    """The user cache directory of graphstrata.

    ``$GRAPHSTRATA_CACHE`` if set, else ``$XDG_CACHE_HOME/graphstrata``, else
    ``~/.cache/graphstrata``. Exported models go in its ``onnx/`` subdirectory, parsed token
    ranks in ``tiktoken/``.
    """
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "graphstrata"
