"""The ``hf`` backend: a causal LM in a local Hugging Face folder (or the local HF cache),
run by ``transformers`` on torch; nothing is downloaded. Generation: ``local.py``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphstrata.bindings.llm.local import LocalLLM, Weights, local_options
from graphstrata.engine import ConfigError

#: The form of this backend's spec (registered as ``hf`` in ``registry.LLM_BACKENDS``).
SPEC = "hf:PATH_OR_NAME[?threads=N&batch_size=8&timeout=600&dtype=bfloat16]"


def from_spec(body: str, options: Mapping[str, Any]) -> LocalLLM:
    """The backend of spec ``hf:BODY``.

    Raises
    ------
    ConfigError
        For a missing model, a missing extra, or an unknown or bad option.
    """
    if not body:
        raise ConfigError("the hf backend needs a model folder or cached name: hf:PATH_OR_NAME")
    return LocalLLM(Weights(body), f"hf:{body}", **local_options(options, "hf"))
